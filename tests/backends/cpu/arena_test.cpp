// The cpu arena at compile: values fusion left behind get no buffer, and compile writes no arena
// page (both once grew compile time with the input size: 5 GiB zero-filled for the seed decoder
// at 8192 frames, 4.6 GiB of it for fused-away values).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/executor.h"
#include "passes/pipeline.h"
#include "support/fixtures.h"
#include "support/graph_check.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

constexpr int64_t kChannels = 16, kLength = 16384;  // 1 MiB per activation: a mapped arena
constexpr int64_t kArenaAlign = 64;

// Conv -> Add bias -> Tanh -> Mul mask: the pipeline fuses the three elementwise nodes into the
// conv's epilogue, leaving their intermediate values unreferenced in graph.values.
ir::Graph conv_chain() {
  ir::Graph g;
  test::GraphBuilder gb(g);
  using Builder = test::GraphBuilder;
  const Shape act{1, kChannels, kLength};
  ir::ValueId x = gb.value("x", act), mask = gb.value("mask", {1, 1, kLength});
  g.inputs = {x, mask};
  ir::ValueId w = gb.value("w", {kChannels, kChannels, 3}, random_tensor({kChannels, kChannels, 3}, 11));
  ir::ValueId b = gb.value("b", {kChannels, 1}, random_tensor({kChannels, 1}, 12));
  ir::ValueId c = gb.value("c", act), a = gb.value("a", act), t = gb.value("t", act), y = gb.value("y", act);
  ir::Node conv = Builder::node(Op::Conv, "conv", {x, w}, c);
  conv.attrs.set("pads", std::vector<int64_t>{1, 1});
  g.nodes = {conv, Builder::node(Op::Add, "add", {c, b}, a), Builder::node(Op::Tanh, "tanh", {a}, t),
             Builder::node(Op::Mul, "mul", {t, mask}, y)};
  g.outputs = {y};
  return g;
}

std::vector<Tensor> chain_inputs() {
  return {random_tensor({1, kChannels, kLength}, 13), random_tensor({1, 1, kLength}, 14, DType::Float32, 0, 1)};
}

ir::Graph planned(ir::Graph g) {
  passes::run_pipeline(g, passes::PipelineOptions{});
  return g;
}

// Non-constant values no node, graph input or graph output refers to.
int count_unreferenced(const ir::Graph& g) {
  std::vector<char> used(g.values.size(), 0);
  auto mark = [&](ir::ValueId id) {
    if (id != ir::kNoValue) used[static_cast<size_t>(id)] = 1;
  };
  for (ir::ValueId id : g.inputs) mark(id);
  for (ir::ValueId id : g.outputs) mark(id);
  for (const auto& n : g.nodes) {
    for (ir::ValueId id : n.inputs) mark(id);
    for (ir::ValueId id : n.outputs) mark(id);
    for (const auto& s : n.epilogue) mark(s.operand);
  }
  int count = 0;
  for (size_t v = 0; v < g.values.size(); ++v) count += !used[v] && !g.values[v].constant.defined();
  return count;
}

// mincore's vector is unsigned char on Linux, char on macOS (bit 0 is "resident" on both).
#if defined(__APPLE__)
using MincoreByte = char;
#else
using MincoreByte = unsigned char;
#endif

// Arena pages resident in memory (written or read since the mapping was made).
size_t resident_pages(const Executable& exe) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(cpu::arena_address(exe));
  const size_t bytes = static_cast<size_t>(cpu::arena_bytes(exe));
  EXPECT_EQ(begin % page, 0u) << "a mapped arena starts on a page";
  const size_t pages = (bytes + page - 1) / page;
  std::vector<MincoreByte> in_core(pages, 0);
  EXPECT_EQ(mincore(reinterpret_cast<void*>(begin), bytes, in_core.data()), 0);
  size_t resident = 0;
  for (MincoreByte p : in_core) resident += p & 1;
  return resident;
}

TEST(CpuArena, FusedAwayValuesGetNoBuffer) {
  ir::Graph g = planned(conv_chain());
  ASSERT_EQ(g.nodes.size(), 1u) << "the chain is expected to fuse into the conv";
  ASSERT_GE(count_unreferenced(g), 2) << "fusion is expected to leave the add and tanh values in graph.values";
  ASSERT_TRUE(g.plan.has_value());
  auto exe = cpu::backend().compile(g, Options{});
  const int64_t plan_arena = (g.plan->arena_bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  EXPECT_EQ(cpu::arena_bytes(*exe), plan_arena) << "every referenced value is planned: nothing beyond the plan";
  // Without a plan every referenced value gets its own slot, and only those: x, mask, y.
  ir::Graph unplanned = g;
  unplanned.plan.reset();
  auto exe2 = cpu::backend().compile(unplanned, Options{});
  const int64_t act_bytes = kChannels * kLength * 4, mask_bytes = kLength * 4;
  EXPECT_EQ(cpu::arena_bytes(*exe2), 2 * act_bytes + mask_bytes);
  // Both give the reference's result.
  const auto want = reference::evaluate(conv_chain(), chain_inputs());
  for (Executable* e : {exe.get(), exe2.get()}) {
    auto got = e->run(chain_inputs());
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LE(diff(got[0], want[0]).rel_l2, kCpuRelL2);
  }
}

TEST(CpuArena, CompileWritesNoArenaPage) {
  ir::Graph g = planned(conv_chain());
  auto exe = cpu::backend().compile(g, Options{});
  ASSERT_GE(cpu::arena_bytes(*exe), 2 * kChannels * kLength * 4);
  EXPECT_EQ(resident_pages(*exe), 0u) << "compile touched the arena (zero-fill or first touch belongs to runs)";
  exe->run(chain_inputs());
  EXPECT_GT(resident_pages(*exe), 0u) << "a run writes the arena: the residency probe sees pages";
}

// The decoder whose compile grew with its input: its arena is the plan's, not the plan's plus a
// slot for each of the values fusion left behind.
TEST(CpuArena, SeedDecoderArenaIsThePlan) {
  const std::string path = test::shared_model("vits_seed_dec_T256");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared model " << path;
  const Model model = Model::load(path);
  const ir::Graph g = lockstep::prepare(model, Options{});
  ASSERT_TRUE(g.plan.has_value());
  ASSERT_GT(count_unreferenced(g), 0) << "the pipeline is expected to leave fused-away values in graph.values";
  auto exe = lockstep::compile(model, "cpu", Options{});
  const int64_t plan_arena = (g.plan->arena_bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  EXPECT_EQ(cpu::arena_bytes(*exe), plan_arena);
}

}  // namespace
}  // namespace lockstep::cpu_test
