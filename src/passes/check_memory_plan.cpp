#include "passes/check_memory_plan.h"

#include <algorithm>
#include <string>
#include <vector>

namespace lockstep::passes {

namespace {

constexpr int64_t kAlignment = 64;

// Own element sizes and liveness, deliberately not shared with plan_memory: the checker must
// not inherit the planner's mistakes.
int64_t needed_bytes(const ir::Value& value) {
  int64_t element = 1;
  switch (value.dtype) {
    case DType::Float32: case DType::Float64: case DType::Int32: element = 4; break;
    case DType::Int64: element = 8; break;
    case DType::Bool: element = 1; break;
  }
  return num_elements(value.shape) * element;
}

struct Slot {
  ir::ValueId id;
  int begin_step, end_step;     // inclusive
  int64_t begin_byte, end_byte;  // [begin, end)
};

std::string label(const ir::Graph& graph, ir::ValueId id) {
  return "%" + std::to_string(id) + " '" + graph.value(id).name + "'";
}

}  // namespace

void check_memory_plan(const ir::Graph& graph) {
  if (!graph.plan) throw Error(ErrorCode::Internal, "memory plan check: the graph has no plan");
  const ir::MemoryPlan& plan = *graph.plan;
  const size_t count = graph.values.size();
  if (plan.offsets.size() != count || plan.sizes.size() != count)
    throw Error(ErrorCode::Internal, "memory plan check: plan size does not match the value count");

  // Live steps: a write at the producing step, reads at each reading step; inputs live from
  // step 0 and outputs until the last step.
  const int last_step = std::max(static_cast<int>(graph.nodes.size()) - 1, 0);
  std::vector<int> begin(count, -1), end(count, -1);
  auto touch = [&](ir::ValueId id, int step) {
    if (id == ir::kNoValue || graph.is_constant(id)) return;
    if (begin[id] < 0) begin[id] = step;
    end[id] = std::max(end[id], step);
  };
  for (ir::ValueId id : graph.inputs) touch(id, 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    for (ir::ValueId id : node.inputs) touch(id, static_cast<int>(n));
    for (const auto& step : node.epilogue) touch(step.operand, static_cast<int>(n));
    for (ir::ValueId id : node.outputs) touch(id, static_cast<int>(n));
  }
  for (ir::ValueId id : graph.outputs) touch(id, last_step);

  std::vector<Slot> slots;
  for (size_t v = 0; v < count; ++v) {
    if (begin[v] < 0) continue;
    ir::ValueId id = static_cast<ir::ValueId>(v);
    int64_t offset = plan.offsets[v];
    int64_t bytes = needed_bytes(graph.values[v]);
    if (offset < 0) throw Error(ErrorCode::Internal, "memory plan check: " + label(graph, id) + " has no arena slot");
    if (offset % kAlignment != 0)
      throw Error(ErrorCode::Internal, "memory plan check: " + label(graph, id) + " is not 64-byte aligned");
    if (plan.sizes[v] < bytes || offset + bytes > plan.arena_bytes)
      throw Error(ErrorCode::Internal, "memory plan check: " + label(graph, id) + " needs " + std::to_string(bytes) +
                                           " bytes at offset " + std::to_string(offset) + ", slot is " +
                                           std::to_string(plan.sizes[v]) + " in an arena of " +
                                           std::to_string(plan.arena_bytes));
    if (bytes > 0) slots.push_back({id, begin[v], end[v], offset, offset + bytes});
  }

  // Sweep over byte order: each slot is compared with the earlier-starting slots still open.
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
    return a.begin_byte != b.begin_byte ? a.begin_byte < b.begin_byte : a.id < b.id;
  });
  std::vector<const Slot*> open;
  for (const Slot& slot : slots) {
    std::erase_if(open, [&](const Slot* other) { return other->end_byte <= slot.begin_byte; });
    for (const Slot* other : open)
      if (other->begin_step <= slot.end_step && slot.begin_step <= other->end_step)
        throw Error(ErrorCode::Internal,
                    "memory plan check: " + label(graph, other->id) + " [bytes " + std::to_string(other->begin_byte) +
                        ", " + std::to_string(other->end_byte) + ") live at steps " +
                        std::to_string(other->begin_step) + ".." + std::to_string(other->end_step) +
                        " overlaps " + label(graph, slot.id) + " [bytes " + std::to_string(slot.begin_byte) + ", " +
                        std::to_string(slot.end_byte) + ") live at steps " + std::to_string(slot.begin_step) +
                        ".." + std::to_string(slot.end_step));
    open.push_back(&slot);
  }
}

}  // namespace lockstep::passes
