// Weights prepared once (reordered for a oneDNN primitive, transformed for a Winograd kernel)
// and shared by every executable that prepares the same constant the same way: cached by a
// content key (sha256_of_constant + the layout), held weakly, so they live exactly as long as
// some executable, e.g. a cached segment of another length, uses them (docs/dynamic-shapes.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <typeinfo>

#include <oneapi/dnnl/dnnl.hpp>

namespace lockstep::cpu {

namespace detail {
// The one process-wide store: key (with the type's name) -> weakly held value.
std::shared_ptr<const void> shared_weights(const std::string& key,
                                           const std::function<std::shared_ptr<const void>()>& make);
}  // namespace detail

template <class T>
std::shared_ptr<const T> shared_weights(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
  return std::static_pointer_cast<const T>(
      detail::shared_weights(std::string(typeid(T).name()) + "|" + key, [&]() -> std::shared_ptr<const void> { return make(); }));
}

// oneDNN weights in the layout `desc` (a primitive's weights_desc), reordered once from the plain
// weights `plain` gives (called on a miss only; its memory may be temporary) and shared as above.
// `key` names the source weights and their plain layout; the desc is added to it. The memory
// returned is this executable's handle on the shared bytes, which it keeps alive.
struct SharedBytes;
struct SharedOnednnWeights {
  dnnl::memory memory;
  std::shared_ptr<const SharedBytes> bytes;
};
SharedOnednnWeights shared_onednn_weights(const std::string& key, const dnnl::memory::desc& desc,
                                          const dnnl::engine& engine, dnnl::stream& stream,
                                          const std::function<dnnl::memory()>& plain);

}  // namespace lockstep::cpu
