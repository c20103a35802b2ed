// Predicted selections (src/dynamic/predict.h): a NonZero over an interval test is taken to select
// every element (its complement none), the segment runs on past it, and the mask is checked after.
// Oracle: the reference interpreter on the unspecialised graph; the same executable with
// LOCKSTEP_PREDICT_SELECTIONS=0 (every NonZero on the host, as before) for the bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "dynamic/predict.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "passes/graph_builder.h"
#include "reference/evaluate.h"

namespace lockstep {
namespace {

// Indices of `mask`'s true elements as GatherND/ScatterND take them ([K, rank]).
ir::ValueId where(testing::GraphBuilder& b, const std::string& name, ir::ValueId mask) {
  ir::Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  return b.node(ir::Op::Transpose, name + "/T", {b.node(ir::Op::NonZero, name, {mask}, {}, DType::Int64)}, {}, DType::Int64, perm);
}

// As the spline flows of a Piper voice's duration predictor: x [1, 1, T] (T symbolic); values inside
// [-1, 1] are squared, values outside negated (each through NonZero -> GatherND -> ScatterND), then
// a Tanh and a second interval test on the result, so that one prediction feeds the next mask.
ir::Graph spline_like() {
  testing::GraphBuilder b;
  ir::ValueId x = b.input("x", {1, 1, -1});
  b.graph().value(x).dim_params = {"", "", "T"};
  ir::ValueId lo = b.constant("lo", Tensor::scalar<float>(-1.0f)), hi = b.constant("hi", Tensor::scalar<float>(1.0f));
  ir::ValueId y = x;
  for (int k = 0; k < 2; ++k) {
    const std::string p = "/flow" + std::to_string(k) + "/";
    ir::ValueId ge = b.node(ir::Op::GreaterOrEqual, p + "Ge", {y, lo}, {}, DType::Bool);
    ir::ValueId le = b.node(ir::Op::LessOrEqual, p + "Le", {y, hi}, {}, DType::Bool);
    ir::ValueId inside = b.node(ir::Op::And, p + "And", {ge, le}, {}, DType::Bool);
    ir::ValueId outside = b.node(ir::Op::Not, p + "Not", {inside}, {}, DType::Bool);
    ir::ValueId in_idx = where(b, p + "NonZero_in", inside), out_idx = where(b, p + "NonZero_out", outside);
    ir::ValueId in_vals = b.node(ir::Op::GatherND, p + "GatherIn", {y, in_idx}, {});
    ir::ValueId squared = b.node(ir::Op::Mul, p + "Square", {in_vals, in_vals}, {});
    ir::ValueId out_vals = b.node(ir::Op::GatherND, p + "GatherOut", {y, out_idx}, {});
    ir::ValueId negated = b.node(ir::Op::Neg, p + "Negate", {out_vals}, {});
    ir::ValueId z = b.node(ir::Op::ScatterND, p + "ScatterIn", {y, in_idx, squared}, {});
    z = b.node(ir::Op::ScatterND, p + "ScatterOut", {z, out_idx, negated}, {});
    y = b.node(ir::Op::Tanh, p + "Tanh", {b.node(ir::Op::Add, p + "Add", {z, z}, {})}, {});
  }
  b.output(y);
  b.graph().name = "spline_like";
  return b.graph();
}

// The same model compiled for the cpu with predictions and with every NonZero on the host.
struct TwoPaths {
  std::unique_ptr<Executable> predicted, hosted;
  explicit TwoPaths(const Model& model) {
    Options options;
    options.threads = 1;
    unsetenv("LOCKSTEP_PREDICT_SELECTIONS");
    predicted = compile(model, "cpu", options);
    setenv("LOCKSTEP_PREDICT_SELECTIONS", "0", 1);
    hosted = compile(model, "cpu", options);
    unsetenv("LOCKSTEP_PREDICT_SELECTIONS");
  }
};

Tensor row(int64_t frames, float amplitude) {
  Tensor t(DType::Float32, {1, 1, frames});
  float* p = t.data<float>();
  for (int64_t i = 0; i < frames; ++i) p[i] = amplitude * std::sin(0.41f * static_cast<float>(i) + 0.3f);
  return t;
}

// Within `tol` of the reference everywhere, in the reference's shape (diff::compare checks both).
void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  const diff::Metrics m = diff::compare(got, want);
  EXPECT_TRUE(m.shape_match) << what;
  EXPECT_LE(m.max_abs_delta, tol) << what;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(PredictedSelections, TheRuleCoversIntervalTestsOnly) {
  const ir::Graph g = spline_like();
  const std::vector<dynamic::Prediction> p = dynamic::predict_selections(g);
  int all_true = 0, all_false = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].op != ir::Op::NonZero) {
      EXPECT_EQ(p[n], dynamic::Prediction::None) << g.nodes[n].name;
      continue;
    }
    const bool inside = g.nodes[n].name.find("_in") != std::string::npos;
    EXPECT_EQ(p[n], inside ? dynamic::Prediction::AllTrue : dynamic::Prediction::AllFalse) << g.nodes[n].name;
    (inside ? all_true : all_false)++;
  }
  EXPECT_EQ(all_true, 2);
  EXPECT_EQ(all_false, 2);
  // A NonZero over a single comparison (no interval test) waits for the host.
  ir::Graph plain = g;
  for (ir::Node& n : plain.nodes)
    if (n.op == ir::Op::NonZero && n.name == "/flow0/NonZero_in") n.inputs[0] = plain.nodes[0].outputs[0];  // x >= lo alone
  const std::vector<dynamic::Prediction> q = dynamic::predict_selections(plain);
  for (size_t n = 0; n < plain.nodes.size(); ++n)
    if (plain.nodes[n].name == "/flow0/NonZero_in") EXPECT_EQ(q[n], dynamic::Prediction::None);
}

