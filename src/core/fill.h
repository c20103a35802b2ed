// Fills a buffer with one element's bytes repeated: the element once, then the filled part copied
// onto the rest, doubling (log2 of the count memcpy calls). ConstantOfShape's fold and cpu kernel.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace lockstep {

inline void fill_repeating(std::byte* dst, size_t bytes, const void* element, size_t element_size) {
  if (bytes == 0) return;
  std::memcpy(dst, element, std::min(element_size, bytes));
  for (size_t done = element_size; done < bytes; done *= 2) std::memcpy(dst + done, dst, std::min(done, bytes - done));
}

}  // namespace lockstep
