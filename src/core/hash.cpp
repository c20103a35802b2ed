#include "core/hash.h"

#include <openssl/evp.h>

namespace lockstep {

std::string sha256_hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr) != 1)
    throw Error(ErrorCode::Internal, "SHA-256 failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(const Tensor& tensor) { return sha256_hex(tensor.raw(), tensor.nbytes()); }

}  // namespace lockstep
