// What the Vulkan families record for a node: dispatches of embedded shaders, each with its
// parameter words in the Executable's params buffer. Recorded once the arena is laid out (the
// parameters hold the values' arena offsets), replayed by every run's command buffer.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace lockstep::vulkan {

inline constexpr int kMaxRank = 6;  // of any tensor a vulkan kernel reads or writes
inline constexpr size_t kMaxSpec = 8;  // specialization constants per dispatch
// The longest serial loop one invocation may run: llvmpipe (lavapipe) ends a shader's loops after
// 65535 iterations of their headers in all (gallivm's loop limit; an inner loop's count adds to
// the outer one), silently. Kernels that walk a reduction serially refuse past this.
inline constexpr int64_t kMaxSerialLoop = 16384;
// How many times one invocation goes round a grid-stride loop over n items, `local` per workgroup
// (at most 65535 workgroups): a serial walk inside it runs that many times.
inline int64_t grid_passes(int64_t n, int64_t local) { return std::max<int64_t>(1, (n + 65535 * local - 1) / (65535 * local)); }

struct Dispatch {
  std::string shader;  // embedded shader name (shaders/<shader>.comp)
  // Specialization constants 0.. (conv: the tile; ew_program: each step's code and flags).
  std::array<int32_t, kMaxSpec> spec{};
  uint32_t base = 0;   // the first parameter word (push constant)
  uint32_t groups[3] = {1, 1, 1};
};

struct NodeProgram {
  int node = -1;
  std::vector<Dispatch> dispatches;
};

class Context {
 public:
  Context(const ir::Graph& graph, std::vector<int64_t> byte_offsets) : graph_(graph), offsets_(std::move(byte_offsets)) {}
  const ir::Graph& graph() const { return graph_; }
  // The value's offset in the arena in 32-bit words; Internal when the value has no slot.
  uint32_t at(ir::ValueId v) const;
  // Appends a dispatch's parameter words; returns the first word's index.
  uint32_t add_params(const std::vector<uint32_t>& words);
  const std::vector<uint32_t>& params() const { return params_; }
  // A random node's Philox key (2 words, written by every run) in arena words.
  void set_key_slot(int node, uint32_t word) { keys_.emplace_back(node, word); }
  uint32_t key_slot(int node) const;
  // A checking node's error word (arena words): the first bad element's position, or ~0.
  void set_error_slot(int node, uint32_t word) { errors_.emplace_back(node, word); }
  uint32_t error_slot(int node) const;
  // A node's workspace (workspace_bytes) in arena words.
  void set_workspace(int node, uint32_t word) { workspaces_.emplace_back(node, word); }
  uint32_t workspace(int node) const;
  void set_features(bool int64, bool float64) { int64_ = int64, float64_ = float64; }
  bool int64() const { return int64_; }

 private:
  const ir::Graph& graph_;
  std::vector<int64_t> offsets_;  // per ValueId, bytes; -1 without a slot
  std::vector<uint32_t> params_;
  std::vector<std::pair<int, uint32_t>> keys_, errors_, workspaces_;
  bool int64_ = false, float64_ = false;
};

// Workgroups for n invocations of `local` each, at most 65535 (the shaders loop over the rest).
uint32_t groups_for(int64_t n, int64_t local);
// Contiguous row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
// numpy broadcast strides of `shape` read at every index of `out`.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out);
// Drops size-1 dims and merges adjacent dims that every stride set walks contiguously.
void collapse_dims(std::vector<int64_t>& dims, std::vector<std::vector<int64_t>*> strides);
// A parameter input's constant values (empty when omitted); UnsupportedAttribute when not constant.
std::vector<int64_t> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t index);
// A signed element count or stride as a parameter word (LimitExceeded past int32).
uint32_t word(int64_t v, const ir::Node& node);

}  // namespace lockstep::vulkan
