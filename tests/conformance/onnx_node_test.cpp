// The ONNX backend node tests (Debian's libonnx-testdata) on the reference and CPU backends.
// A test whose model uses only ops in ops.inc must pass or be listed in skip_list.txt with a
// reason; tests using other ops are counted as unsupported and not run.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

#include "core/atomic_file.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "lockstep/lockstep.h"
#include "onnx/import.h"
#include "onnx/onnx.pb.h"
#include "support/fixtures.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

struct Tolerance {
  double rtol;
  double atol;
};
// Against the suite's float32 expected data: the reference computes in float64, the CPU in
// float32. Both pass at these bounds (tightened from 1e-5/1e-6 and 1e-4/1e-5).
constexpr Tolerance kReferenceTol{1e-6, 1e-7};
constexpr Tolerance kCpuTol{1e-5, 1e-6};

Tolerance tolerance_for(const std::string& backend) { return backend == "reference" ? kReferenceTol : kCpuTol; }

const char* const kBackends[] = {"reference", "cpu"};

struct Discovery {
  std::vector<std::string> supported;  // dirs whose model uses only ops in ops.inc
  int unsupported = 0;
};

// True when every node of the model is an op lockstep knows (or a Constant) in the default domain.
bool uses_only_supported_ops(const std::string& model_path) {
  ::onnx::ModelProto model;
  std::string bytes = read_file(model_path);
  if (!model.ParseFromString(bytes)) return false;
  for (const auto& n : model.graph().node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
    if (n.op_type() != "Constant" && !ir::op_from_onnx(n.op_type())) return false;
  }
  return true;
}

const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery out;
    std::error_code ec;
    if (!fs::is_directory(test::onnx_node_data_dir(), ec)) return out;
    std::vector<std::string> dirs;
    for (const auto& entry : fs::directory_iterator(test::onnx_node_data_dir()))
      if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path().filename().string());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      if (uses_only_supported_ops(test::onnx_node_data_dir() + "/" + dir + "/model.onnx")) out.supported.push_back(dir);
      else ++out.unsupported;
    }
    return out;
  }();
  return d;
}

// skip_list.txt: "test_name[:backend]  # reason", one per line; '#' lines are comments.
struct SkipList {
  std::map<std::string, std::string> reasons;  // "test_x" or "test_x:cpu" -> reason
  std::vector<std::string> errors;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

const SkipList& skip_list() {
  static const SkipList list = [] {
    SkipList out;
    std::string path = lockstep_test::source_dir() + "/tests/conformance/skip_list.txt";
    std::ifstream in(path);
    if (!in) {
      out.errors.push_back("cannot read " + path);
      return out;
    }
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      std::string t = trim(line);
      if (t.empty() || t[0] == '#') continue;
      size_t hash = t.find('#');
      std::string key = trim(t.substr(0, hash));
      std::string reason = hash == std::string::npos ? "" : trim(t.substr(hash + 1));
      std::string where = path + ":" + std::to_string(line_no) + ": ";
      if (reason.empty()) out.errors.push_back(where + "entry '" + key + "' has no reason after '#'");
      else if (!out.reasons.emplace(key, reason).second) out.errors.push_back(where + "duplicate entry '" + key + "'");
    }
    return out;
  }();
  return list;
}

struct Counts {
  int passed = 0, skipped = 0, failed = 0;
};
std::mutex counts_mutex;
std::map<std::string, Counts> counts;

class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (counts.empty()) return;
    std::string line = "ONNX node conformance:";
    const char* sep = " ";
    for (const char* b : kBackends) {
      Counts c = counts[b];
      line += sep + std::string(b) + " " + std::to_string(c.passed) + " passed, " + std::to_string(c.skipped) +
              " skipped" + (c.failed ? ", " + std::to_string(c.failed) + " failed" : "");
      sep = "; ";
    }
    line += "; " + std::to_string(discovery().unsupported) + " tests use unsupported ops";
    std::cout << line << std::endl;
  }
};
[[maybe_unused]] ::testing::Environment* const summary_env = ::testing::AddGlobalTestEnvironment(new Summary);

struct NodeCase {
  std::string test;
  std::string backend;
};
void PrintTo(const NodeCase& c, std::ostream* os) { *os << c.test << " on " << c.backend; }

// The suite feeds some parameters (Reshape's shape, Slice's starts, ...) as graph inputs; lockstep
// compiles for known parameters, so those inputs are bound as constants with the test's values.
Model bind_parameter_inputs(const Model& model, std::vector<Tensor>& inputs) {
  ir::Graph g = model.graph();
  std::vector<bool> is_param(g.values.size(), false);
  for (const auto& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != ir::kNoValue && ir::is_parameter_input(n.op, i)) is_param[static_cast<size_t>(n.inputs[i])] = true;
  std::vector<ir::ValueId> kept_ids;
  std::vector<Tensor> kept_inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    ir::ValueId v = g.inputs[i];
    if (is_param[static_cast<size_t>(v)]) {
      g.value(v).constant = inputs[i];
      g.value(v).shape = inputs[i].shape();
    } else {
      kept_ids.push_back(v);
      kept_inputs.push_back(inputs[i]);
    }
  }
  if (kept_ids.size() == g.inputs.size()) return model;
  g.inputs = kept_ids;
  inputs = kept_inputs;
  return Model::from_graph(std::move(g));
}

