#version 450
// Softmax along one axis: each invocation owns one row (elements `inner` apart): its max, the sum
// of e^(x - max) in order from zero (Kahan-compensated), then each e^(x - max) / sum (math.glsl's exp and division).
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "math.glsl"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { float arena[]; };

void main() {
  const uint rows = param(SM_ROWS);
  const int dim = iparam(SM_DIM), inner = iparam(SM_INNER);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint row = gl_GlobalInvocationID.x; row < rows; row += total) {
    const int o = int(row) / inner, in_ = int(row) % inner;
    const int x = iparam(SM_X) + o * dim * inner + in_, y = iparam(SM_Y) + o * dim * inner + in_;
    float mx = uintBitsToFloat(0xff800000u);  // -inf
    for (int i = 0; i < dim; ++i) {
      const float v = arena[x + i * inner];
      mx = (v > mx || isnan(v)) ? v : mx;
    }
    precise float sum = 0.0, comp = 0.0;  // Kahan-compensated, in order
    for (int i = 0; i < dim; ++i) {
      precise float e = exp_f(arena[x + i * inner] - mx) - comp;
      precise float t = sum + e;
      comp = (t - sum) - e;
      sum = t;
    }
    for (int i = 0; i < dim; ++i) arena[y + i * inner] = div_rn(exp_f(arena[x + i * inner] - mx), sum);
  }
}
