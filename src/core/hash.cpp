#include "core/hash.h"

#include <openssl/evp.h>

#include <mutex>
#include <unordered_map>

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

namespace {

struct RememberedConstant {
  std::weak_ptr<const std::byte[]> owner;  // expired: the address may hold other bytes now
  size_t size = 0;
  std::string sha256;  // computed on first use
};

struct ConstantMemo {
  std::mutex mutex;
  std::unordered_map<const void*, RememberedConstant> by_address;
  size_t purge_at = 1024;
};

ConstantMemo& constant_memo() {
  static ConstantMemo memo;
  return memo;
}

// Below this, hashing costs less than remembering.
constexpr size_t kRememberMinBytes = 4096;

}  // namespace

void remember_constant(const Tensor& tensor) {
  if (!tensor.defined() || tensor.nbytes() < kRememberMinBytes) return;
  ConstantMemo& memo = constant_memo();
  std::lock_guard<std::mutex> lock(memo.mutex);
  RememberedConstant& entry = memo.by_address[tensor.raw()];
  if (entry.owner.expired() || entry.size != tensor.nbytes()) entry = {tensor.storage_owner(), tensor.nbytes(), {}};
  if (memo.by_address.size() >= memo.purge_at) {  // forget storages that are gone
    for (auto it = memo.by_address.begin(); it != memo.by_address.end();)
      it = it->second.owner.expired() ? memo.by_address.erase(it) : std::next(it);
    memo.purge_at = std::max<size_t>(1024, memo.by_address.size() * 2);
  }
}

std::string sha256_of_constant(const void* data, size_t size) {
  ConstantMemo& memo = constant_memo();
  std::lock_guard<std::mutex> lock(memo.mutex);
  auto it = memo.by_address.find(data);
  if (it == memo.by_address.end() || it->second.size != size) return sha256_hex(data, size);
  RememberedConstant& entry = it->second;
  auto alive = entry.owner.lock();  // keeps the bytes in place while they are hashed
  if (!alive) return sha256_hex(data, size);
  if (entry.sha256.empty()) entry.sha256 = sha256_hex(data, size);
  return entry.sha256;
}

}  // namespace lockstep
