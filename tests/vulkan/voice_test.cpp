// A real Piper voice on the vulkan backend. VoiceOpsOnVulkan.* runs the voice through the
// run-time shape stage with a probe backend that asks vulkan's unsupported_reason() about every
// node of every segment (and computes on the cpu): a refused node is listed with its shapes.
// VulkanVoice.* runs the voice on the device against the float64 reference and the cpu.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include "backends/cpu/backend.h"
#include "core/atomic_file.h"
#include "core/hash.h"
#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "support/voice.h"
#include "voices/piper_batch.h"
#include "vulkan/vulkan_test_util.h"

namespace lockstep::vulkan_test {
namespace {

namespace fs = std::filesystem;

// The voice's float32 run against float64: the fixed-shape models' 1e-5. The voice's HiFi-GAN
// amplifies float32 rounding tenfold (tests/models/piper_voice_test.cpp holds the cpu to 5e-5
// for it); vulkan's compensated conv and matmul sums keep it under 1e-5 on "Hello.".
constexpr double kVulkanVoiceRelL2 = 1e-5;

using test::sentence_ids;
using test::voice_inputs;
using test::voice_path;
// The two shortest committed sentences: "Hello." (17 ids) and "Yes!" (13 ids).
std::vector<int64_t> first_sentence_ids() { return sentence_ids(0); }
std::vector<int64_t> yes_sentence_ids() { return sentence_ids(5); }

#define LOCKSTEP_REQUIRE_VOICE()                                                                               \
  do {                                                                                                         \
    if (!fs::exists(voice_path())) GTEST_SKIP() << "no Piper voice at " << voice_path() << ": run scripts/fetch-voice.sh"; \
  } while (0)

TEST(VoiceOpsOnVulkan, EveryNodeOfTheRealVoiceSegmentsIsSupported) {
  LOCKSTEP_REQUIRE_VOICE();
  LOCKSTEP_REQUIRE_VULKAN();  // the reasons depend on the device's features (shaderInt64, shaderFloat64)
  test::RefusalProbe probe(vulkan::backend());
  Options options;
  options.threads = 2;
  auto exe = dynamic::compile_dynamic(Model::load(voice_path()).graph(), probe, options);
  RunOptions r;
  r.seed = 7;
  exe->run(voice_inputs(first_sentence_ids(), 0.667f, 1, 0.8f), r);
  for (const auto& [reason, count] : probe.refusals) ADD_FAILURE() << "vulkan refuses " << count << "x " << reason;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The two shortest sentences on lavapipe: the same audio length as the cpu, within 1e-5 of the
// float64 reference, noise off (scales 0, 1, 0) and, for "Hello.", on (0.667, 1, 0.8, seed 7:
// the random ops draw the cpu's bits).
TEST(VulkanVoice, ShortestSentencesMatchTheReferenceAndTheCpuLength) {
  LOCKSTEP_REQUIRE_VOICE();
  LOCKSTEP_REQUIRE_VULKAN();
  const Model model = Model::load(voice_path());
  Options cpu_options;
  cpu_options.threads = 2;
  auto vk = compile(model, "vulkan", {});
  auto cpu = compile(model, "cpu", cpu_options);
  auto ref = compile(model, "reference", {});
  struct Case {
    const char* what;
    std::vector<int64_t> ids;
    float noise, noise_w;
  };
  for (const Case& c : {Case{"'Hello.' noise off", first_sentence_ids(), 0.0f, 0.0f},
                        Case{"'Hello.' noise on, seed 7", first_sentence_ids(), 0.667f, 0.8f},
                        Case{"'Yes!' noise off", yes_sentence_ids(), 0.0f, 0.0f}}) {
    SCOPED_TRACE(c.what);
    const std::vector<int64_t>& ids = c.ids;
    const std::vector<Tensor> in = voice_inputs(ids, c.noise, 1, c.noise_w);
    RunOptions r;
    r.seed = 7;
    auto t0 = std::chrono::steady_clock::now();
    const Tensor got = vk->run(in, r).at(0).clone();
    const double first = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const Tensor again = vk->run(in, r).at(0).clone();
    const double cached = seconds_since(t0);
    EXPECT_TRUE(same_bits(got, again)) << "a second run changed the bits";
    const Tensor want_cpu = cpu->run(in, r).at(0).clone();
    const Tensor want = ref->run(in, r).at(0);
    const double cpu_err = diff::compare(want_cpu, want).rel_l2;
    ASSERT_EQ(shape_str(got.shape()), shape_str(want_cpu.shape())) << "vulkan and cpu audio lengths differ";
    ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << "vulkan and reference audio lengths differ";
    const diff::Metrics m = diff::compare(got, want);
    const diff::Metrics mc = diff::compare(got, want_cpu);
    EXPECT_LE(m.rel_l2, kVulkanVoiceRelL2) << "vulkan vs reference";
    std::cout << "[   NOTE   ] " << c.what << ": " << ids.size() << " phonemes, " << got.numel()
              << " samples; vulkan vs reference rel_l2 " << m.rel_l2 << ", vs cpu " << mc.rel_l2 << " (cpu vs reference " << cpu_err << "); first run " << first
              << " s (compiles the segments), cached " << cached << " s\n";
  }
}

// Every committed sentence (17 to 263 ids) against ONNX Runtime's audio length (the fixture), the
// cpu's audio, and, up to 120 ids, the float64 reference. Opt-in (LOCKSTEP_VULKAN_VOICE_ALL=1):
// about a minute on lavapipe plus the reference's time.
TEST(VulkanVoice, EverySentenceMatchesOnnxRuntimeLengthAndTheReference) {
  LOCKSTEP_REQUIRE_VOICE();
  LOCKSTEP_REQUIRE_VULKAN();
  if (!std::getenv("LOCKSTEP_VULKAN_VOICE_ALL")) GTEST_SKIP() << "opt-in: set LOCKSTEP_VULKAN_VOICE_ALL=1 (every sentence, minutes)";
  auto ids = nlohmann::json::parse(read_file(lockstep_test::source_dir() + "/tests/fixtures/piper/sentences.json"));
  auto ort = nlohmann::json::parse(read_file(lockstep_test::source_dir() + "/tests/fixtures/piper/ort_lengths.json"));
  const Model model = Model::load(voice_path());
  Options cpu_options;
  cpu_options.threads = 2;
  auto vk = compile(model, "vulkan", {});
  auto cpu = compile(model, "cpu", cpu_options);
  auto ref = compile(model, "reference", {});
  for (size_t i = 0; i < ids["sentences"].size(); ++i) {
    const std::vector<int64_t> s = ids["sentences"][i]["ids"].get<std::vector<int64_t>>();
    SCOPED_TRACE(ids["sentences"][i]["text"].get<std::string>());
    const std::vector<Tensor> in = voice_inputs(s, 0, 1, 0);
    auto t0 = std::chrono::steady_clock::now();
    Tensor got;
    try {
      got = vk->run(in).at(0).clone();
    } catch (const Error& e) {  // docs/vulkan.md "Missing": arenas past one binding's range
      if (e.code() != ErrorCode::LimitExceeded || std::string(e.what()).find("as one storage buffer") == std::string::npos) throw;
      std::cout << "[   NOTE   ] " << s.size() << " ids: not run on this device: " << e.what() << "\n";
      continue;
    }
    const double first = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    vk->run(in);
    const double cached = seconds_since(t0);
    EXPECT_EQ(shape_str(got.shape()), shape_str(ort["sentences"][i]["shape"].get<Shape>())) << "length differs from ONNX Runtime's";
    const Tensor want_cpu = cpu->run(in).at(0);
    ASSERT_EQ(shape_str(got.shape()), shape_str(want_cpu.shape())) << "length differs from the cpu's";
    const double vs_cpu = diff::compare(got, want_cpu).rel_l2;
    std::cout << "[   NOTE   ] " << s.size() << " ids, " << got.numel() << " samples: vs cpu " << vs_cpu;
    if (s.size() <= 120) {  // the float64 reference is the slow side
      const double vs_ref = diff::compare(got, ref->run(in).at(0)).rel_l2;
      EXPECT_LE(vs_ref, kVulkanVoiceRelL2) << "vulkan vs reference";
      std::cout << ", vs reference " << vs_ref;
    }
    std::cout << "; first run " << first << " s, cached " << cached << " s\n";
  }
}

// A ragged batch on vulkan (voices/piper_batch.h): "Yes!", "Hello." and "Yes!" again with other
// seeds and scales, noise on, each row's audio bit-identical to that row run alone on a voice
// compiled separately (batch 1, same seed).
TEST(VulkanVoice, EveryRowOfABatchGetsItsBatchOneBits) {
  LOCKSTEP_REQUIRE_VOICE();
  LOCKSTEP_REQUIRE_VULKAN();
  const Model model = Model::load(voice_path());
  auto single = compile(model, "vulkan", {});
  voices::PiperBatcher batcher(model, "vulkan", {});
  EXPECT_EQ(batcher.lanes(), 1);
  const std::vector<std::vector<int64_t>> rows = {yes_sentence_ids(), first_sentence_ids(), yes_sentence_ids()};
  const std::vector<uint64_t> seeds = {7, 8, 9};
  const std::vector<float> scales = {0.667f, 1.0f, 0.8f, 0.5f, 1.1f, 0.6f, 0.667f, 0.9f, 0.8f};
  const int64_t width = static_cast<int64_t>(rows[1].size());
  std::vector<int64_t> ids(3 * static_cast<size_t>(width), 0), lengths;
  for (size_t b = 0; b < 3; ++b) {
    std::copy(rows[b].begin(), rows[b].end(), ids.begin() + static_cast<std::ptrdiff_t>(b) * width);
    lengths.push_back(static_cast<int64_t>(rows[b].size()));
  }
  std::vector<voices::BatchResult> got =
      batcher.run({Tensor::from_vector<int64_t>({3, width}, ids), Tensor::from_vector<int64_t>({3}, lengths),
                   Tensor::from_vector<float>({3, 3}, scales)},
                  seeds);
  for (size_t b = 0; b < 3; ++b) {
    ASSERT_EQ(got[b].error, "") << "row " << b;
    RunOptions r;
    r.seed = seeds[b];
    const Tensor want = single->run(voice_inputs(rows[b], scales[3 * b], scales[3 * b + 1], scales[3 * b + 2]), r).at(0);
    EXPECT_TRUE(same_bits(got[b].outputs.at(0), want)) << "row " << b << ": not its batch-1 bits";
  }
}

}  // namespace
}  // namespace lockstep::vulkan_test
