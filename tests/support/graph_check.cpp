#include "support/graph_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "backends/cpu/cpu_test_util.h"
#include "reference/evaluate.h"

namespace lockstep::test {

ir::ValueId GraphBuilder::value(std::string name, Shape shape, Tensor constant) {
  ir::Value v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  // A constant's value has the constant's type (an int64 shape stays int64 on every backend).
  if (constant.defined()) v.dtype = constant.dtype();
  v.constant = std::move(constant);
  return g_.add_value(std::move(v));
}

ir::ValueId GraphBuilder::ints(const std::string& name, std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return value(name, {n}, Tensor::from_vector<int64_t>({n}, v));
}

ir::Node GraphBuilder::node(ir::Op op, std::string name, std::vector<ir::ValueId> inputs,
                            ir::ValueId output) {
  return node(op, std::move(name), std::move(inputs), std::vector<ir::ValueId>{output});
}

ir::Node GraphBuilder::node(ir::Op op, std::string name, std::vector<ir::ValueId> inputs,
                            std::vector<ir::ValueId> outputs) {
  ir::Node n;
  n.op = op;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

ir::ValueId GraphBuilder::append_pad1_conv(const std::string& name, ir::ValueId input,
                                           ir::ValueId weight, Shape out_shape) {
  const ir::ValueId out = value(name, std::move(out_shape));
  ir::Node n = node(ir::Op::Conv, name, {input, weight}, out);
  n.attrs.set("pads", std::vector<int64_t>{1, 1});
  g_.nodes.push_back(std::move(n));
  return out;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()) != 0)
      return false;
  return true;
}

std::vector<Tensor> expect_cpu_matches(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& want, int threads, int64_t terms,
                                       const std::string& what, bool run_to_run) {
  Options o;
  o.threads = threads;
  auto exe = cpu::backend().compile(g, o);
  std::vector<Tensor> got = exe->run(inputs);
  cpu_test::expect_outputs_match(got, want, terms, what, cpu_test::kCpuRelL2,
                                 cpu_test::kCpuAbsPerTerm);
  if (run_to_run)
    EXPECT_TRUE(same_bits(got, exe->run(inputs))) << what << ": run-to-run bits differ";
  return got;
}

namespace {

using Taps = std::map<std::string, Tensor>;

std::string tap_key(const ir::Node& n, int output) {
  return n.name + "#" + std::to_string(output);
}

void check_taps_at(const ir::Graph& g, const std::vector<Tensor>& inputs, const Taps& want,
                   int threads, const TapCheck& check) {
  const std::string at = check.what + " threads " + std::to_string(threads);
  Options o;
  o.threads = threads;
  auto exe = cpu::backend().compile(g, o);
  Taps got;
  RunOptions ro;
  ro.tap = [&](const ir::Node& n, int out, const Tensor& v) { got[tap_key(n, out)] = v; };
  const std::vector<Tensor> tapped = exe->run(inputs, ro);
  const std::vector<Tensor> plain = exe->run(inputs);
  ASSERT_EQ(got.size(), want.size()) << at;
  for (const auto& [name, v] : want) {
    cpu_test::Diff d = cpu_test::diff(got.at(name), v);
    EXPECT_TRUE(d.finite) << name << " " << at;
    EXPECT_LE(d.rel_l2, check.rel_l2) << name << " " << at;
  }
  EXPECT_TRUE(same_bits(plain, tapped)) << at << ": tapped run's output bits differ";
  if (check.recompile)
    EXPECT_TRUE(same_bits(plain, cpu::backend().compile(g, o)->run(inputs)))
        << at << ": recompiled bits differ";
}

}  // namespace

void expect_cpu_taps_match_reference(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                     const TapCheck& check) {
  ASSERT_FALSE(check.threads.empty()) << check.what;
  Taps want;
  reference::evaluate(
      g, inputs, [&](const ir::Node& n, int out, const Tensor& v) { want[tap_key(n, out)] = v; });
  for (int threads : check.threads) check_taps_at(g, inputs, want, threads, check);
}

}  // namespace lockstep::test
