// SHA-256 (OpenSSL), hex-encoded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lockstep/tensor.h"

namespace lockstep {

std::string sha256_hex(const void* data, size_t size);
inline std::string sha256_hex(std::string_view text) { return sha256_hex(text.data(), text.size()); }
// Hash of a tensor's raw bytes (dtype and shape are not included: it is the hash of the data).
std::string sha256_hex(const Tensor& tensor);

// Constants whose SHA-256 is remembered while their storage lives, keyed by address (a live
// storage's address holds no other bytes; constants are never written). The cpu executor
// remembers its constants, so the content-keyed weight caches hash each once, not every compile.
void remember_constant(const Tensor& tensor);
// SHA-256 of [data, data + size): remembered when `data` starts a remembered constant of that size.
std::string sha256_of_constant(const void* data, size_t size);

}  // namespace lockstep
