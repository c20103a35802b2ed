// Piper voices on the cuda backend. VoiceOpsOnCuda.* needs no GPU: it runs a voice through the
// run-time shape stage with a probe backend that asks cuda's unsupported_reason() about every node
// of every segment and computes on the cpu, so that a node cuda would refuse is found here, with
// its shapes. CudaVoice.* runs the voices on the GPU against their float64 oracles.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "backends/cpu/backend.h"
#include "backends/cpu/parallel.h"
#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/npy.h"
#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "gpu/gpu_test_util.h"
#include "support/voice.h"
#include "voices/piper_batch.h"

namespace lockstep::gpu_test {
namespace {

namespace fs = std::filesystem;

// Answers like cuda (test::RefusalProbe), and also records any value of unknown shape a segment
// hands the backend: the cuda executor gives every value a node reads or writes its bytes.
class ProbeBackend final : public test::RefusalProbe {
 public:
  ProbeBackend() : RefusalProbe(cuda::backend()) {}
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    auto check = [&](ir::ValueId v, const ir::Node& node) {
      if (v == ir::kNoValue) return;
      for (int64_t d : graph.value(v).shape)
        if (d < 0) refusals["unknown shape " + shape_str(graph.value(v).shape) + " of '" + graph.value(v).name + "' at " + ir::op_name(node.op) + " '" + node.name + "'"] += 1;
    };
    ir::Node none;
    none.op = ir::Op::Identity;
    none.name = "(graph input/output)";
    for (ir::ValueId v : graph.inputs) check(v, none);
    for (ir::ValueId v : graph.outputs) check(v, none);
    for (const ir::Node& node : graph.nodes) {
      for (ir::ValueId v : node.inputs) check(v, node);
      for (ir::ValueId v : node.outputs) check(v, node);
      for (const auto& step : node.epilogue) check(step.operand, node);
    }
    return RefusalProbe::compile(graph, options);
  }
};

using test::voice_inputs;
using test::voice_path;
std::vector<int64_t> first_sentence_ids() { return test::sentence_ids(0); }

struct ArchCase {
  int speakers;
  int phonemes;
};

std::vector<Tensor> arch_inputs(const ArchCase& c, Tensor* want = nullptr) {
  const std::string stem = lockstep_test::source_dir() + "/tests/fixtures/piper_arch/piper_arch_s" + std::to_string(c.speakers);
  auto data = read_npz(stem + "_n" + std::to_string(c.phonemes) + ".npz");
  std::vector<Tensor> in = {data.at("input"), data.at("input_lengths"), data.at("scales")};
  if (c.speakers > 1) in.push_back(data.at("sid"));
  if (want) *want = data.at("output64");
  return in;
}

std::string arch_model(int speakers) {
  return lockstep_test::source_dir() + "/tests/fixtures/piper_arch/piper_arch_s" + std::to_string(speakers) + ".onnx";
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

// The Piper-architecture voices (tests/models/piper_arch_test.cpp) on the GPU: the length and
// the float64 PyTorch oracle at scales (0, 1, 0), within the cpu's bar.
constexpr double kArchRelL2 = 1e-5;

TEST(CudaVoice, PiperArchMatchesFloat64PyTorch) {
  LOCKSTEP_REQUIRE_GPU();
  for (int speakers : {1, 4}) {
    auto exe = compile(Model::load(arch_model(speakers)), "cuda");
    for (int n : {9, 31, 77}) {
      SCOPED_TRACE("speakers " + std::to_string(speakers) + ", phonemes " + std::to_string(n));
      Tensor want;
      const std::vector<Tensor> in = arch_inputs({speakers, n}, &want);
      const Tensor got = exe->run(in).at(0).clone();
      ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << "audio length differs from PyTorch's";
      const diff::Metrics m = diff::compare(got, want);
      EXPECT_LE(m.rel_l2, kArchRelL2);
      EXPECT_TRUE(same_bits(got, exe->run(in).at(0))) << "a second run changed the bits";
      std::cout << "[   NOTE   ] piper_arch_s" << speakers << " n" << n << " cuda: rel_l2 " << m.rel_l2 << " against float64 PyTorch over "
                << got.numel() << " samples\n";
    }
  }
}

// Noise on (seed 7): the cuda noise is the cpu's, so cuda has the cpu's length and meets the
// reference; lengths A, B, C, A reuse segments and the two A runs give the same SHA-256.
TEST(CudaVoice, PiperArchNoiseOnAgreesWithCpuAndReference) {
  LOCKSTEP_REQUIRE_GPU();
  Model model = Model::load(arch_model(1));
  auto cuda_exe = compile(model, "cuda");
  Options two;
  two.threads = 2;
  auto cpu_exe = compile(model, "cpu", two);
  auto ref_exe = compile(model, "reference");
  RunOptions seed7;
  seed7.seed = 7;
  std::vector<std::string> shas;
  for (int n : {31, 9, 77, 31}) {
    std::vector<Tensor> in = arch_inputs({1, n});
    in[2] = Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f});
    const Tensor got = cuda_exe->run(in, seed7).at(0).clone();
    const Tensor cpu = cpu_exe->run(in, seed7).at(0);
    ASSERT_EQ(shape_str(got.shape()), shape_str(cpu.shape())) << n << " phonemes: cuda and cpu drew different lengths";
    const Tensor ref = ref_exe->run(in, seed7).at(0);
    ASSERT_EQ(shape_str(got.shape()), shape_str(ref.shape()));
    const double rel = diff::compare(got, ref).rel_l2;
    EXPECT_LE(rel, kArchRelL2) << n << " phonemes, seed 7";
    shas.push_back(sha256_hex(got));
    std::cout << "[   NOTE   ] piper_arch_s1 n" << n << " noise on, seed 7: cuda vs reference rel_l2 " << rel << ", cuda vs cpu "
              << diff::compare(got, cpu).rel_l2 << ", " << got.numel() << " samples, sha256 " << shas.back().substr(0, 16) << "\n";
  }
  EXPECT_EQ(shas.front(), shas.back()) << "lengths A, B, C, A: the two A runs differ";
}

