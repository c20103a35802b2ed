// Reduction (diff/reduce.h): the reproducer re-imports, still diverges, holds the divergent node
// alone, its manifest's SHA-256 sums match, and synthetic weights leave no original bytes.
#include "diff/reduce.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_set>

#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/npy.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "runners/faulty_cpu.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep::diff {
namespace {

namespace fs = std::filesystem;

constexpr size_t kLeakWindow =
    16;  // bytes: no window this long of an original initializer may survive
constexpr int64_t kFrames = 128;

std::string model_path() {
  static const std::string path = [] {
    std::string p = test::temp_dir() + "/reduce_seed_flow.onnx";
    // The default's topology at a shorter length (fast): written through the exporter.
    onnx::export_model(zoo::seed_flow_graph(0, kFrames), p);
    return p;
  }();
  return path;
}

// Every kLeakWindow-byte window of every floating initializer of `g`.
std::unordered_set<std::string_view> windows_of(const ir::Graph& g) {
  std::unordered_set<std::string_view> out;
  for (const auto& v : g.values) {
    if (!v.constant.defined() || !is_floating(v.dtype)) continue;
    std::string_view bytes(static_cast<const char*>(v.constant.raw()), v.constant.nbytes());
    for (size_t i = 0; i + kLeakWindow <= bytes.size(); ++i)
      out.insert(bytes.substr(i, kLeakWindow));
  }
  return out;
}

struct Case {
  FaultSpec fault;
  std::string dir;
};

Case plant(int node_index, const std::string& name) {
  ir::Graph g = onnx::import_model(model_path());
  Case c;
  c.fault.node = g.nodes.at(static_cast<size_t>(node_index)).name;
  c.fault.amount = 1.5;
  c.dir = test::temp_dir() + "/" + name;
  fs::remove_all(c.dir);
  return c;
}

void check_manifest(const ReduceResult& r) {
  auto manifest = nlohmann::json::parse(read_file(r.out_dir + "/manifest.json"));
  ASSERT_TRUE(manifest.contains("sha256"));
  size_t checked = 0;
  for (auto& [rel, sum] : manifest["sha256"].items()) {
    EXPECT_EQ(sha256_hex(read_file(r.out_dir + "/" + rel)), sum.get<std::string>()) << rel;
    ++checked;
  }
  EXPECT_EQ(checked + 1, r.files.size());  // every file but the manifest itself
  EXPECT_FALSE(manifest["commands"].empty());
  EXPECT_EQ(manifest["node"]["name"], r.bisect.node_name);
}

TEST(Reduce, WritesTheDivergentNodeAloneAndItStillDiverges) {
  for (int index : {5, 60, 130}) {
    Case c = plant(index, "reduce_" + std::to_string(index));
    ReduceResult r = reduce(model_path(), Runner::backend("reference"), test::faulty_cpu(c.fault),
                            zoo::seed_flow_inputs(kFrames), c.dir);
    ASSERT_TRUE(r.diverged);
    EXPECT_EQ(r.bisect.node_name, c.fault.node);
    EXPECT_TRUE(r.still_diverges);
    ir::Graph back = onnx::import_model(c.dir + "/model.onnx");
    ASSERT_EQ(back.nodes.size(), 1u);  // the node; its constants are initializers, not nodes
    EXPECT_EQ(back.nodes[0].name, c.fault.node);
    for (ir::ValueId v : back.inputs)
      EXPECT_TRUE(fs::exists(c.dir + "/inputs/" + runner_file_stem(back.value(v).name) + ".npy"));
    check_manifest(r);
    // Independently: the written inputs through both sides again.
    NamedTensors feeds;
    for (ir::ValueId v : back.inputs)
      feeds[back.value(v).name] =
          read_npy(c.dir + "/inputs/" + runner_file_stem(back.value(v).name) + ".npy");
    std::string out = back.value(back.outputs[0]).name;
    NamedTensors ref = Runner::backend("reference").run(c.dir + "/model.onnx", feeds, {out}, "");
    NamedTensors bad = test::faulty_cpu(c.fault).run(c.dir + "/model.onnx", feeds, {out}, "");
    EXPECT_GT(compare(bad.at(out), ref.at(out)).rel_l2, kAgreeRelL2 * 100);
  }
}

TEST(Reduce, SyntheticWeightsLeaveNoOriginalBytesAndStillDiverge) {
  // A Conv: the node with the largest initializers.
  ir::Graph g = onnx::import_model(model_path());
  int conv = 60;
  while (g.nodes[static_cast<size_t>(conv)].op != ir::Op::Conv) ++conv;
  Case c = plant(conv, "reduce_synthetic");
  SyntheticWeights synth = parse_synthetic_weights("0.1,0");
  ReduceOptions options;
  options.synthetic = synth;
  ReduceResult r = reduce(model_path(), Runner::backend("reference"), test::faulty_cpu(c.fault),
                          zoo::seed_flow_inputs(kFrames), c.dir, options);
  ASSERT_TRUE(r.diverged);
  EXPECT_EQ(r.bisect.node_name, c.fault.node);
  EXPECT_TRUE(r.synthetic);
  EXPECT_TRUE(r.synthetic_diverges);
  check_manifest(r);
  ir::Graph written = onnx::import_model(c.dir + "/model.onnx");
  ASSERT_EQ(written.nodes.size(), 1u);
  int floats = 0;
  for (const auto& v : written.values)
    if (v.constant.defined() && is_floating(v.dtype)) ++floats;
  EXPECT_GE(floats, 1);
  std::unordered_set<std::string_view> original = windows_of(g);
  ASSERT_FALSE(original.empty());
  std::string bytes = read_file(c.dir + "/model.onnx");  // the whole file, not only initializers
  size_t leaks = 0;
  for (size_t i = 0; i + kLeakWindow <= bytes.size(); ++i)
    leaks += original.count(std::string_view(bytes).substr(i, kLeakWindow));
  EXPECT_EQ(leaks, 0u);
  auto manifest = nlohmann::json::parse(read_file(c.dir + "/manifest.json"));
  EXPECT_EQ(manifest["synthetic_weights"]["diverges"], true);
}

TEST(Reduce, CleanSidesAgreeAndWriteNothing) {
  std::string dir = test::temp_dir() + "/reduce_clean";
  fs::remove_all(dir);
  ReduceResult r = reduce(model_path(), Runner::backend("reference"), Runner::backend("cpu"),
                          zoo::seed_flow_inputs(kFrames), dir);
  EXPECT_FALSE(r.diverged);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_NE(format_reduce(r).find("agree"), std::string::npos);
}

TEST(Reduce, RefusesANonEmptyOutputFolder) {
  std::string dir = test::temp_dir() + "/reduce_full";
  fs::create_directories(dir);
  write_file_atomic(dir + "/keep.txt", "x");
  EXPECT_THROW(reduce(model_path(), Runner::backend("reference"), Runner::backend("cpu"),
                      zoo::seed_flow_inputs(kFrames), dir),
               Error);
  EXPECT_TRUE(fs::exists(dir + "/keep.txt"));
}

}  // namespace
}  // namespace lockstep::diff
