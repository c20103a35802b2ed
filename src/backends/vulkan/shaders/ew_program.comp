#version 450
// An element-wise program: acc = src; then per step acc = op(acc) or op(acc, operand) (or
// op(operand, acc)), every operand read with numpy broadcasting through its strides; the output is
// contiguous. A node's own op is its first step; a Conv's epilogue runs in place (src = output).
// Layout: params.h; the steps' codes are specialization constants, their operands parameters.
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
    case EW_ERF: r = erf_f(x); break;
    case EW_SOFTPLUS: r = softplus_f(x); break;
    default: r = x; break;  // EW_IDENTITY
  }
  return r;
}

// x^y for the exponents elementwise.cpp admits: 0.5 (the corrected sqrt) and integers |y| <= 64
// by repeated squaring (x^2 exact to one rounding; at most 12 roundings), 1 / x^|y| for y < 0.
float pow_f(float x, float y) {
  if (y == 0.5) return sqrt_rn(x);
  int n = int(abs(y));
  precise float r = 1.0, b = x;
  while (n > 0) {
    if ((n & 1) != 0) r = r * b;
    n >>= 1;
    if (n > 0) b = b * b;
  }
  return y < 0.0 ? div_rn(1.0, r) : r;
}

float binary(uint code, float x, float y) {
  precise float r;
  switch (code) {
    case EW_ADD: r = x + y; break;
    case EW_SUB: r = x - y; break;
    case EW_MUL: r = x * y; break;
    case EW_CLIP_LO: r = x < y ? y : x; break;
    case EW_CLIP_HI: r = x > y ? y : x; break;
    case EW_POW: r = pow_f(x, y); break;
    default: r = div_rn(x, y); break;  // EW_DIV
  }
  return r;
}

// Each step's code | EW_HAS_OPERAND | EW_OPERAND_LHS, 0 for none: specialization constants, so a
// pipeline holds only its own steps' math (a switch on a run-time code made llvmpipe evaluate every
// case, masked, for every element).
layout(constant_id = 0) const uint S0 = 0u;
layout(constant_id = 1) const uint S1 = 0u;
layout(constant_id = 2) const uint S2 = 0u;
layout(constant_id = 3) const uint S3 = 0u;
layout(constant_id = 4) const uint S4 = 0u;
layout(constant_id = 5) const uint S5 = 0u;
layout(constant_id = 6) const uint S6 = 0u;
layout(constant_id = 7) const uint S7 = 0u;

int coord[EW_MAX_RANK];
uint rank;

float apply(const uint S, const uint k, float acc) {
  const uint w = EW_STEPS + k * EW_STEP_WORDS;
  if ((S & EW_HAS_OPERAND) == 0u) return unary(S & 255u, acc, uintBitsToFloat(param(w + 2)));
  int at = iparam(w + 3);
  for (uint d = 0; d < rank; ++d) at += coord[d] * iparam(w + 4 + d);
  const float operand = arena[at];
  return (S & EW_OPERAND_LHS) != 0u ? binary(S & 255u, operand, acc) : binary(S & 255u, acc, operand);
}

void main() {
  const uint n = param(EW_N);
  rank = param(EW_RANK);
  const uint out_at = param(EW_OUT);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int src = iparam(EW_SRC);
    for (int d = int(rank) - 1; d >= 0; --d) {
      int c = int(rest);
      if (d > 0) {  // no division for the outermost dim (rank 1: none at all)
        const uint dim = param(EW_DIMS + d);
        c = int(rest % dim);
        rest /= dim;
      }
      coord[d] = c;
      src += c * iparam(EW_SRC + 1 + d);
    }
    precise float acc = arena[src];
    if (S0 != 0u) acc = apply(S0, 0u, acc);
    if (S1 != 0u) acc = apply(S1, 1u, acc);
    if (S2 != 0u) acc = apply(S2, 2u, acc);
    if (S3 != 0u) acc = apply(S3, 3u, acc);
    if (S4 != 0u) acc = apply(S4, 4u, acc);
    if (S5 != 0u) acc = apply(S5, 5u, acc);
    if (S6 != 0u) acc = apply(S6, 6u, acc);
    if (S7 != 0u) acc = apply(S7, 7u, acc);
    arena[out_at + i] = acc;
  }
}
