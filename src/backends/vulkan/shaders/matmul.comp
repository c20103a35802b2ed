#version 450
// MatMul and Gemm: one output per invocation; the dot product runs over k in order from zero,
// each rounded product added into a Kahan-compensated sum (the rounding of the sum no longer grows
// with k), then alpha, then + beta * C (Gemm). No atomics, no split reductions.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { float arena[]; };

void main() {
  const int m_n = iparam(MM_M), n_n = iparam(MM_N), k_n = iparam(MM_K);
  const int j = int(gl_GlobalInvocationID.x), i = int(gl_WorkGroupID.y), b = int(gl_WorkGroupID.z);
  if (j >= n_n) return;
  int a_at = iparam(MM_A), b_at = iparam(MM_B), rest = b;
  for (int d = iparam(MM_BRANK) - 1; d >= 0; --d) {
    const int dim = iparam(MM_BDIMS + d), c = rest % dim;
    rest /= dim;
    a_at += c * iparam(MM_ABSTR + d);
    b_at += c * iparam(MM_BBSTR + d);
  }
  const int am = iparam(MM_A + 1), ak = iparam(MM_A + 2), bk = iparam(MM_B + 1), bn = iparam(MM_B + 2);
  a_at += i * am;
  b_at += j * bn;
  precise float acc = 0.0, comp = 0.0;  // Kahan: each rounded product into a compensated sum
  for (int k = 0; k < k_n; ++k) {
    precise float y = arena[a_at + k * ak] * arena[b_at + k * bk] - comp;
    precise float t = acc + y;
    comp = (t - acc) - y;
    acc = t;
  }
  precise float y = uintBitsToFloat(param(MM_ALPHA)) * acc;
  const uint c_at = param(MM_C);
  if (c_at != CV_NO_BIAS) y = y + uintBitsToFloat(param(MM_BETA)) * arena[int(c_at) + i * iparam(MM_C + 1) + j * iparam(MM_C + 2)];
  arena[iparam(MM_Y) + (b * m_n + i) * n_n + j] = y;
}
