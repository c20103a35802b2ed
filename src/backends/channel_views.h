// Channel-slice views, the backend-neutral part: which Slice nodes are channel slices, and the
// rules that make addressing a Slice's value inside its input's bytes safe (cpu/views.h uses the
// rules for its strided and dense views; the CUDA executor takes dense NCW views with them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace lockstep::backends {

struct ChannelRange {
  int64_t c0 = 0, len = 0;
};

// The channels [c0, c0 + len) of a rank-3 Slice along axis 1 with step 1 and constant
// parameters that keeps dims 0 and 2 whole; nullopt for any other node.
std::optional<ChannelRange> channel_slice(const ir::Graph& graph, const ir::Node& slice);

// The channel range of each output of a rank-3 Split along axis 1 that keeps dims 0 and 2 whole;
// empty for any other node (and for a Split with an omitted output).
std::vector<ChannelRange> channel_split(const ir::Graph& graph, const ir::Node& split);

// Per ValueId: the indices of the nodes reading it (inputs and epilogue operands), ascending.
std::vector<std::vector<size_t>> value_readers(const ir::Graph& graph);

struct ByteSpan {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  bool overlaps(const ByteSpan& o) const { return begin < o.end && o.begin < end; }
};

// Whether an output of a node in (slice, last] writes over `input` (laid-out bytes from `span`):
// then the bytes a view addresses would change before its last reader ran.
bool overwritten_between(const ir::Graph& graph, size_t slice, size_t last, const ByteSpan& input,
                         const std::function<ByteSpan(ir::ValueId)>& span);

struct ViewCandidate {
  size_t slice = 0;  // node index of the Slice (or Split)
  ChannelRange range;
  int output = 0;    // which output (a Split's)
};

// A fault planted on a view is written into its input's bytes: the view is "alone" when its
// input is no graph output and every reader of the input is a candidate Slice of a disjoint
// channel range (or the view's own Slice), so only the view's readers can see the fault.
bool alone(const ir::Graph& graph, const ViewCandidate& view, const std::vector<ViewCandidate>& candidates,
           const std::vector<std::vector<size_t>>& readers, const std::vector<char>& is_output);

// A dense view: `view` (a Slice output, or output `output` of a Split) lives at `byte_offset`
// bytes into `input`'s buffer.
struct DenseView {
  size_t slice = 0;
  ir::ValueId view = ir::kNoValue, input = ir::kNoValue;
  int64_t byte_offset = 0;
  int output = 0;
};

// Dense NCW views over laid-out buffers (`ptr`/`bytes` per ValueId; null for values without one):
// float channel slices (Slice outputs, and Split outputs) of a batch-1 non-constant input, not
// graph outputs, read by some node, at a byte offset that is a multiple of `align`. Being dense, a
// view needs only its own bytes kept (overwritten_between on that sub-range), and it is alone when
// every reader of its input is a channel Slice or Split of ranges disjoint from the view's, viewed
// or copied. A Slice or Split of a view copies. In node order.
std::vector<DenseView> choose_dense_views(const ir::Graph& graph, const std::vector<const std::byte*>& ptr,
                                          const std::vector<size_t>& bytes, size_t align);

// The same views by the shape rules alone, before any layout (`bytes` per ValueId): what
// choose_dense_views takes once a memory plan keeps each view's input live until the view's last
// reader, with the view inside it (passes::Alias).
std::vector<DenseView> planned_dense_views(const ir::Graph& graph, const std::vector<size_t>& bytes, size_t align);

}  // namespace lockstep::backends
