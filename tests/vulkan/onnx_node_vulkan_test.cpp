// The ONNX backend node tests on the vulkan backend: every test that passes on the cpu passes on
// vulkan at the cpu's tolerance, or vulkan refuses it through unsupported_reason (counted and
// skipped with the reason). The suite is $LOCKSTEP_ONNX_NODE_DIR, else Debian's libonnx-testdata;
// the skip list is tests/conformance/skip_list.txt. The helpers follow tests/gpu/onnx_node_cuda_test.cpp.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "core/atomic_file.h"
#include "ir/op.h"
#include "onnx/import.h"
#include "onnx/onnx.pb.h"
#include "support/fixtures.h"
#include "vulkan/vulkan_test_util.h"

namespace lockstep::vulkan_test {
namespace {

namespace fs = std::filesystem;

// The CPU conformance bound (tests/conformance): vulkan must meet what the cpu meets.
constexpr double kNodeRtol = 1e-5;
constexpr double kNodeAtol = 1e-6;
constexpr const char* kRefused = "refused: ";

std::string node_dir() {
  if (const char* env = std::getenv("LOCKSTEP_ONNX_NODE_DIR"); env && *env) return env;
  return test::onnx_node_data_dir();
}

std::string skip_list_path() {
  if (const char* env = std::getenv("LOCKSTEP_SKIP_LIST"); env && *env) return env;
  const std::string built = lockstep_test::source_dir() + "/tests/conformance/skip_list.txt";
  if (fs::exists(built)) return built;
  return "tests/conformance/skip_list.txt";  // the repository root on the GPU machine
}

bool uses_only_supported_ops(const std::string& model_path) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(read_file(model_path))) return false;
  for (const auto& n : model.graph().node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
    if (n.op_type() != "Constant" && !ir::op_from_onnx(n.op_type())) return false;
  }
  return true;
}

struct Suite {
  std::vector<std::string> supported;
  int unsupported = 0;
};

const Suite& suite() {
  static const Suite s = [] {
    Suite out;
    std::error_code ec;
    if (!fs::is_directory(node_dir(), ec)) return out;
    for (const auto& e : fs::directory_iterator(node_dir())) {
      if (!fs::exists(e.path() / "model.onnx")) continue;
      if (uses_only_supported_ops((e.path() / "model.onnx").string())) out.supported.push_back(e.path().filename().string());
      else ++out.unsupported;
    }
    std::sort(out.supported.begin(), out.supported.end());
    return out;
  }();
  return s;
}

// Keys "test" and "test:cpu" of skip_list.txt: tests the CPU does not pass.
const std::map<std::string, std::string>& cpu_skips() {
  static const std::map<std::string, std::string> skips = [] {
    std::map<std::string, std::string> out;
    std::ifstream in(skip_list_path());
    for (std::string line; std::getline(in, line);) {
      const size_t b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      const size_t hash = line.find('#');
      std::string key = line.substr(b, (hash == std::string::npos ? line.size() : hash) - b);
      key.erase(key.find_last_not_of(" \t\r") + 1);
      const std::string reason = hash == std::string::npos ? "" : line.substr(hash + 1);
      const size_t colon = key.find(':');
      if (colon == std::string::npos || key.substr(colon + 1) == "cpu") out[key.substr(0, colon)] = reason;
    }
    return out;
  }();
  return skips;
}

// The suite feeds some compile-time parameters as graph inputs; bind those as constants.
Model bind_parameter_inputs(const Model& model, std::vector<Tensor>& inputs) {
  ir::Graph g = model.graph();
  std::vector<bool> is_param(g.values.size(), false);
  for (const auto& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != ir::kNoValue && ir::is_parameter_input(n.op, i)) is_param[static_cast<size_t>(n.inputs[i])] = true;
  std::vector<ir::ValueId> kept;
  std::vector<Tensor> kept_inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::ValueId v = g.inputs[i];
    if (is_param[static_cast<size_t>(v)]) {
      g.value(v).constant = inputs[i];
      g.value(v).shape = inputs[i].shape();
    } else {
      kept.push_back(v);
      kept_inputs.push_back(inputs[i]);
    }
  }
  if (kept.size() == g.inputs.size()) return model;
  g.inputs = kept;
  inputs = kept_inputs;
  return Model::from_graph(std::move(g));
}

std::vector<Tensor> load_numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int i = 0;; ++i) {
    const fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    tensors.push_back(onnx::load_tensor_proto(p.string()));
  }
  return tensors;
}

