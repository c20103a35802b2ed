// The memory plan of a backend that works in place (the CUDA executor): dense channel views
// planned inside their inputs' bytes, and absorbed consumers written early (tests:
// tests/backends/in_place_plan_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/channel_views.h"
#include "ir/graph.h"

namespace lockstep::backends {

// A producer's launch that also computes some later nodes (cuda::Absorption): it writes `writes`
// at the producer's step and reads `reads` until the last absorbed node.
struct EarlyAccess {
  int producer = -1;
  std::vector<int> absorbed;        // node indices, each after the producer
  std::vector<ir::ValueId> writes;  // values the fused launch writes
  std::vector<ir::ValueId> reads;   // values it reads while it writes (made before the producer)
  std::vector<std::pair<ir::ValueId, ir::ValueId>> in_place;  // (write, read) pairs read and written element by element
};

// Plans graph.plan again with the accesses' live ranges and, when `views`, every dense view
// (planned_dense_views with the backend's `bytes` per ValueId) as an alias inside its input, which
// stays live until the view's last reader. An in-place pair whose read is dead once its absorbed
// node has run (no other reader after the producer, not the producer's input, no graph input or
// output, no view) is planned as one buffer: the write in the read's bytes. Values whose backend
// bytes differ from the plan's keep their own slots. Returns the aliased views; leaves the plan as
// it was and returns none when there is nothing to change. The new plan passes
// passes::check_memory_plan. Throws Error(LimitExceeded) past max_memory_bytes.
std::vector<DenseView> plan_in_place(ir::Graph& graph, const std::vector<size_t>& bytes, size_t align,
                                     const std::vector<EarlyAccess>& accesses, bool views, int64_t max_memory_bytes);

}  // namespace lockstep::backends
