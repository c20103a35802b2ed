// Reading one index of an int32 (IW = 1) or int64 (IW = 2) index tensor for the indexing kernels:
// negative counts from the end; out of range is clamped into [0, dim) (never a read or write
// outside the data) and its position in the indices atomicMin'ed into the error word at err_at
// (an integer minimum: the same word whatever the order). Needs `words` and the constant IW.
#ifndef LOCKSTEP_VULKAN_INDEX_GLSL
#define LOCKSTEP_VULKAN_INDEX_GLSL

uint err_at;  // set by main from the kernel's XX_ERR parameter

int index_at(uint at, int dim, uint position) {
  int x;
  if (IW == 1u) {
    x = int(words[at]);
  } else {
    const int lo = int(words[at]), hi = int(words[at + 1u]);
    x = hi == (lo >> 31) ? lo : (hi < 0 ? -2147483647 : 2147483647);  // past int32: out of range
  }
  if (x < -dim || x >= dim) atomicMin(words[err_at], position);
  if (x < 0) x += dim;
  return clamp(x, 0, dim - 1);
}

#endif
