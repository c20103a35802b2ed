// plan_memory against a plain transcription of its documented placement (four greedy orders,
// first and best fit against every interval placed so far, the smallest arena wins): the planner's
// shortcuts (retiring dead intervals in start order, stopping at a fit) must place every value
// at the same byte on random graphs, zero-byte values and live extensions included.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <vector>

#include "passes/check_memory_plan.h"
#include "passes/graph_builder.h"
#include "passes/plan_memory.h"

namespace lockstep {
namespace {

struct Span {
  ir::ValueId id;
  int first, last;
  int64_t bytes;
};

int64_t aligned(int64_t b) { return (b + 63) / 64 * 64; }

std::vector<int64_t> oracle_offsets(const ir::Graph& g, const std::vector<passes::LiveExtension>& extensions, int64_t* arena) {
  const int steps = static_cast<int>(g.nodes.size());
  std::vector<int> first(g.values.size(), -1), last(g.values.size(), -1);
  for (ir::ValueId v : g.inputs) first[v] = last[v] = 0;
  for (int n = 0; n < steps; ++n) {
    for (ir::ValueId v : g.nodes[n].inputs)
      if (first[v] >= 0) last[v] = std::max(last[v], n);
    for (ir::ValueId v : g.nodes[n].outputs) first[v] = last[v] = n;
  }
  for (ir::ValueId v : g.outputs) last[v] = steps - 1;
  for (const auto& e : extensions) {
    if (e.first >= 0) first[e.value] = std::min(first[e.value], e.first);
    if (e.last >= 0) last[e.value] = std::max(last[e.value], e.last);
  }
  std::vector<Span> spans;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (first[v] >= 0) spans.push_back({static_cast<ir::ValueId>(v), first[v], last[v], aligned(passes::planned_value_bytes(g.values[v]))});
  auto by_size = spans, by_start = spans;
  std::sort(by_size.begin(), by_size.end(), [](const Span& a, const Span& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first != b.first ? a.first < b.first : a.id < b.id;
  });
  std::sort(by_start.begin(), by_start.end(), [](const Span& a, const Span& b) {
    return a.first != b.first ? a.first < b.first : a.bytes != b.bytes ? a.bytes > b.bytes : a.id < b.id;
  });
  std::vector<int64_t> best_offsets;
  int64_t best_arena = -1;
  for (const auto* order : {&by_size, &by_start})
    for (bool best_fit : {false, true}) {
      std::vector<int64_t> offsets(g.values.size(), -1);
      std::vector<std::pair<Span, int64_t>> placed;
      int64_t top = 0;
      for (const Span& s : *order) {
        std::vector<std::pair<int64_t, int64_t>> busy;  // every placed interval live beside s
        for (const auto& [p, at] : placed)
          if (p.first <= s.last && s.first <= p.last && p.bytes > 0) busy.emplace_back(at, at + p.bytes);
        std::sort(busy.begin(), busy.end());
        int64_t cursor = 0, chosen = -1, chosen_gap = INT64_MAX;
        for (const auto& [b, e] : busy) {
          const int64_t gap = b - cursor;
          if (gap >= s.bytes && (best_fit ? gap < chosen_gap : chosen < 0)) chosen = cursor, chosen_gap = gap;
          cursor = std::max(cursor, e);
        }
        const int64_t at = chosen >= 0 ? chosen : cursor;
        offsets[s.id] = at;
        top = std::max(top, at + s.bytes);
        placed.emplace_back(s, at);
      }
      if (best_arena < 0 || top < best_arena) best_arena = top, best_offsets = offsets;
    }
  *arena = best_arena;
  return best_offsets;
}

TEST(PlanMemoryOracle, RandomGraphsPlaceEveryValueWhereThePlainScanDoes) {
  std::mt19937 rng(20261206);
  for (int trial = 0; trial < 60; ++trial) {
    testing::GraphBuilder b;
    std::vector<ir::ValueId> values;
    auto size = [&] {
      const int kind = static_cast<int>(rng() % 10);
      return kind == 0 ? int64_t{0} : kind < 6 ? static_cast<int64_t>(1 + rng() % 16) : static_cast<int64_t>(1 + rng() % 4096);
    };
    for (int i = 0; i < 3; ++i) values.push_back(b.input("in" + std::to_string(i), {size()}));
    const int nodes = 20 + static_cast<int>(rng() % 300);
    for (int n = 0; n < nodes; ++n) {
      // Mostly recent inputs, some from far back: long and short live ranges.
      auto pick = [&] {
        const size_t back = rng() % 4 == 0 ? rng() % values.size() : rng() % std::min<size_t>(values.size(), 6);
        return values[values.size() - 1 - back];
      };
      values.push_back(b.node(ir::Op::Add, "n" + std::to_string(n), {pick(), pick()}, {size()}));
    }
    for (int o = 0; o < 1 + static_cast<int>(rng() % 5); ++o) b.output(values[rng() % values.size()]);
    std::vector<passes::LiveExtension> extensions;
    if (trial % 2) {
      for (int e = 0; e < 10; ++e) {
        const ir::ValueId v = values[3 + rng() % (values.size() - 3)];
        extensions.push_back({v, rng() % 2 ? static_cast<int>(rng() % nodes) : -1, rng() % 2 ? static_cast<int>(rng() % nodes) : -1});
      }
    }
    ir::Graph& g = b.graph();
    int64_t arena = 0;
    const std::vector<int64_t> expected = oracle_offsets(g, extensions, &arena);
    passes::plan_memory(g, 0, {.extensions = extensions});
    ASSERT_EQ(g.plan->arena_bytes, arena) << "trial " << trial;
    for (size_t v = 0; v < g.values.size(); ++v)
      ASSERT_EQ(g.plan->offsets[v], expected[v]) << "trial " << trial << " value " << g.values[v].name;
    if (extensions.empty()) passes::check_memory_plan(g);
  }
}

}  // namespace
}  // namespace lockstep