// cuda plans its segments once (Backend::plans_memory: the pipeline leaves them unplanned and the
// executor's in-place plan, or the plain one where that changes nothing, is the only one). Oracle:
// cuda as before, through a wrapper that asks the pipeline for its plan first: the same bits, eager
// first runs and graph replays, noise off and on.
class PipelinePlannedCuda final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  bool available(std::string* why) const override { return cuda::backend().available(why); }
  std::optional<std::string> unsupported_reason(const ir::Graph& g, const ir::Node& n) const override {
    return cuda::backend().unsupported_reason(g, n);
  }
  std::unique_ptr<Executable> compile(const ir::Graph& g, const Options& o) const override {
    ++(g.plan ? came_planned : came_unplanned);
    return cuda::backend().compile(g, o);
  }
  mutable int came_planned = 0, came_unplanned = 0;
};

TEST(CudaVoice, SegmentsPlannedOnceGiveThePlannedTwiceBits) {
  LOCKSTEP_REQUIRE_GPU();
  ASSERT_TRUE(cuda::backend().plans_memory());
  Model model = Model::load(arch_model(1));
  PipelinePlannedCuda twice;
  auto once_exe = dynamic::compile_dynamic(model.graph(), cuda::backend(), Options{});
  auto twice_exe = dynamic::compile_dynamic(model.graph(), twice, Options{});
  for (bool noise : {false, true}) {
    RunOptions seed7;
    seed7.seed = 7;
    for (int n : {31, 9, 77, 31}) {
      SCOPED_TRACE(std::to_string(n) + " phonemes, noise " + (noise ? "on" : "off"));
      std::vector<Tensor> in = arch_inputs({1, n});
      if (noise) in[2] = Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f});
      for (int run = 0; run < 2; ++run)  // the first is eager where the length is new, the second a replay
        EXPECT_TRUE(same_bits(once_exe->run(in, seed7).at(0).clone(), twice_exe->run(in, seed7).at(0)));
    }
  }
  EXPECT_EQ(twice.came_unplanned, 0);
  EXPECT_GT(twice.came_planned, 1);
  EXPECT_EQ(dynamic::stats(*once_exe)->segments_compiled, dynamic::stats(*twice_exe)->segments_compiled);
  EXPECT_GT(dynamic::stats(*once_exe)->cached_bytes, 0);
}

