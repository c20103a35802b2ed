// Weights prepared once (reordered for a oneDNN primitive, transformed for a Winograd kernel)
// and shared by every executable that prepares the same constant the same way, through
// core/shared_by_key.h: keyed by content (sha256_of_constant + the layout), held weakly.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/shared_by_key.h"

namespace lockstep::cpu {

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
