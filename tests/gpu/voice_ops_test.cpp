// Piper voices on the cuda backend. VoiceOpsOnCuda.* needs no GPU: it runs a voice through the
// run-time shape stage with a probe backend that asks cuda's unsupported_reason() about every node
// of every segment and computes on the cpu, so that a node cuda would refuse is found here, with
// its shapes. CudaVoice.* runs the voices on the GPU against their float64 oracles.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "backends/cpu/backend.h"
#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/npy.h"
#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "gpu/gpu_test_util.h"

namespace lockstep::gpu_test {
namespace {

namespace fs = std::filesystem;

// Answers like cuda (recording each refusal), computes like the cpu.
class ProbeBackend final : public Backend {
 public:
  std::string name() const override { return "cuda-probe"; }
  bool available(std::string*) const override { return true; }
  std::optional<std::string> unsupported_reason(const ir::Graph& graph, const ir::Node& node) const override {
    if (auto reason = cuda::backend().unsupported_reason(graph, node)) {
      std::string what = std::string(ir::op_name(node.op)) + ": " + *reason + " (";
      for (ir::ValueId v : node.inputs)
        if (v != ir::kNoValue)
          what += std::string(dtype_name(graph.value(v).dtype)) + shape_str(graph.value(v).shape) + (graph.is_constant(v) ? "c " : " ");
      what += "-> ";
      for (ir::ValueId v : node.outputs)
        if (v != ir::kNoValue) what += std::string(dtype_name(graph.value(v).dtype)) + shape_str(graph.value(v).shape) + " ";
      refusals[what] += 1;
    }
    return std::nullopt;
  }
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    return cpu::backend().compile(graph, options);
  }
  mutable std::map<std::string, int> refusals;
};

std::string voice_path() {
  if (const char* v = std::getenv("LOCKSTEP_VOICE")) return v;
  return std::string(LOCKSTEP_SOURCE_DIR) + "/.cache/voices/en_US-joe-medium.onnx";
}

std::vector<Tensor> voice_inputs(const std::vector<int64_t>& ids, float noise, float length, float noise_w) {
  const auto n = static_cast<int64_t>(ids.size());
  return {Tensor::from_vector<int64_t>({1, n}, ids), Tensor::from_vector<int64_t>({1}, {n}),
          Tensor::from_vector<float>({3}, {noise, length, noise_w})};
}

std::vector<int64_t> first_sentence_ids() {
  auto j = nlohmann::json::parse(read_file(LOCKSTEP_SOURCE_DIR "/tests/fixtures/piper/sentences.json"));
  return j["sentences"][0]["ids"].get<std::vector<int64_t>>();
}

struct ArchCase {
  int speakers;
  int phonemes;
};

std::vector<Tensor> arch_inputs(const ArchCase& c, Tensor* want = nullptr) {
  const std::string stem = LOCKSTEP_SOURCE_DIR "/tests/fixtures/piper_arch/piper_arch_s" + std::to_string(c.speakers);
  auto data = read_npz(stem + "_n" + std::to_string(c.phonemes) + ".npz");
  std::vector<Tensor> in = {data.at("input"), data.at("input_lengths"), data.at("scales")};
  if (c.speakers > 1) in.push_back(data.at("sid"));
  if (want) *want = data.at("output64");
  return in;
}

std::string arch_model(int speakers) {
  return LOCKSTEP_SOURCE_DIR "/tests/fixtures/piper_arch/piper_arch_s" + std::to_string(speakers) + ".onnx";
}

void expect_no_refusals(const ProbeBackend& probe, const std::string& what) {
  for (const auto& [reason, count] : probe.refusals) ADD_FAILURE() << what << ": cuda refuses " << count << "x " << reason;
}

// Noise on (the random ops and their durations run), two lengths, single and multi speaker.
TEST(VoiceOpsOnCuda, EveryNodeOfThePiperArchSegmentsIsSupported) {
  for (int speakers : {1, 4}) {
    ProbeBackend probe;
    Options options;
    options.threads = 2;
    auto exe = dynamic::compile_dynamic(Model::load(arch_model(speakers)).graph(), probe, options);
    for (int n : {9, 31}) {
      std::vector<Tensor> in = arch_inputs({speakers, n});
      in[2] = Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f});
      RunOptions r;
      r.seed = 7;
      exe->run(in, r);
    }
    expect_no_refusals(probe, "piper_arch_s" + std::to_string(speakers));
  }
}

TEST(VoiceOpsOnCuda, EveryNodeOfTheRealVoiceSegmentsIsSupported) {
  if (!fs::exists(voice_path())) GTEST_SKIP() << "no Piper voice at " << voice_path() << ": run scripts/fetch-voice.sh";
  ProbeBackend probe;
  Options options;
  options.threads = 2;
  auto exe = dynamic::compile_dynamic(Model::load(voice_path()).graph(), probe, options);
  RunOptions r;
  r.seed = 7;
  exe->run(voice_inputs(first_sentence_ids(), 0.667f, 1, 0.8f), r);
  expect_no_refusals(probe, "voice");
}

}  // namespace
}  // namespace lockstep::gpu_test