// Segment values that only other segments read stay in device memory (run_resident): the same
// bits as every value through the host (LOCKSTEP_SEGMENT_VALUES=host), in eager first runs and in
// graph replay, nothing fetched back unforeseen, fewer bytes to the host and fewer waits.
TEST(CudaVoice, SegmentValuesStayOnTheDeviceWithTheHostRoutesBits) {
  LOCKSTEP_REQUIRE_GPU();
  Model model = Model::load(arch_model(1));
  ::setenv("LOCKSTEP_SEGMENT_VALUES", "host", 1);
  auto via_host = compile(model, "cuda");
  ::unsetenv("LOCKSTEP_SEGMENT_VALUES");
  auto resident = compile(model, "cuda");
  RunOptions seed7;
  seed7.seed = 7;
  for (int n : {31, 9, 77, 31}) {
    for (int round = 0; round < 3; ++round) {  // eager first run, capture, replay
      SCOPED_TRACE(std::to_string(n) + " phonemes, run " + std::to_string(round));
      std::vector<Tensor> in = arch_inputs({1, n});
      in[2] = Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f});
      const Tensor a = resident->run(in, seed7).at(0).clone();
      const dynamic::Stats sr = *dynamic::stats(*resident);
      const Tensor b = via_host->run(in, seed7).at(0).clone();
      const dynamic::Stats sh = *dynamic::stats(*via_host);
      EXPECT_TRUE(same_bits(a, b)) << "values kept on the device changed the audio";
      EXPECT_GT(sr.last_run_values_on_device, 0);
      EXPECT_EQ(sr.last_run_downloads, 0);
      EXPECT_EQ(sh.last_run_values_on_device, 0);
      EXPECT_LT(sr.last_run_bytes_out, sh.last_run_bytes_out);
      EXPECT_LT(sr.last_run_bytes_in, sh.last_run_bytes_in);
      // Each segment still ends in a value the host reads (a NonZero's mask, the frame count, the audio).
      EXPECT_LE(sr.last_run_host_reads, sh.last_run_host_reads);
      if (round == 2)
        std::cout << "[   NOTE   ] piper_arch_s1 n" << n << ": " << sr.last_run_segments << " segments, "
                  << sr.last_run_host_reads << " hand the host values (were " << sh.last_run_host_reads << "), "
                  << sr.last_run_values_on_device << " values stay on the device; bytes to/from the device "
                  << sr.last_run_bytes_in << "/" << sr.last_run_bytes_out << " (were " << sh.last_run_bytes_in << "/"
                  << sh.last_run_bytes_out << ")\n";
    }
  }
}

