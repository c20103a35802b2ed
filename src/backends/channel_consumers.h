// Channel consumers a producer can compute in its own store, the backend-neutral part: which
// element-wise readers of a producer's channel Slices could run inside the producer's kernel
// (the WaveNet layers' residual and skip Adds after the res/skip conv, the gate after the
// in-layer conv). The backend decides with its memory layout whether it may (cuda/executor).
#pragma once

#include <optional>
#include <vector>

#include "backends/channel_views.h"
#include "ir/graph.h"

namespace lockstep::backends {

// What the searches below read of the whole graph, made once per graph: a backend asks at every
// conv of a segment, and remaking it each time (a vector per value) cost ~0.1 ms a conv.
struct ChannelFacts {
  std::vector<std::vector<size_t>> readers;  // value_readers: one entry per read
  std::vector<char> is_output;
  std::vector<int> made_by;
  explicit ChannelFacts(const ir::Graph& graph);
  // Exactly one read of v, by one node: its index, else -1.
  int sole_reader(ir::ValueId v) const;
  // A float value ready before node `producer` runs: a graph input, a constant, or made earlier.
  bool ready_before(const ir::Graph& graph, ir::ValueId v, int producer) const;
};

// One channel Slice of the producer's output. With consumer >= 0 the Slice's value has that one
// element-wise reader, which computes out = steps applied to the slice's values (its own op
// first, then its epilogue; operands made before the producer runs, each broadcasting to the
// slice's shape). With consumer -1 the range stays in the producer's output for the Slice.
struct ChannelSegment {
  int slice = -1;
  ChannelRange range;
  int consumer = -1;
  std::vector<ir::EpilogueStep> steps;
  ir::ValueId out = ir::kNoValue;
};

// The producer's output split by its readers, every one a channel Slice of a disjoint range, in
// channel order; nullopt when some reader is not, when the output or a slice is a graph output,
// when the producer has an epilogue, or when no segment has an absorbable consumer.
std::optional<std::vector<ChannelSegment>> absorbable_segments(const ir::Graph& graph, const ChannelFacts& facts, int producer);

// The WaveNet gate on the producer's output a: out = U_a(a[:, A]) * U_b(a[:, B]) for two channel
// Slices of equal length and unary nodes U_a, U_b, where U_b's epilogue is the Mul by U_a's value
// (fuse_epilogues' form) and nothing else reads a, the slices or U_a's value.
struct GatePattern {
  int slice_a = -1, slice_b = -1, unary_a = -1, unary_b = -1;  // node indices
  ChannelRange a, b;
  bool a_is_lhs = false;  // the Mul step reads U_a's value as its left operand
  ir::ValueId out = ir::kNoValue;  // U_b's output: the gate
};
std::optional<GatePattern> gate_pattern(const ir::Graph& graph, const ChannelFacts& facts, int producer);

}  // namespace lockstep::backends
