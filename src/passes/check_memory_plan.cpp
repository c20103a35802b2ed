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

  // Aliases (MemoryPlan.alias_of) share their value's bytes, checked as part of it. A view (made by
  // a Slice or Split of that value) lies inside it, which stays live while the view is read. An
  // in-place alias (any other node) takes exactly its bytes after every earlier occupant's last
  // read; at that very step only by a node that reads the occupant (element by element).
  const bool aliased = !plan.alias_of.empty();
  if (aliased && plan.alias_of.size() != count)
    throw Error(ErrorCode::Internal, "memory plan check: alias table size does not match the value count");
  const std::vector<int> producer = graph.producers();
  std::vector<std::vector<ir::ValueId>> occupants(count), views(count);  // per root
  for (size_t v = 0; aliased && v < count; ++v) {
    const ir::ValueId of = plan.alias_of[v];
    if (of == ir::kNoValue || begin[v] < 0) continue;
    const ir::ValueId id = static_cast<ir::ValueId>(v);
    const size_t r = static_cast<size_t>(of);
    if (of < 0 || r >= count || begin[r] < 0 || plan.alias_of[r] != ir::kNoValue || producer[v] < 0)
      throw Error(ErrorCode::Internal, "memory plan check: " + label(graph, id) + " is an alias of no stored value");
    const ir::Node& made_by = graph.nodes[static_cast<size_t>(producer[v])];
    const bool view = (made_by.op == ir::Op::Slice || made_by.op == ir::Op::Split) && made_by.inputs[0] == of;
    const int64_t vb = needed_bytes(graph.values[v]), rb = needed_bytes(graph.values[r]);
    if (view ? plan.offsets[v] < plan.offsets[r] || plan.offsets[v] + vb > plan.offsets[r] + rb
             : plan.offsets[v] != plan.offsets[r] || vb != rb)
      throw Error(ErrorCode::Internal, "memory plan check: alias " + label(graph, id) + " lies outside " + label(graph, of));
    (view ? views : occupants)[r].push_back(id);
  }
  for (size_t r = 0; aliased && r < count; ++r) {
    const ir::ValueId root = static_cast<ir::ValueId>(r);
    if (!views[r].empty() && !occupants[r].empty())
      throw Error(ErrorCode::Internal, "memory plan check: " + label(graph, root) + " has both views and in-place aliases");
    for (ir::ValueId v : views[r]) {
      if (begin[v] < begin[r])
        throw Error(ErrorCode::Internal, "memory plan check: view " + label(graph, v) + " is made before " + label(graph, root));
      end[r] = std::max(end[r], end[v]);
    }
    std::vector<ir::ValueId>& in_turn = occupants[r];
    std::sort(in_turn.begin(), in_turn.end(), [&](ir::ValueId a, ir::ValueId b) { return begin[a] < begin[b]; });
    ir::ValueId previous = root;
    for (ir::ValueId v : in_turn) {
      const ir::Node& made_by = graph.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])];
      const bool reads_previous = std::find(made_by.inputs.begin(), made_by.inputs.end(), previous) != made_by.inputs.end() ||
                                  std::any_of(made_by.epilogue.begin(), made_by.epilogue.end(),
                                              [&](const ir::EpilogueStep& st) { return st.operand == previous; });
      if (end[previous] > begin[v] || (end[previous] == begin[v] && !reads_previous))
        throw Error(ErrorCode::Internal, "memory plan check: " + label(graph, v) + " takes the bytes of " +
                                             label(graph, previous) + " while it is still read (step " +
                                             std::to_string(end[previous]) + ")");
      end[r] = std::max(end[r], end[v]);
      previous = v;
    }
  }

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
    if (bytes > 0 && !(aliased && plan.alias_of[v] != ir::kNoValue)) slots.push_back({id, begin[v], end[v], offset, offset + bytes});
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
