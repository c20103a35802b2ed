#version 450
// Element-wise ops over any element type (typed_ew in params.h): Cast, comparisons, And/Or/Xor/Not,
// Where, and the integer forms of Add/Sub/Mul/Div/Neg/Abs/Relu/Clip. Integers are computed in int64
// (an int32 result is the low word: the same wrap as the cpu's), floats compare in float32 (NaN:
// false), Where copies the chosen operand's words. Operands broadcast through their strides; the
// output is contiguous. The op and the four types are specialization constants.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint TA = 0u;
layout(constant_id = 2) const uint TB = 0u;
layout(constant_id = 3) const uint TC = 0u;
layout(constant_id = 4) const uint TO = 0u;

#include "typed.glsl"

bool compare(const uint op, bool lt, bool eq, bool gt) {
  if (op == TE_EQUAL) return eq;
  if (op == TE_LESS) return lt;
  if (op == TE_LESS_EQUAL) return lt || eq;
  if (op == TE_GREATER) return gt;
  return gt || eq;  // TE_GREATER_EQUAL
}

void main() {
  const uint n = param(TE_N), rank = param(TE_RANK), out_at = param(TE_OUT);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int ia = 0, ib = 0, ic = 0;
    for (int d = int(rank) - 1; d >= 0; --d) {
      int c = int(rest);
      if (d > 0) {
        const uint dim = param(TE_DIMS + d);
        c = int(rest % dim);
        rest /= dim;
      }
      ia += c * iparam(TE_IN + 1 + d);
      ib += c * iparam(TE_IN + TE_IN_WORDS + 1 + d);
      ic += c * iparam(TE_IN + 2 * TE_IN_WORDS + 1 + d);
    }
    const uint a = uint(iparam(TE_IN) + ia * int(width(TA)));
    const uint b = uint(iparam(TE_IN + TE_IN_WORDS) + ib * int(width(TB)));
    const uint cc = uint(iparam(TE_IN + 2 * TE_IN_WORDS) + ic * int(width(TC)));
    const uint o = out_at + i * width(TO);
    if (OP == TE_WHERE) {
      const bool pick = words[a] != 0u;
      for (uint w = 0u; w < width(TO); ++w) words[o + w] = pick ? words[b + w] : words[cc + w];
    } else if (OP == TE_CAST) {
      if (TA == TY_F32) store_f(o, load_f(TA, a));
      else store_i(o, load_i(TA, a));
    } else if (OP >= TE_EQUAL && OP <= TE_GREATER_EQUAL) {
      bool r;
      if (TA == TY_F32) {
        const float x = load_f(TA, a), y = load_f(TB, b);
        r = compare(OP, x < y, x == y, x > y);
      } else {
        const int64_t x = load_i(TA, a), y = load_i(TB, b);
        r = compare(OP, x < y, x == y, x > y);
      }
      words[o] = r ? 1u : 0u;
    } else if (OP >= TE_AND && OP <= TE_NOT) {
      const bool x = words[a] != 0u, y = OP == TE_NOT ? false : words[b] != 0u;
      bool r;
      if (OP == TE_AND) r = x && y;
      else if (OP == TE_OR) r = x || y;
      else if (OP == TE_XOR) r = x != y;
      else r = !x;
      words[o] = r ? 1u : 0u;
    } else if (OP == TE_CLIP) {
      int64_t x = load_i(TA, a);
      if (TB != TY_NONE) x = x < load_i(TB, b) ? load_i(TB, b) : x;  // min > max gives max, as the cpu
      if (TC != TY_NONE) x = x > load_i(TC, cc) ? load_i(TC, cc) : x;
      store_i(o, x);
    } else {
      const int64_t x = load_i(TA, a);
      const int64_t y = (OP >= TE_ADD && OP <= TE_DIV) ? load_i(TB, b) : 0L;
      int64_t r;
      if (OP == TE_ADD) r = x + y;
      else if (OP == TE_SUB) r = x - y;
      else if (OP == TE_MUL) r = x * y;
      else if (OP == TE_DIV) {
        if (y == 0L) atomicMin(words[param(TE_ERR)], i);  // reported after the run, as the cpu's error
        r = y == 0L ? 0L : x / y;
      }
      else if (OP == TE_NEG) r = -x;
      else if (OP == TE_ABS) r = (x ^ (x >> 63)) - (x >> 63);  // not x < 0 ? -x : x: llvmpipe (Mesa 22.3) gets 64-bit iabs wrong
      else r = x > 0L ? x : 0L;  // TE_RELU
      store_i(o, r);
    }
  }
}
