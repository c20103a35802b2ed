#version 450
// ReduceSum/Mean/Max/Min: one invocation per output, the reduced positions visited in index
// order. Float sums are compensated (Neumaier: a running float32 sum and its exact error terms,
// every operation `precise`), so the result is within about an ulp of the exact sum whatever the
// count; Mean divides by the count with the corrected division. Max/Min propagate NaN. Integers
// accumulate in int64 (Mean truncates). Spec constants: 0 the op, 1 the element type.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "params.h"
#include "math.glsl"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint T = 0u;

int64_t load_i(uint at) {
  if (T == TY_I64) return int64_t((uint64_t(words[at + 1u]) << 32) | uint64_t(words[at]));
  return int64_t(int(words[at]));
}

void main() {
  const uint n = param(RD_N), krank = param(RD_KRANK), rrank = param(RD_RRANK), count = param(RD_COUNT);
  const uint ew = T == TY_I64 ? 2u : 1u;
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int base = iparam(RD_IN) / int(ew);
    for (int d = int(krank) - 1; d >= 0; --d) {
      const uint dim = param(RD_KDIMS + d);
      base += int(rest % dim) * iparam(RD_KSTR + d);
      rest /= dim;
    }
    precise float s = 0.0, c = 0.0;
    float m = OP == RD_MAX ? uintBitsToFloat(0xff800000u) : uintBitsToFloat(0x7f800000u);
    int64_t si = 0L;
    int64_t mi = OP == RD_MAX ? int64_t(0x8000000000000000UL) : int64_t(0x7fffffffffffffffUL);
    if (T == TY_I32) mi = OP == RD_MAX ? -2147483648L : 2147483647L;
    for (uint r = 0u; r < count; ++r) {
      uint rr = r;
      int at = base;
      for (int d = int(rrank) - 1; d >= 0; --d) {
        const uint dim = param(RD_RDIMS + d);
        at += int(rr % dim) * iparam(RD_RSTR + d);
        rr /= dim;
      }
      const uint w = uint(at) * ew;
      if (T == TY_F32) {
        const float x = uintBitsToFloat(words[w]);
        if (OP == RD_SUM || OP == RD_MEAN) {
          precise float t = s + x;
          if (abs(s) >= abs(x)) c += (s - t) + x;
          else c += (x - t) + s;
          s = t;
        } else if (OP == RD_MAX) {
          if (isnan(x) || x > m) m = isnan(m) ? m : x;
        } else {
          if (isnan(x) || x < m) m = isnan(m) ? m : x;
        }
      } else {
        const int64_t x = load_i(w);
        if (OP == RD_SUM || OP == RD_MEAN) si += x;
        else if (OP == RD_MAX) mi = max(mi, x);
        else mi = min(mi, x);
      }
    }
    const uint o = param(RD_OUT) + i * ew;
    if (T == TY_F32) {
      float v;
      if (OP == RD_SUM || OP == RD_MEAN) {
        precise float sum = (isinf(s) || isnan(s)) ? s : s + c;
        v = OP == RD_SUM ? sum : div_rn(sum, float(count));  // 0 / 0: NaN for an empty Mean
      } else {
        v = m;
      }
      words[o] = floatBitsToUint(v);
    } else {
      int64_t v = OP == RD_SUM ? si : OP == RD_MEAN ? (count == 0u ? 0L : si / int64_t(count)) : mi;
      words[o] = uint(uint64_t(v) & 0xffffffffUL);
      if (T == TY_I64) words[o + 1u] = uint(uint64_t(v) >> 32);
    }
  }
}
