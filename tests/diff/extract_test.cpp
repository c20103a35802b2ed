// Subgraph extraction (diff/extract.h), checked by re-import, by the float64 reference, and
// against onnx.utils.extract_model + onnx.checker when Python has onnx.
#include "diff/extract.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "core/npy.h"
#include "diff/metrics.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "passes/pipeline.h"
#include "reference/evaluate.h"
#include "runners/python_env.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep::diff {
namespace {

struct Traced {
  ir::Graph graph;
  std::vector<Tensor> inputs;
  std::vector<Tensor> values;  // per ValueId
};

Traced trace_default() {
  Traced t{zoo::seed_flow_graph(0, 64), zoo::seed_flow_inputs(64), {}};
  passes::bind_inputs(t.graph, {});
  annotate_types(t.graph);
  t.values.resize(t.graph.values.size());
  reference::evaluate(t.graph, t.inputs, [&](const ir::Node& n, int i, const Tensor& v) {
    t.values[n.outputs[i]] = v;
  });
  return t;
}

TEST(Extract, SubgraphReimportsAndComputesTheSameValues) {
  Traced t = trace_default();
  const ir::Graph& g = t.graph;
  const std::string dir = test::temp_dir();
  for (int index : {0, 48, 101, 150, 173}) {
    ir::ValueId out = g.nodes[index].outputs[0];
    ir::Graph sub = extract_subgraph(g, {g.value(out).name});
    std::string path = dir + "/extract_" + std::to_string(index) + ".onnx";
    onnx::export_model(sub, path);
    ir::Graph back = onnx::import_model(path);
    ASSERT_EQ(back.outputs.size(), 1u);
    EXPECT_EQ(back.nodes.back().name, g.nodes[index].name);
    EXPECT_LE(back.nodes.size(), static_cast<size_t>(index) + 1);
    // Only constants the kept nodes read.
    std::set<ir::ValueId> read;
    for (const auto& n : back.nodes) read.insert(n.inputs.begin(), n.inputs.end());
    for (size_t v = 0; v < back.values.size(); ++v)
      if (back.values[v].constant.defined())
        EXPECT_TRUE(read.count(static_cast<ir::ValueId>(v))) << back.values[v].name;
    std::vector<Tensor> outs = reference::evaluate(back, t.inputs);
    Metrics m = compare(outs[0], t.values[out]);
    EXPECT_EQ(m.max_abs_delta, 0) << g.nodes[index].name;  // the same float64 ops in the same order
  }
}

TEST(Extract, IntermediateTensorsBecomeInputs) {
  Traced t = trace_default();
  const ir::Graph& g = t.graph;
  size_t index = 100;
  while (g.nodes[index].op != ir::Op::Conv) ++index;
  const ir::Node& conv = g.nodes[index];
  ir::ValueId in = conv.inputs[0];
  ir::Graph sub = extract_subgraph(g, {g.value(conv.outputs[0]).name}, {g.value(in).name});
  ASSERT_EQ(sub.nodes.size(), 1u);
  ASSERT_EQ(sub.inputs.size(), 1u);
  EXPECT_EQ(sub.value(sub.inputs[0]).shape, g.value(in).shape);
  std::string path = test::temp_dir() + "/extract_one.onnx";
  onnx::export_model(sub, path);
  ir::Graph back = onnx::import_model(path);
  std::vector<Tensor> outs = reference::evaluate(back, {t.values[in].to(DType::Float32)});
  Metrics m = compare(outs[0], t.values[conv.outputs[0]]);
  EXPECT_LT(m.rel_l2, kAgreeRelL2);  // its input went through float32
}

TEST(Extract, NodeNamesStandForTheirOutputs) {
  Traced t = trace_default();
  ir::Graph sub = extract_subgraph(t.graph, {t.graph.nodes[10].name});
  EXPECT_EQ(sub.nodes.back().name, t.graph.nodes[10].name);
  EXPECT_EQ(sub.outputs.size(), t.graph.nodes[10].outputs.size());
}

TEST(Extract, BadNamesAreClearErrors) {
  Traced t = trace_default();
  const ir::Graph& g = t.graph;
  auto expect_error = [&](std::vector<std::string> outs, std::vector<std::string> ins,
                          const std::string& needle) {
    try {
      extract_subgraph(g, outs, ins);
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({"no_such_tensor"}, {}, "no_such_tensor");
  expect_error({}, {}, "no output");
  expect_error({g.value(g.nodes[50].outputs[0]).name}, {g.value(g.inputs[1]).name},
               "add it to --inputs");
  std::string constant;
  for (const auto& v : g.values)
    if (v.constant.defined()) constant = v.name;
  expect_error({g.value(g.nodes[50].outputs[0]).name}, {constant}, "constant");
}

// The same names through onnx.utils.extract_model: the same node set; ours passes onnx.checker.
TEST(Extract, MatchesOnnxUtilsExtractModel) {
  std::string python = test::find_python("onnx");
  if (python.empty())
    GTEST_SKIP() << "no python3 with onnx (pip install onnx): comparison with onnx.utils skipped";
  const std::string model = test::shared_model("vits_seed_174");
  ir::Graph g = onnx::import_model(model);
  passes::bind_inputs(g, {});
  annotate_types(g);
  const std::string dir = test::temp_dir();
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {g.value(g.nodes[60].outputs[0]).name, {}},
      {g.value(g.nodes[120].outputs[0]).name,
       {g.value(g.nodes[100].outputs[0]).name, "z_p", "y_mask"}},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& [out, ins] = cases[k];
    ir::Graph sub = extract_subgraph(g, {out}, ins);
    std::string ours = dir + "/ours_" + std::to_string(k) + ".onnx";
    onnx::export_model(sub, ours);
    std::string in_list;
    for (const auto& i : (ins.empty() ? std::vector<std::string>{"z_p", "y_mask"} : ins))
      in_list += "'" + i + "',";
    std::string script = dir + "/cmp_" + std::to_string(k) + ".py";
    std::ofstream(script)
        << "import onnx, onnx.utils, sys\n"
        << "onnx.utils.extract_model('" << model << "', '" << dir << "/py.onnx', [" << in_list
        << "], ['" << out << "'])\n"
        << "a = onnx.load('" << ours << "'); onnx.checker.check_model(a, full_check=True)\n"
        << "b = onnx.load('" << dir << "/py.onnx')\n"
        << "na = sorted(n.name for n in a.graph.node); nb = sorted(n.name for n in b.graph.node)\n"
        << "ia = sorted(i.name for i in a.graph.initializer); "
        << "ib = sorted(i.name for i in b.graph.initializer)\n"
        << "print(len(na), len(nb), len(ia), len(ib))\n"
        << "sys.exit(0 if na == nb and ia == ib else 1)\n";
    int status = std::system((python + " " + script).c_str());
    EXPECT_EQ(status, 0) << "node or initializer sets differ from onnx.utils.extract_model for "
                         << out;
  }
}

}  // namespace
}  // namespace lockstep::diff
