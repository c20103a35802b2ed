#include "passes/plan_memory.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace lockstep::passes {

namespace {

constexpr int64_t kAlignment = 64;
// Intervals from which the placements run on two threads (a voice's encoder segment has ~870).
constexpr size_t kParallelIntervals = 256;

int64_t align_up(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

struct Interval {
  ir::ValueId id;
  int first;  // node step that writes it (0 for graph inputs)
  int last;   // last node step that reads it (inclusive)
  int64_t bytes;  // aligned
};

// Live intervals of every stored value, in node steps.
std::vector<Interval> live_intervals(const ir::Graph& graph) {
  const int steps = static_cast<int>(graph.nodes.size());
  std::vector<int> first(graph.values.size(), -1), last(graph.values.size(), -1);
  for (ir::ValueId id : graph.inputs) first[id] = last[id] = 0;
  for (int n = 0; n < steps; ++n) {
    const ir::Node& node = graph.nodes[n];
    auto read = [&](ir::ValueId id) {
      if (id != ir::kNoValue && first[id] >= 0) last[id] = std::max(last[id], n);
    };
    for (ir::ValueId id : node.inputs) read(id);
    for (const auto& step : node.epilogue) read(step.operand);
    for (ir::ValueId id : node.outputs)
      if (id != ir::kNoValue && !graph.is_constant(id)) first[id] = last[id] = n;
  }
  for (ir::ValueId id : graph.outputs)
    if (first[id] >= 0) last[id] = std::max(last[id], std::max(steps - 1, 0));
  std::vector<Interval> intervals;
  for (size_t v = 0; v < graph.values.size(); ++v) {
    if (first[v] < 0 || graph.values[v].constant.defined()) continue;
    const ir::Value& value = graph.values[v];
    if (!value.shape_known())
      throw Error(ErrorCode::Internal, "plan_memory: value '" + value.name + "' has an unknown shape " +
                                           shape_str(value.shape) + " (shape inference must run first)");
    intervals.push_back({static_cast<ir::ValueId>(v), first[v], last[v], align_up(planned_value_bytes(value))});
  }
  return intervals;
}

int64_t peak_live_bytes(const std::vector<Interval>& intervals, int steps) {
  std::vector<int64_t> delta(static_cast<size_t>(std::max(steps, 1)) + 1, 0);
  for (const auto& iv : intervals) {
    delta[iv.first] += iv.bytes;
    delta[iv.last + 1] -= iv.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) peak = std::max(peak, live += d);
  return peak;
}

// The intervals placed so far, as columns kept in order of their first byte, so that the ones
// live beside a new interval come out sorted (a voice's segments plan ~500 values at every new
// length, four times each, many of them live to the end as the segment's outputs).
struct Placed {
  std::vector<int> first, last;
  std::vector<int64_t> begin, end;  // bytes [begin, end)

  // Drops the intervals that end before `step`, keeping the byte order.
  void retire_before(int step) {
    size_t kept = 0;
    for (size_t i = 0; i < first.size(); ++i) {
      if (last[i] < step) continue;
      first[kept] = first[i], last[kept] = last[i], begin[kept] = begin[i], end[kept] = end[i];
      ++kept;
    }
    for (auto* column : {&first, &last}) column->resize(kept);
    for (auto* column : {&begin, &end}) column->resize(kept);
  }
};

// Where `iv` goes beside the already placed intervals that are live with it: the lowest gap that
// fits (first fit) or the tightest one (best fit), else above them all. The columns are in byte
// order, so the scan stops at the first fit, or at a best fit's exact fit (none can be tighter).
int64_t fit(const Interval& iv, const Placed& placed, bool best_fit) {
  const size_t count = placed.first.size();
  const int* first = placed.first.data();
  const int* last = placed.last.data();
  const int64_t* begin = placed.begin.data();
  const int64_t* end = placed.end.data();
  int64_t cursor = 0, best = -1, best_gap = INT64_MAX;
  for (size_t i = 0; i < count; ++i) {
    if (first[i] > iv.last || iv.first > last[i]) continue;
    const int64_t gap = begin[i] - cursor;
    if (gap >= iv.bytes) {
      if (!best_fit || gap == iv.bytes) return cursor;
      if (gap < best_gap) best = cursor, best_gap = gap;
    }
    cursor = std::max(cursor, end[i]);
  }
  return best >= 0 ? best : cursor;
}

struct Placement {
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;
};

// `by_start`: `order` is sorted by first step, so an interval that ends before the current one
// starts is live beside none of those still to come and leaves the scan.
Placement place(const std::vector<Interval>& order, size_t value_count, bool best_fit, bool by_start) {
  Placement result;
  result.offsets.assign(value_count, -1);
  Placed placed;
  for (auto* column : {&placed.first, &placed.last}) column->reserve(order.size());
  for (auto* column : {&placed.begin, &placed.end}) column->reserve(order.size());
  for (const auto& iv : order) {
    if (by_start) placed.retire_before(iv.first);
    int64_t offset = fit(iv, placed, best_fit);
    result.offsets[iv.id] = offset;
    result.arena_bytes = std::max(result.arena_bytes, offset + iv.bytes);
    if (iv.bytes == 0) continue;  // takes no bytes beside any other
    // Equal first bytes may go in any order: the gap before each is the same, and after the
    // first of them no gap is left before the others.
    const auto at = std::upper_bound(placed.begin.begin(), placed.begin.end(), offset) - placed.begin.begin();
    placed.first.insert(placed.first.begin() + at, iv.first);
    placed.last.insert(placed.last.begin() + at, iv.last);
    placed.begin.insert(placed.begin.begin() + at, offset);
    placed.end.insert(placed.end.begin() + at, offset + iv.bytes);
  }
  return result;
}

// Folds each alias into the value it lies in: that value lives over the alias's range too, and
// the alias leaves the list (it takes no bytes). Returns alias_of per value (empty when none).
std::vector<ir::ValueId> fold_aliases(const ir::Graph& graph, const std::vector<Alias>& aliases,
                                      std::vector<Interval>& intervals) {
  if (aliases.empty()) return {};
  std::vector<ir::ValueId> alias_of(graph.values.size(), ir::kNoValue);
  for (const Alias& a : aliases) alias_of[static_cast<size_t>(a.value)] = a.of;
  std::vector<int> at(graph.values.size(), -1);  // interval index per value
  for (size_t i = 0; i < intervals.size(); ++i) at[static_cast<size_t>(intervals[i].id)] = static_cast<int>(i);
  for (const Alias& a : aliases) {
    const std::string what = "plan_memory: alias '" + graph.value(a.value).name + "' in '" + graph.value(a.of).name + "'";
    const int ai = at[static_cast<size_t>(a.value)], ri = at[static_cast<size_t>(a.of)];
    if (ai < 0 || ri < 0 || alias_of[static_cast<size_t>(a.of)] != ir::kNoValue)
      throw Error(ErrorCode::Internal, what + ": both must be stored values and the second no alias");
    if (a.byte_offset < 0 || a.byte_offset % kAlignment != 0 ||
        a.byte_offset + planned_value_bytes(graph.value(a.value)) > planned_value_bytes(graph.value(a.of)))
      throw Error(ErrorCode::Internal, what + " at byte " + std::to_string(a.byte_offset) + " does not fit aligned");
    Interval& root = intervals[static_cast<size_t>(ri)];
    root.first = std::min(root.first, intervals[static_cast<size_t>(ai)].first);
    root.last = std::max(root.last, intervals[static_cast<size_t>(ai)].last);
  }
  std::erase_if(intervals, [&](const Interval& iv) { return alias_of[static_cast<size_t>(iv.id)] != ir::kNoValue; });
  return alias_of;
}

}  // namespace

int64_t planned_value_bytes(const ir::Value& value) {
  int64_t element = is_floating(value.dtype) ? 4 : value.dtype == DType::Int64 ? 8 : value.dtype == DType::Int32 ? 4 : 1;
  int64_t count = num_elements(value.shape);
  if (count > INT64_MAX / element)
    throw Error(ErrorCode::LimitExceeded, "value '" + value.name + "' " + shape_str(value.shape) + " is too large");
  return count * element;
}

void plan_memory(ir::Graph& graph, int64_t max_memory_bytes, const PlanAdjustments& adjustments) {
  std::vector<Interval> intervals = live_intervals(graph);
  std::vector<ir::ValueId> root(graph.values.size(), ir::kNoValue);  // an extension of an alias stretches its value
  for (const Alias& a : adjustments.aliases) root[static_cast<size_t>(a.value)] = a.of;
  std::vector<int> interval_of(adjustments.extensions.empty() ? 0 : graph.values.size(), -1);
  if (!interval_of.empty())
    for (size_t i = 0; i < intervals.size(); ++i) interval_of[static_cast<size_t>(intervals[i].id)] = static_cast<int>(i);
  for (const LiveExtension& e : adjustments.extensions) {
    const ir::ValueId target = root[static_cast<size_t>(e.value)] != ir::kNoValue ? root[static_cast<size_t>(e.value)] : e.value;
    const int i = interval_of[static_cast<size_t>(target)];
    if (i < 0) continue;  // not stored (a constant)
    Interval& iv = intervals[static_cast<size_t>(i)];
    if (e.first >= 0) iv.first = std::min(iv.first, e.first);
    if (e.last >= 0) iv.last = std::max(iv.last, e.last);
  }
  std::vector<ir::ValueId> alias_of = fold_aliases(graph, adjustments.aliases, intervals);
  ir::MemoryPlan plan;
  plan.offsets.assign(graph.values.size(), -1);
  plan.sizes.assign(graph.values.size(), 0);
  for (const auto& iv : intervals) plan.sizes[iv.id] = planned_value_bytes(graph.value(iv.id));

  // Greedy by size (big buffers claim low offsets first) and greedy by start (linear scan), each
  // with first and best fit; the smallest arena wins. Ties broken by id: a pure function of the graph.
  std::vector<Interval> by_size = intervals, by_start = intervals;
  std::sort(by_size.begin(), by_size.end(), [](const Interval& a, const Interval& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.first != b.first) return a.first < b.first;
    return a.id < b.id;
  });
  std::sort(by_start.begin(), by_start.end(), [](const Interval& a, const Interval& b) {
    if (a.first != b.first) return a.first < b.first;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.id < b.id;
  });
  // by size first fit, by size best fit, by start first fit, by start best fit; on a large graph
  // the second (the costliest) on a thread of its own beside the others.
  Placement candidates[4];
  auto run = [&](int k) {
    candidates[k] = place(k < 2 ? by_size : by_start, graph.values.size(), k % 2 == 1, k >= 2);
  };
  if (intervals.size() >= kParallelIntervals) {
    std::exception_ptr failed[2];
    std::thread beside([&] {
      try {
        run(1);
      } catch (...) {
        failed[1] = std::current_exception();
      }
    });
    try {
      for (int k : {0, 2, 3}) run(k);
    } catch (...) {
      failed[0] = std::current_exception();
    }
    beside.join();  // before anything leaves this scope: a joinable thread's destructor terminates
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
  } else {
    for (int k = 0; k < 4; ++k) run(k);
  }
  Placement* chosen = &candidates[0];
  for (Placement& candidate : candidates)
    if (candidate.arena_bytes < chosen->arena_bytes) chosen = &candidate;
  plan.offsets = std::move(chosen->offsets);
  plan.arena_bytes = chosen->arena_bytes;
  for (const Alias& a : adjustments.aliases) {
    plan.offsets[static_cast<size_t>(a.value)] = plan.offsets[static_cast<size_t>(a.of)] + a.byte_offset;
    plan.sizes[static_cast<size_t>(a.value)] = planned_value_bytes(graph.value(a.value));
  }
  plan.alias_of = std::move(alias_of);
  plan.lower_bound_bytes = peak_live_bytes(intervals, static_cast<int>(graph.nodes.size()));
  if (max_memory_bytes > 0 && plan.arena_bytes > max_memory_bytes)
    throw Error(ErrorCode::LimitExceeded, "planned arena needs " + std::to_string(plan.arena_bytes) +
                                              " bytes, cap is " + std::to_string(max_memory_bytes) +
                                              " (raise max_memory_bytes or use smaller input shapes)");
  graph.plan = std::move(plan);
}

}  // namespace lockstep::passes
