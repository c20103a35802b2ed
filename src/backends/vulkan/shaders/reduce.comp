#version 450
// ReduceSum/Mean/Max/Min: one invocation per output, the reduced positions visited in index
// order. Float sums are compensated (Neumaier: a running float32 sum and its exact error terms,
// every operation `precise`), so the result is within about an ulp of the exact sum whatever the
// count; Mean divides by the count with the corrected division. Max/Min propagate NaN. Integers
// accumulate in int64 (Mean truncates). Past RD_CHUNK positions the reduction is split in two
// passes (params.h): each chunk in index order, then the chunks in order. Spec constants: 0 the
// op, 1 the element type, 2 the pass (RD_WHOLE, RD_PARTIAL, RD_COMBINE).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "params.h"
#include "math.glsl"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint T = 0u;
layout(constant_id = 2) const uint MODE = RD_WHOLE;

const bool SUM = OP == RD_SUM || OP == RD_MEAN;

int64_t load_i(uint at) {
  if (T == TY_I64) return int64_t((uint64_t(words[at + 1u]) << 32) | uint64_t(words[at]));
  return int64_t(int(words[at]));
}

// The accumulator of one output (or one chunk); each operation on it is `precise` (in add_f).
float s, c;
float m;
int64_t si, mi;

void init() {
  s = 0.0;
  c = 0.0;
  m = OP == RD_MAX ? uintBitsToFloat(0xff800000u) : uintBitsToFloat(0x7f800000u);
  si = 0L;
  mi = OP == RD_MAX ? int64_t(0x8000000000000000UL) : int64_t(0x7fffffffffffffffUL);
  if (T == TY_I32) mi = OP == RD_MAX ? -2147483648L : 2147483647L;
}

void add_f(float x) {
  if (SUM) {
    precise float t = s + x;
    precise float e = abs(s) >= abs(x) ? (s - t) + x : (x - t) + s;
    precise float c2 = c + e;
    c = c2;
    s = t;
  } else if (OP == RD_MAX) {
    if (isnan(x) || x > m) m = isnan(m) ? m : x;
  } else {
    if (isnan(x) || x < m) m = isnan(m) ? m : x;
  }
}

void add_i(int64_t x) {
  if (SUM) si += x;
  else if (OP == RD_MAX) mi = max(mi, x);
  else mi = min(mi, x);
}

// Input word offset of output i's first reduced position.
int base_of(uint i) {
  uint rest = i;
  int base = iparam(RD_IN) / int(T == TY_I64 ? 2u : 1u);
  for (int d = int(param(RD_KRANK)) - 1; d >= 0; --d) {
    const uint dim = param(RD_KDIMS + d);
    base += int(rest % dim) * iparam(RD_KSTR + d);
    rest /= dim;
  }
  return base;
}

// Reduced positions [first, end) of the output at `base`, in index order.
void walk(int base, uint first, uint end) {
  const uint ew = T == TY_I64 ? 2u : 1u, rrank = param(RD_RRANK);
  for (uint r = first; r < end; ++r) {
    uint rr = r;
    int at = base;
    for (int d = int(rrank) - 1; d >= 0; --d) {
      const uint dim = param(RD_RDIMS + d);
      at += int(rr % dim) * iparam(RD_RSTR + d);
      rr /= dim;
    }
    const uint w = uint(at) * ew;
    if (T == TY_F32) add_f(uintBitsToFloat(words[w]));
    else add_i(load_i(w));
  }
}

void store_i64(uint at, int64_t v) {
  words[at] = uint(uint64_t(v) & 0xffffffffUL);
  words[at + 1u] = uint(uint64_t(v) >> 32);
}

void finish(uint i) {
  const uint count = param(RD_COUNT), o = param(RD_OUT) + i * (T == TY_I64 ? 2u : 1u);
  if (T == TY_F32) {
    float v;
    if (SUM) {
      precise float sum = (isinf(s) || isnan(s)) ? s : s + c;
      v = OP == RD_SUM ? sum : div_rn(sum, float(count));  // 0 / 0: NaN for an empty Mean
    } else {
      v = m;
    }
    words[o] = floatBitsToUint(v);
  } else {
    int64_t v = OP == RD_SUM ? si : OP == RD_MEAN ? (count == 0u ? 0L : si / int64_t(count)) : mi;
    if (T == TY_I64) store_i64(o, v);
    else words[o] = uint(uint64_t(v) & 0xffffffffUL);
  }
}

void main() {
  const uint n = param(RD_N), count = param(RD_COUNT), chunk = param(RD_CHUNK), chunks = param(RD_CHUNKS);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (MODE == RD_WHOLE) {
    for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
      init();
      walk(base_of(i), 0u, count);
      finish(i);
    }
  } else if (MODE == RD_PARTIAL) {  // one invocation per (output, chunk): 2 words each
    for (uint k = gl_GlobalInvocationID.x; k < n * chunks; k += total) {
      const uint i = k / chunks, j = k % chunks;
      init();
      walk(base_of(i), j * chunk, min(count, (j + 1u) * chunk));
      const uint at = param(RD_WS) + 2u * k;
      if (T == TY_F32) {
        const bool special = isinf(s) || isnan(s);
        words[at] = floatBitsToUint(SUM ? s : m);
        words[at + 1u] = floatBitsToUint(SUM && !special ? c : 0.0);
      } else {
        store_i64(at, SUM ? si : mi);
      }
    }
  } else {  // RD_COMBINE: an output's partials in chunk order
    for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
      init();
      for (uint j = 0u; j < chunks; ++j) {
        const uint at = param(RD_WS) + 2u * (i * chunks + j);
        if (T == TY_F32) {
          add_f(uintBitsToFloat(words[at]));
          if (SUM) add_f(uintBitsToFloat(words[at + 1u]));
        } else {
          add_i(int64_t((uint64_t(words[at + 1u]) << 32) | uint64_t(words[at])));
        }
      }
      finish(i);
    }
  }
}
