#include "backends/in_place_plan.h"

#include <algorithm>

#include "passes/check_memory_plan.h"
#include "passes/plan_memory.h"

namespace lockstep::backends {

std::vector<DenseView> plan_in_place(ir::Graph& graph, const std::vector<size_t>& bytes, size_t align,
                                     const std::vector<EarlyAccess>& accesses, bool views, int64_t max_memory_bytes) {
  passes::PlanAdjustments adjust;
  // Absorbed consumers are written at their producer's step, and the fused launch reads its
  // operands up to the last absorbed node (the WN layer's skip sum would otherwise reuse the
  // residual input's bytes, which the same kernel still reads).
  for (const EarlyAccess& a : accesses) {
    if (a.absorbed.empty()) continue;
    const int last = *std::max_element(a.absorbed.begin(), a.absorbed.end());
    for (ir::ValueId w : a.writes) adjust.extensions.push_back({w, a.producer, -1});
    for (ir::ValueId r : a.reads) adjust.extensions.push_back({r, -1, last});
  }
  // Only values the backend stores in the plan's own size can share the plan's bytes.
  auto as_planned = [&](ir::ValueId v) {
    return static_cast<int64_t>(bytes[static_cast<size_t>(v)]) == passes::planned_value_bytes(graph.value(v));
  };
  std::vector<DenseView> aliased;
  if (views)
    for (const DenseView& v : planned_dense_views(graph, bytes, align)) {
      if (!as_planned(v.view) || !as_planned(v.input)) continue;
      adjust.aliases.push_back({v.view, v.input, v.byte_offset});
      aliased.push_back(v);
    }
  // In-place pairs: the write takes the read's bytes where nothing reads them after the write
  // (a chain of them, layer after layer, shares one buffer).
  const auto readers = value_readers(graph);
  std::vector<char> fixed(graph.values.size(), 0);  // graph inputs and outputs, views and their inputs
  for (ir::ValueId v : graph.inputs) fixed[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : graph.outputs) fixed[static_cast<size_t>(v)] = 1;
  for (const passes::Alias& a : adjust.aliases) fixed[static_cast<size_t>(a.value)] = fixed[static_cast<size_t>(a.of)] = 1;
  std::vector<ir::ValueId> root(graph.values.size(), ir::kNoValue);  // of a merged write
  std::vector<const EarlyAccess*> in_order;  // producers first to last, so a chain finds its root
  for (const EarlyAccess& a : accesses) in_order.push_back(&a);
  std::stable_sort(in_order.begin(), in_order.end(), [](const EarlyAccess* x, const EarlyAccess* y) { return x->producer < y->producer; });
  for (const EarlyAccess* ap : in_order)
    for (const auto& pair : ap->in_place) {
      const ir::ValueId w = pair.first, r = pair.second;  // not a structured binding: the lambda below captures them
      const EarlyAccess& a = *ap;
      const auto wi = static_cast<size_t>(w), ri = static_cast<size_t>(r);
      const ir::Node& producer = graph.nodes[static_cast<size_t>(a.producer)];
      // After the producer only w's own (absorbed, element-wise) node reads r: in eager runs it
      // writes w over r element by element, in graph replay the fused launch does.
      const bool dead_after = std::all_of(readers[ri].begin(), readers[ri].end(), [&](size_t k) {
        const auto& outs = graph.nodes[k].outputs;
        return static_cast<int>(k) < a.producer ||
               (std::find(a.absorbed.begin(), a.absorbed.end(), static_cast<int>(k)) != a.absorbed.end() &&
                std::find(outs.begin(), outs.end(), w) != outs.end());
      });
      if (fixed[wi] || fixed[ri] || root[wi] != ir::kNoValue || !dead_after ||
          std::find(producer.inputs.begin(), producer.inputs.end(), r) != producer.inputs.end() ||
          graph.value(w).shape != graph.value(r).shape || bytes[wi] != bytes[ri] || !as_planned(r))
        continue;
      root[wi] = root[ri] != ir::kNoValue ? root[ri] : r;
      adjust.aliases.push_back({w, root[wi], 0});
    }
  if (adjust.extensions.empty() && adjust.aliases.empty()) return {};
  passes::plan_memory(graph, max_memory_bytes, adjust);
  passes::check_memory_plan(graph);  // the graph's own semantics (eager runs) hold with the aliases
  return aliased;
}

}  // namespace lockstep::backends
