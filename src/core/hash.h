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

}  // namespace lockstep