std::vector<NodeCase> all_cases() {
  std::vector<NodeCase> cases;
  for (const auto& t : discovery().supported)
    for (const char* b : kBackends) cases.push_back({t, b});
  return cases;
}

std::vector<Tensor> load_numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    tensors.push_back(onnx::load_tensor_proto(p.string()));
  }
  return tensors;
}

// Floating outputs within rtol/atol of the expected data (NaN matches NaN); others exact.
void expect_close(const Tensor& got, const Tensor& want, const Tolerance& tol, const std::string& what) {
  ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << what;
  if (is_floating(want.dtype())) {
    ASSERT_TRUE(is_floating(got.dtype())) << what << ": got " << dtype_name(got.dtype());
    int reported = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      double g = got.element_as_double(i), w = want.element_as_double(i);
      bool ok = (std::isnan(g) && std::isnan(w)) || (g == w) || std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
      if (!ok && reported++ < 5) ADD_FAILURE() << what << "[" << i << "]: got " << g << ", want " << w;
    }
    return;
  }
  ASSERT_EQ(dtype_name(got.dtype()), std::string(dtype_name(want.dtype()))) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (got.element_as_int(i) != want.element_as_int(i) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got.element_as_int(i) << ", want " << want.element_as_int(i);
}

class OnnxNodeTest : public ::testing::TestWithParam<NodeCase> {
 protected:
  void TearDown() override {
    std::lock_guard<std::mutex> lock(counts_mutex);
    Counts& c = counts[GetParam().backend];
    if (IsSkipped()) ++c.skipped;
    else if (HasFailure()) ++c.failed;
    else ++c.passed;
  }
};

TEST_P(OnnxNodeTest, MatchesExpectedOutputs) {
  const NodeCase& param = GetParam();
  const SkipList& skips = skip_list();
  ASSERT_TRUE(skips.errors.empty()) << "skip_list.txt does not load: " << skips.errors.front();
  for (const std::string& key : {param.test, param.test + ":" + param.backend})
    if (auto it = skips.reasons.find(key); it != skips.reasons.end()) GTEST_SKIP() << it->second;

  const fs::path dir = fs::path(test::onnx_node_data_dir()) / param.test;
  try {
    Model model = Model::load((dir / "model.onnx").string());
    const ir::Graph& graph = model.graph();
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    ASSERT_FALSE(sets.empty()) << "no test_data_set_* in " << dir;
    for (const fs::path& set : sets) {
      SCOPED_TRACE(set.filename().string());
      std::vector<Tensor> inputs = load_numbered(set, "input_");
      std::vector<Tensor> expected = load_numbered(set, "output_");
      ASSERT_EQ(inputs.size(), graph.inputs.size()) << "input_*.pb count vs runtime graph inputs";
      Model bound = bind_parameter_inputs(model, inputs);
      const ir::Graph& bound_graph = bound.graph();
      Options options;
      for (size_t i = 0; i < inputs.size(); ++i)
        options.input_shapes[bound_graph.value(bound_graph.inputs[i]).name] = inputs[i].shape();
      auto exe = compile(bound, param.backend, options);
      std::vector<Tensor> outputs = exe->run(inputs);
      ASSERT_EQ(outputs.size(), expected.size());
      for (size_t i = 0; i < outputs.size(); ++i)
        expect_close(outputs[i], expected[i], tolerance_for(param.backend),
                     "output " + std::to_string(i) + " '" + graph.value(graph.outputs[i]).name + "'");
    }
  } catch (const Error& e) {
    FAIL() << e.what() << "\n(an intended limitation needs an entry in tests/conformance/skip_list.txt with a reason)";
  }
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<NodeCase>& info) {
                           return info.param.test + "_" + info.param.backend;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

// Every entry has a reason (checked on load) and names a test the runner would run.
TEST(OnnxConformance, SkipListIsWellFormed) {
  const SkipList& skips = skip_list();
  for (const auto& e : skips.errors) ADD_FAILURE() << e;
  const auto& supported = discovery().supported;
  for (const auto& [key, reason] : skips.reasons) {
    std::string test = key.substr(0, key.find(':'));
    std::string backend = key.find(':') == std::string::npos ? "" : key.substr(key.find(':') + 1);
    EXPECT_TRUE(std::binary_search(supported.begin(), supported.end(), test))
        << "skip_list.txt names '" << test << "', which is not a supported-op test";
    EXPECT_TRUE(backend.empty() || backend == "reference" || backend == "cpu") << key;
  }
}

TEST(OnnxConformance, SuiteIsPresent) {
  if (!fs::is_directory(test::onnx_node_data_dir())) GTEST_SKIP() << "libonnx-testdata is not installed";
  EXPECT_GT(discovery().supported.size(), 150u);
}

}  // namespace
}  // namespace lockstep
