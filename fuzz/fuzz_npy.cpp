// libFuzzer target: bytes -> .npy parser and .npz (zip) parser. Any lockstep::Error is a correct
// refusal; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/npy.h"
#include "lockstep/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    lockstep::parse_npy(bytes, "fuzz.npy");
  } catch (const lockstep::Error&) {
  }
  try {
    lockstep::parse_npz(bytes, "fuzz.npz");
  } catch (const lockstep::Error&) {
  }
  return 0;
}
