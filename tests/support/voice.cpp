#include "support/paths.h"
#include "support/voice.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "backends/cpu/backend.h"
#include "core/atomic_file.h"
#include "ir/graph.h"

namespace lockstep::test {

std::string voice_path() {
  if (const char* v = std::getenv("LOCKSTEP_VOICE")) return v;
  return lockstep_test::source_dir() + "/.cache/voices/en_US-joe-medium.onnx";
}

std::vector<Tensor> voice_inputs(const std::vector<int64_t>& ids, float noise, float length, float noise_w) {
  const auto n = static_cast<int64_t>(ids.size());
  return {Tensor::from_vector<int64_t>({1, n}, ids), Tensor::from_vector<int64_t>({1}, {n}),
          Tensor::from_vector<float>({3}, {noise, length, noise_w})};
}

std::vector<int64_t> sentence_ids(size_t i) {
  auto j = nlohmann::json::parse(read_file(lockstep_test::source_dir() + "/tests/fixtures/piper/sentences.json"));
  return j["sentences"][i]["ids"].get<std::vector<int64_t>>();
}

std::optional<std::string> RefusalProbe::unsupported_reason(const ir::Graph& graph, const ir::Node& node) const {
  if (auto reason = asked_.unsupported_reason(graph, node)) {
    std::string what = std::string(ir::op_name(node.op)) + ": " + *reason + " (";
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue)
        what += std::string(dtype_name(graph.value(v).dtype)) + shape_str(graph.value(v).shape) + (graph.is_constant(v) ? "c " : " ");
    what += "-> ";
    for (ir::ValueId v : node.outputs)
      if (v != ir::kNoValue) what += std::string(dtype_name(graph.value(v).dtype)) + shape_str(graph.value(v).shape) + " ";
    refusals[what + ")"] += 1;
  }
  return std::nullopt;
}

std::unique_ptr<Executable> RefusalProbe::compile(const ir::Graph& graph, const Options& options) const {
  return cpu::backend().compile(graph, options);
}

}  // namespace lockstep::test
