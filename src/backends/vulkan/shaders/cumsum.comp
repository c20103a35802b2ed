#version 450
// CumSum: one invocation per lane walks the axis in order (reversed for `reverse`), writing the
// running sum before (exclusive) or after (inclusive) adding each element. Float sums are
// compensated as in reduce.comp (each output the rounded sum of the running sum and its error);
// integers in int64. Spec constant 0: the element type.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

layout(constant_id = 0) const uint T = 0u;

void main() {
  const uint lanes = param(CS_LANES), dim = param(CS_DIM), inner = param(CS_INNER);
  const bool exclusive = param(CS_EXCLUSIVE) != 0u, reverse = param(CS_REVERSE) != 0u;
  const uint ew = T == TY_I64 ? 2u : 1u;
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint lane = gl_GlobalInvocationID.x; lane < lanes; lane += total) {
    const uint first = (lane / inner) * dim * inner + lane % inner;
    precise float s = 0.0, c = 0.0;
    int64_t si = 0L;
    for (uint k = 0u; k < dim; ++k) {
      const uint e = first + (reverse ? dim - 1u - k : k) * inner;
      const uint src = param(CS_IN) + e * ew, dst = param(CS_OUT) + e * ew;
      if (T == TY_F32) {
        const float x = uintBitsToFloat(words[src]);
        precise float before = (isinf(s) || isnan(s)) ? s : s + c;
        precise float t = s + x;
        if (abs(s) >= abs(x)) c += (s - t) + x;
        else c += (x - t) + s;
        s = t;
        precise float after = (isinf(s) || isnan(s)) ? s : s + c;
        words[dst] = floatBitsToUint(exclusive ? before : after);
      } else {
        const int64_t x = T == TY_I64 ? int64_t((uint64_t(words[src + 1u]) << 32) | uint64_t(words[src])) : int64_t(int(words[src]));
        const int64_t v = exclusive ? si : si + x;
        si += x;
        words[dst] = uint(uint64_t(v) & 0xffffffffUL);
        if (T == TY_I64) words[dst + 1u] = uint(uint64_t(v) >> 32);
      }
    }
  }
}
