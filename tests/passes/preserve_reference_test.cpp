// Every pass preserves the float64 reference result: on each shared model the reference output
// of the imported graph equals the output after each pass of the pipeline and after all of it.
#include <gtest/gtest.h>

#include <iostream>

#include "core/npy.h"
#include "diff/metrics.h"
#include "onnx/import.h"
#include "passes/infer_shapes.h"
#include "passes/pipeline.h"
#include "reference/evaluate.h"
#include "support/fixtures.h"

namespace lockstep {
namespace {

// Passes drop exact identities (x+0, x*1) and move elementwise ops into epilogues that the
// reference also runs in float64, so the result may move by float64 rounding at most.
constexpr double kPreserveRelL2 = 1e-12;

const char* const kModels[] = {"vits_seed_174", "vits_seed_flow_T1024", "vits_seed_dec_T256", "vits_low_dec_T128"};

std::vector<Tensor> model_inputs(const ir::Graph& graph, const std::string& stem) {
  std::vector<Tensor> inputs;
  for (ir::ValueId id : graph.inputs)
    inputs.push_back(read_npy(test::shared_models_dir() + "/" + stem + "." + graph.value(id).name + ".npy"));
  return inputs;
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    diff::Metrics m = diff::compare(got[i], want[i]);
    EXPECT_TRUE(m.shape_match) << where << " output " << i;
    EXPECT_LE(m.rel_l2, kPreserveRelL2) << where << " output " << i;
  }
}

class PreserveReference : public ::testing::TestWithParam<const char*> {};

TEST_P(PreserveReference, AfterEachPassAndTheWholePipeline) {
  const std::string stem = GetParam();
  ir::Graph graph = onnx::import_model(test::shared_model(stem));
  passes::bind_inputs(graph, {});
  std::vector<Tensor> inputs = model_inputs(graph, stem);

  ir::Graph imported = graph;
  passes::infer_shapes(imported);
  const std::vector<Tensor> want = reference::evaluate(imported, inputs);

  // A pass that rewrote nothing leaves the graph as the previous prefix had it: evaluate after
  // infer_shapes (it may fold shape subgraphs) and after each pass that applied something.
  passes::PipelineOptions options;
  int evaluated_at = -1;
  options.after_pass = [&](const std::string& pass, const ir::Graph& g, int applications) {
    if (applications == evaluated_at) return;
    expect_same(reference::evaluate(g, inputs), want, stem + " after " + pass);
    evaluated_at = applications;
  };
  std::vector<std::string> log = passes::run_pipeline(graph, options);
  expect_same(reference::evaluate(graph, inputs), want, stem + " after the full pipeline");
  std::cout << "[ preserve ] " << stem << ": " << log.size() << " applications, " << graph.nodes.size()
            << " nodes after the pipeline\n";

  // A bisected pipeline stops mid-pass (part of a fusion chain done): that graph runs the same.
  ir::Graph half = onnx::import_model(test::shared_model(stem));
  passes::bind_inputs(half, {});
  passes::PipelineOptions bisect;
  bisect.opt_bisect_limit = static_cast<int>(log.size() / 2);
  EXPECT_EQ(passes::run_pipeline(half, bisect).size(), log.size() / 2);
  expect_same(reference::evaluate(half, inputs), want, stem + " with --opt-bisect-limit=" +
                                                            std::to_string(log.size() / 2));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, PreserveReference, ::testing::ValuesIn(kModels));

}  // namespace
}  // namespace lockstep