// Values inside the interval: the predicted run takes one segment where the host path takes three,
// runs no NonZero on the host, and gives the host path's bits; both match the reference.
TEST(PredictedSelections, APredictionThatHoldsRunsOneSegmentWithTheSameBits) {
  const Model model = Model::from_graph(spline_like());
  TwoPaths paths(model);
  Executable& predicted = *paths.predicted;
  Executable& hosted = *paths.hosted;
  for (int64_t frames : {7, 40, 7}) {
    const std::vector<Tensor> in = {row(frames, 0.9f)};
    const std::vector<Tensor> want = reference::evaluate(model.graph(), in);
    const std::vector<Tensor> a = predicted.run(in), b = hosted.run(in);
    expect_near(a[0], want[0], 1e-6, std::to_string(frames));
    EXPECT_TRUE(same_bits(a[0], b[0])) << frames;
    const dynamic::Stats* s = dynamic::stats(predicted);
    EXPECT_EQ(s->last_run_segments, 1) << frames;
    EXPECT_EQ(s->last_run_host_nodes, 0);
    EXPECT_EQ(s->last_run_predictions, 4);
    EXPECT_EQ(s->last_run_mispredictions, 0);
    EXPECT_EQ(dynamic::stats(hosted)->last_run_host_nodes, 4);
    EXPECT_GT(dynamic::stats(hosted)->last_run_segments, 1);
  }
}

// Values outside the interval: the mask disagrees, the run redoes the segment with every NonZero on
// the host and still matches the reference and the host path bit for bit; an inside call after it
// predicts again.
TEST(PredictedSelections, AMispredictionRedoesTheSegmentOnTheHost) {
  const Model model = Model::from_graph(spline_like());
  TwoPaths paths(model);
  Executable& predicted = *paths.predicted;
  Executable& hosted = *paths.hosted;
  const dynamic::Stats* s = dynamic::stats(predicted);
  for (float amplitude : {2.5f, 0.5f, 2.5f}) {
    const std::vector<Tensor> in = {row(33, amplitude)};
    const std::vector<Tensor> want = reference::evaluate(model.graph(), in);
    const std::vector<Tensor> a = predicted.run(in), b = hosted.run(in);
    expect_near(a[0], want[0], 1e-6, std::to_string(amplitude));
    EXPECT_TRUE(same_bits(a[0], b[0])) << amplitude;
    EXPECT_EQ(s->last_run_mispredictions, amplitude > 1 ? 1 : 0) << amplitude;
    EXPECT_EQ(s->last_run_host_nodes, amplitude > 1 ? 4 : 0) << amplitude;
  }
  EXPECT_EQ(s->mispredictions, 2);
  EXPECT_EQ(s->last_run_misses, 0) << "the redone segments are cached apart from the predicted one";
}

// An export without value_info (torch.onnx without shape inference, as scripts/export_piper_arch.py
// and bench/gpu/batch_gpu.py's model) leaves the masks' dtypes unset until the probe infers them:
// the rule and the run predict all the same.
TEST(PredictedSelections, MasksWithoutDeclaredDtypesArePredicted) {
  ir::Graph g = spline_like();
  for (ir::Value& v : g.values)
    if (!v.constant.defined() && v.name != "x") v.dtype = DType::Float32;  // what an import without value_info leaves
  const std::vector<dynamic::Prediction> p = dynamic::predict_selections(g);
  EXPECT_EQ(std::count(p.begin(), p.end(), dynamic::Prediction::AllTrue), 2);
  EXPECT_EQ(std::count(p.begin(), p.end(), dynamic::Prediction::AllFalse), 2);
  unsetenv("LOCKSTEP_PREDICT_SELECTIONS");
  Options options;
  options.threads = 1;
  std::unique_ptr<Executable> exe = compile(Model::from_graph(g), "cpu", options);
  const std::vector<Tensor> in = {row(19, 0.9f)};
  expect_near(exe->run(in).at(0), reference::evaluate(spline_like(), in).at(0), 1e-6, "dtype-less masks");
  EXPECT_EQ(dynamic::stats(*exe)->last_run_segments, 1);
  EXPECT_EQ(dynamic::stats(*exe)->last_run_predictions, 4);
}

TEST(PredictedSelections, MasksAndTheirChecks) {
  using dynamic::Prediction;
  Tensor t = dynamic::predicted_mask(Prediction::AllTrue, DType::Bool, {2, 3});
  EXPECT_TRUE(dynamic::prediction_holds(Prediction::AllTrue, t));
  EXPECT_FALSE(dynamic::prediction_holds(Prediction::AllFalse, t));
  static_cast<unsigned char*>(t.raw())[4] = 0;
  EXPECT_FALSE(dynamic::prediction_holds(Prediction::AllTrue, t));
  Tensor f = dynamic::predicted_mask(Prediction::AllFalse, DType::Bool, {5});
  EXPECT_TRUE(dynamic::prediction_holds(Prediction::AllFalse, f));
  EXPECT_TRUE(dynamic::prediction_holds(Prediction::AllTrue, Tensor(DType::Bool, {0})));
  EXPECT_THROW(dynamic::predicted_mask(Prediction::AllTrue, DType::Float32, {2}), Error);
}

}  // namespace
}  // namespace lockstep
