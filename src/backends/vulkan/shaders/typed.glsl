// Loads and stores of the typed kernels (typed_ew.comp, pow.comp): any element type (TY_* of
// params.h: float32, int32, int64 as two words, bool as a 0/1 word) at a word offset; integers as
// int64. Needs `words` and the output type's specialization constant TO declared first.
#ifndef LOCKSTEP_VULKAN_TYPED_GLSL
#define LOCKSTEP_VULKAN_TYPED_GLSL

uint width(const uint t) { return t == TY_I64 ? 2u : 1u; }

int64_t load_i(const uint t, uint at) {
  if (t == TY_I64) return int64_t((uint64_t(words[at + 1u]) << 32) | uint64_t(words[at]));
  if (t == TY_F32) return int64_t(uintBitsToFloat(words[at]));  // truncation, as the cpu's cast
  return int64_t(int(words[at]));  // int32, bool (0/1)
}

float load_f(const uint t, uint at) {
  if (t == TY_F32) return uintBitsToFloat(words[at]);
  if (t == TY_I64) return float(load_i(t, at));  // correctly rounded
  return float(int(words[at]));
}

void store_i(uint at, int64_t v) {
  if (TO == TY_F32) {
    words[at] = floatBitsToUint(float(v));
  } else if (TO == TY_I64) {
    words[at] = uint(uint64_t(v) & 0xffffffffUL);
    words[at + 1u] = uint(uint64_t(v) >> 32);
  } else if (TO == TY_BOOL) {
    words[at] = v != 0L ? 1u : 0u;
  } else {
    words[at] = uint(uint64_t(v) & 0xffffffffUL);  // int32: the low word
  }
}

void store_f(uint at, float v) {
  if (TO == TY_F32) words[at] = floatBitsToUint(v);
  else if (TO == TY_BOOL) words[at] = (v == 0.0) ? 0u : 1u;  // NaN is true
  else store_i(at, int64_t(v));
}

#endif