// "" when every output is within tolerance of the expected data (NaN matches NaN), else the first miss.
std::string mismatch(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) return "output count " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    const Tensor &g = got[o], &w = want[o];
    if (g.shape() != w.shape()) return "output " + std::to_string(o) + " shape " + shape_str(g.shape()) + " vs " + shape_str(w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) {
      bool ok;
      if (is_floating(w.dtype())) {
        const double a = g.element_as_double(i), b = w.element_as_double(i);
        ok = is_floating(g.dtype()) && ((std::isnan(a) && std::isnan(b)) || a == b || std::abs(a - b) <= kNodeAtol + kNodeRtol * std::abs(b));
      } else {
        ok = g.dtype() == w.dtype() && g.element_as_int(i) == w.element_as_int(i);
      }
      if (!ok)
        return "output " + std::to_string(o) + "[" + std::to_string(i) + "]: got " + std::to_string(g.element_as_double(i)) +
               ", want " + std::to_string(w.element_as_double(i));
    }
  }
  return "";
}

// Runs every data set of `dir` on `backend`; "" on success, else what failed.
std::string run_case(const fs::path& dir, const std::string& backend) {
  try {
    Model model = Model::load((dir / "model.onnx").string());
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return "no test_data_set_*";
    for (const fs::path& set : sets) {
      std::vector<Tensor> inputs = load_numbered(set, "input_");
      const std::vector<Tensor> expected = load_numbered(set, "output_");
      if (inputs.size() != model.graph().inputs.size()) return "input count";
      Model bound = bind_parameter_inputs(model, inputs);
      Options options;
      for (size_t i = 0; i < inputs.size(); ++i)
        options.input_shapes[bound.graph().value(bound.graph().inputs[i]).name] = inputs[i].shape();
      auto exe = backend == "vulkan" ? vulkan::backend().compile(prepare(bound, options), options) : compile(bound, backend, options);
      const std::string miss = mismatch(exe->run(inputs), expected);
      if (!miss.empty()) return set.filename().string() + ": " + miss;
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::UnsupportedOp && backend == "vulkan") return std::string(kRefused) + e.what();
    return e.what();
  }
  return "";
}

// One test over the whole suite (one process: ctest would start one per case otherwise): every
// case the cpu passes passes on vulkan or is refused with a reason; the counts are printed.
TEST(VulkanOnnxNodeSuite, PassesWhereCpuPassesOrRefusesWithAReason) {
  LOCKSTEP_REQUIRE_VULKAN();
  if (suite().supported.empty()) GTEST_SKIP() << "no ONNX node tests at " << node_dir() << ": set LOCKSTEP_ONNX_NODE_DIR";
  int passed = 0, skipped = 0, cpu_fails = 0;
  std::map<std::string, int> refused;  // reason -> cases
  std::map<std::string, std::string> cases;  // reason -> its cases' names
  std::vector<std::string> failed;
  for (const std::string& test : suite().supported) {
    if (cpu_skips().count(test)) {
      ++skipped;
      continue;
    }
    const fs::path dir = fs::path(node_dir()) / test;
    if (!run_case(dir, "cpu").empty()) {
      ++cpu_fails;
      continue;
    }
    const std::string miss = run_case(dir, "vulkan");
    if (miss.empty()) {
      ++passed;
    } else if (miss.rfind(kRefused, 0) == 0) {
      std::string reason = miss.substr(miss.find("vulkan backend: ") == std::string::npos ? 0 : miss.find("vulkan backend: ") + 16);
      reason = reason.substr(0, reason.find(" ("));
      ++refused[reason];
      cases[reason] += (cases[reason].empty() ? "" : ", ") + test;
    } else {
      failed.push_back(test + ": " + miss);
    }
  }
  int refused_total = 0;
  for (const auto& [reason, n] : refused) refused_total += n;
  std::cout << "ONNX node conformance on vulkan: " << passed << " passed, " << refused_total
            << " refused by unsupported_reason, " << skipped << " skipped (skip list, cpu), " << failed.size()
            << " failed, " << cpu_fails << " not passing on cpu either; " << suite().unsupported
            << " tests use ops lockstep does not import" << std::endl;
  for (const auto& [reason, n] : refused) std::cout << "  refused " << n << "x: " << reason << " (" << cases[reason] << ")" << std::endl;
  for (const std::string& f : failed) ADD_FAILURE() << f;
  EXPECT_GT(passed, 100);
}

}  // namespace
}  // namespace lockstep::vulkan_test
