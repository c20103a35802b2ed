#version 450
// An element-wise program: acc = src; then per step acc = op(acc) or op(acc, operand) (or
// op(operand, acc)), every operand read with numpy broadcasting through its strides; the output is
// contiguous. A node's own op is its first step; a Conv's epilogue runs in place (src = output).
// Layout: params.h.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "math.glsl"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { float arena[]; };

float unary(uint code, float x, float alpha) {
  precise float r;
  switch (code) {
    case EW_TANH: r = tanh_f(x); break;
    case EW_SIGMOID: r = sigmoid_f(x); break;
    case EW_RELU: r = x > 0.0 ? x : (isnan(x) ? x : 0.0); break;
    case EW_LEAKY_RELU: r = x < 0.0 ? alpha * x : x; break;
    case EW_EXP: r = exp_f(x); break;
    case EW_NEG: r = -x; break;
    case EW_SQRT: r = sqrt_rn(x); break;
    case EW_ABS: r = abs(x); break;
    case EW_RECIPROCAL: r = div_rn(1.0, x); break;
    case EW_FLOOR: r = floor(x); break;
    case EW_CEIL: r = ceil(x); break;
    default: r = x; break;  // EW_IDENTITY
  }
  return r;
}

float binary(uint code, float x, float y) {
  precise float r;
  switch (code) {
    case EW_ADD: r = x + y; break;
    case EW_SUB: r = x - y; break;
    case EW_MUL: r = x * y; break;
    default: r = div_rn(x, y); break;  // EW_DIV
  }
  return r;
}

void main() {
  const uint n = param(EW_N);
  const uint rank = param(EW_RANK);
  const uint nsteps = min(param(EW_NSTEPS), uint(EW_MAX_STEPS));
  const uint out_at = param(EW_OUT);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int src = iparam(EW_SRC);
    int at[EW_MAX_STEPS];
    for (uint s = 0; s < nsteps; ++s) at[s] = iparam(EW_STEPS + s * EW_STEP_WORDS + 3);
    for (int d = int(rank) - 1; d >= 0; --d) {
      const uint dim = param(EW_DIMS + d);
      const int c = int(rest % dim);
      rest /= dim;
      src += c * iparam(EW_SRC + 1 + d);
      for (uint s = 0; s < nsteps; ++s) at[s] += c * iparam(EW_STEPS + s * EW_STEP_WORDS + 4 + d);
    }
    precise float acc = arena[src];
    for (uint s = 0; s < nsteps; ++s) {
      const uint w = EW_STEPS + s * EW_STEP_WORDS;
      const uint code = param(w), flags = param(w + 1);
      if ((flags & 1u) == 0u) {
        acc = unary(code, acc, uintBitsToFloat(param(w + 2)));
      } else {
        const float operand = arena[at[s]];
        acc = (flags & 2u) != 0u ? binary(code, operand, acc) : binary(code, acc, operand);
      }
    }
    arena[out_at + i] = acc;
  }
}