// The real voice (scripts/fetch-voice.sh) on its first sentence, noise off and on: cuda has the
// cpu's length; against the reference within the cpu's bar (piper_voice_test.cpp says why 5e-5).
TEST(CudaVoice, RealVoiceFirstSentence) {
  LOCKSTEP_REQUIRE_GPU();
  if (!fs::exists(voice_path())) GTEST_SKIP() << "no Piper voice at " << voice_path() << ": run scripts/fetch-voice.sh";
  Model model = Model::load(voice_path());
  auto cuda_exe = compile(model, "cuda");
  Options two;
  two.threads = 2;
  auto cpu_exe = compile(model, "cpu", two);
  auto ref_exe = compile(model, "reference");
  for (bool noise : {false, true}) {
    RunOptions r;
    r.seed = 7;
    const auto in = noise ? voice_inputs(first_sentence_ids(), 0.667f, 1, 0.8f) : voice_inputs(first_sentence_ids(), 0, 1, 0);
    const Tensor got = cuda_exe->run(in, r).at(0).clone();
    const Tensor cpu = cpu_exe->run(in, r).at(0);
    ASSERT_EQ(shape_str(got.shape()), shape_str(cpu.shape())) << "cuda and cpu audio lengths differ";
    const Tensor ref = ref_exe->run(in, r).at(0);
    const double rel = diff::compare(got, ref).rel_l2;
    EXPECT_LE(rel, 5e-5);
    EXPECT_TRUE(same_bits(got, cuda_exe->run(in, r).at(0))) << "a second run changed the bits";
    std::cout << "[   NOTE   ] real voice, first sentence, " << (noise ? "noise on (seed 7)" : "noise off") << ": cuda vs reference rel_l2 "
              << rel << ", cpu vs reference " << diff::compare(cpu, ref).rel_l2 << ", " << got.numel() << " samples\n";
  }
}

// A batch's lanes on cuda (one executable and stream each, running at once): every row has its
// batch-1 bits with one lane and with three, whatever ran beside it (docs/piper.md "Batches").
TEST(CudaVoice, BatchLanesGiveEachRowItsBatchOneBits) {
  LOCKSTEP_REQUIRE_GPU();
  if (!fs::exists(voice_path())) GTEST_SKIP() << "no Piper voice at " << voice_path() << ": run scripts/fetch-voice.sh";
  const Model model = Model::load(voice_path());
  auto single = compile(model, "cuda");
  const std::vector<size_t> order = {3, 0, 5, 1, 4, 2, 0};  // long and short mixed, one sentence twice
  std::vector<std::vector<int64_t>> rows;
  int64_t width = 0;
  for (size_t k : order) {
    rows.push_back(test::sentence_ids(k));
    width = std::max<int64_t>(width, static_cast<int64_t>(rows.back().size()));
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> ids(static_cast<size_t>(n * width), 0), lengths;
  std::vector<float> scales;
  std::vector<uint64_t> seeds;
  for (int64_t b = 0; b < n; ++b) {
    std::copy(rows[b].begin(), rows[b].end(), ids.begin() + b * width);
    lengths.push_back(static_cast<int64_t>(rows[b].size()));
    scales.insert(scales.end(), {b % 2 ? 0.667f : 0.0f, 1.0f + 0.05f * static_cast<float>(b), 0.8f});
    seeds.push_back(100 + static_cast<uint64_t>(b));
  }
  const std::vector<Tensor> batch = {Tensor::from_vector<int64_t>({n, width}, ids), Tensor::from_vector<int64_t>({n}, lengths),
                                     Tensor::from_vector<float>({n, 3}, scales)};
  for (int lanes : {1, 3, 0}) {  // 0: cuda's default, 8 lanes on a host of 8 CPUs or more
    voices::PiperBatcher batcher(model, "cuda", {}, lanes);
    if (lanes == 0) EXPECT_EQ(batcher.lanes(), std::min(8, std::max(1, cpu::usable_cpus())));
    for (int round = 0; round < 2; ++round) {  // the second: each length on a lane that has it cached
      const std::vector<voices::BatchResult> got = batcher.run(batch, seeds);
      for (int64_t b = 0; b < n; ++b) {
        const std::string at = std::to_string(lanes) + " lanes, round " + std::to_string(round) + ", row " + std::to_string(b);
        ASSERT_EQ(got[b].error, "") << at;
        RunOptions r;
        r.seed = seeds[b];
        const Tensor want = single->run(voice_inputs(rows[b], scales[3 * b], scales[3 * b + 1], scales[3 * b + 2]), r).at(0);
        EXPECT_TRUE(same_bits(got[b].outputs.at(0), want)) << at << ": not its batch-1 bits";
      }
    }
  }
}

}  // namespace
}  // namespace lockstep::gpu_test
