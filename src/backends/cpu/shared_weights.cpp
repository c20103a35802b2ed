#include "backends/cpu/shared_weights.h"

#include <cstdlib>

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
  std::shared_ptr<const SharedBytes> bytes = shared_by_key<SharedBytes>(full, prepare);
  if (!(bytes->desc == desc)) bytes = prepare();  // same key, another layout: a private copy
  return {dnnl::memory(desc, engine, bytes->data), bytes};
}

}  // namespace lockstep::cpu
