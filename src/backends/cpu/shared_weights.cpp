#include "backends/cpu/shared_weights.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "core/hash.h"
#include "lockstep/error.h"

namespace lockstep::cpu {

// 64-byte aligned bytes that oneDNN reads weights from, with the desc they are laid out by.
struct SharedBytes {
  std::byte* data = nullptr;
  dnnl::memory::desc desc;
  explicit SharedBytes(const dnnl::memory::desc& d) : desc(d) {
    const size_t size = (d.get_size() + 63) / 64 * 64;
    data = static_cast<std::byte*>(std::aligned_alloc(64, size == 0 ? 64 : size));
    if (!data) throw Error(ErrorCode::OutOfMemory, "cpu: cannot allocate " + std::to_string(size) + " bytes of weights");
  }
  ~SharedBytes() { std::free(data); }
  SharedBytes(const SharedBytes&) = delete;
  SharedBytes& operator=(const SharedBytes&) = delete;
};

SharedOnednnWeights shared_onednn_weights(const std::string& key, const dnnl::memory::desc& desc,
                                          const dnnl::engine& engine, dnnl::stream& stream,
                                          const std::function<dnnl::memory()>& plain) {
  // The desc's bytes name the layout (padding bytes that differ only cost a miss); a hit whose
  // desc is not equal is not used.
  const std::string full = key + "|" + sha256_hex(&desc.data, sizeof desc.data);
  auto prepare = [&] {
    auto made = std::make_shared<SharedBytes>(desc);
    dnnl::memory src = plain();
    dnnl::memory dst(desc, engine, made->data);
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
    return made;
  };
  std::shared_ptr<const SharedBytes> bytes = shared_weights<SharedBytes>(full, prepare);
  if (!(bytes->desc == desc)) bytes = prepare();  // same key, another layout: a private copy
  return {dnnl::memory(desc, engine, bytes->data), bytes};
}

}  // namespace lockstep::cpu

namespace lockstep::cpu::detail {

std::shared_ptr<const void> shared_weights(const std::string& key,
                                           const std::function<std::shared_ptr<const void>()>& make) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<const void>> alive;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = alive.find(key); it != alive.end())
    if (auto p = it->second.lock()) return p;
  if (alive.size() > 4096)  // drop expired keys now and then
    for (auto it = alive.begin(); it != alive.end();) it = it->second.expired() ? alive.erase(it) : std::next(it);
  std::shared_ptr<const void> made = make();
  alive[key] = made;
  return made;
}

}  // namespace lockstep::cpu::detail
