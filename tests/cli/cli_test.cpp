// The `lockstep` binary end to end: exit codes, files written (or not), reports.
// Expected numbers come from the shared fixtures (PyTorch float64 oracles), not from lockstep.
#include "support/paths.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/npy.h"
#include "diff/metrics.h"
#include "support/voice.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = lockstep_test::cli_command();  // the binary, or the emulator and the binary
const std::string kModel = lockstep_test::source_dir() + "/../shared/models/vits_seed_174";
constexpr double kCpuRelL2 = diff::kAgreeRelL2;  // the project's pass line against the oracle

struct Result {
  int rc = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_cli_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `lockstep ARGS` with stdout and stderr captured to files.
  Result lockstep(const std::string& args) const {
    std::string out = path("stdout.txt"), err = path("stderr.txt");
    int status = std::system((kBinary + " " + args + " >" + out + " 2>" + err).c_str());
    Result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }
  size_t files_in(const std::string& folder) const {
    if (!fs::exists(folder)) return 0;
    return static_cast<size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator{}));
  }
  fs::path dir_;
};

TEST_F(CliTest, InfoCountsTheSharedModel) {
  Result r = lockstep("info " + kModel + ".onnx");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("nodes:      174"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Slice 49"), std::string::npos) << r.out;
  Result j = lockstep("info " + kModel + ".onnx --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  auto report = nlohmann::json::parse(j.out);
  EXPECT_EQ(report["nodes"], 174);
  EXPECT_EQ(report["ops"]["Conv"], 34);
  EXPECT_EQ(report["opset"], 17);
  EXPECT_EQ(report["outputs"][0]["shape"], "[1,144,1024]");
  // The file's 265 initializers as python's onnx.numpy_helper counts them: 881598 elements, 3527184 bytes.
  EXPECT_EQ(report["parameters"]["tensors"], 265);
  EXPECT_EQ(report["parameters"]["elements"], 881598);
  EXPECT_EQ(report["parameters"]["bytes"], 3527184);
  // No Piper voice: float32 unless asked; a prefix every node name has takes all 34 convs.
  EXPECT_EQ(report["f64_accumulate"]["prefixes"].size(), 0u) << j.out;
  EXPECT_NE(r.out.find("float64 accumulation: none"), std::string::npos) << r.out;
  Result f = lockstep("info " + kModel + ".onnx --f64-accumulate / --json");
  ASSERT_EQ(f.rc, 0) << f.err;
  EXPECT_EQ(nlohmann::json::parse(f.out)["f64_accumulate"]["conv_matmul_nodes"], 34) << f.out;
}

TEST_F(CliTest, InfoShapesListsPreparedNodes) {
  Result r = lockstep("info " + kModel + ".onnx --shapes --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_TRUE(report["prepared"].contains("node_shapes")) << r.out;
  EXPECT_EQ(report["prepared"]["node_shapes"].back()["shapes"][0], "[1,144,1024]");
}

TEST_F(CliTest, RunWritesOutputsMatchingTheOracle) {
  std::string out = path("out");
  Result r = lockstep("run " + kModel + ".onnx --backend cpu --threads 2 --inputs " + kModel + ".z_p.npy " + kModel +
                      ".y_mask.npy -o " + out + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["outputs"].size(), 1u);
  Tensor got = read_npy(report["outputs"][0]["file"].get<std::string>());
  diff::Metrics m = diff::compare(got, read_npy(kModel + ".ref64.npy"));
  EXPECT_TRUE(m.shape_match);
  EXPECT_LE(m.rel_l2, kCpuRelL2);
  EXPECT_EQ(files_in(out), 1u);  // no temporary files left
}

TEST_F(CliTest, RunOnTheReferenceWithNpzInputs) {
  write_npz(path("in.npz"), {{"z_p", read_npy(kModel + ".z_p.npy")}, {"y_mask", read_npy(kModel + ".y_mask.npy")}});
  Result r = lockstep("run " + kModel + ".onnx --backend reference --inputs-npz " + path("in.npz") + " -o " + path("o"));
  ASSERT_EQ(r.rc, 0) << r.err;
  Tensor got = read_npy(path("o/_flows.0_enc_in_layers.1_Conv_output_0.npy"));
  EXPECT_EQ(got.dtype(), DType::Float64);
  EXPECT_LE(diff::compare(got, read_npy(kModel + ".ref64.npy")).rel_l2, 1e-12);
}

TEST_F(CliTest, CompareReferenceAndCpuAgrees) {
  Result r = lockstep("compare " + kModel + ".onnx --ref reference --test cpu --threads 2 --json --input z_p=" + kModel +
                      ".z_p.npy --input y_mask=" + kModel + ".y_mask.npy");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["verdict"], "agree");
  EXPECT_LE(report["outputs"][0]["rel_l2"].get<double>(), kCpuRelL2);
  EXPECT_EQ(report["outputs"][0]["sha256_test"].get<std::string>().size(), 64u);
}

TEST_F(CliTest, BadArgumentsFailCleanlyAndWriteNothing) {
  std::string out = path("bad");
  struct Case {
    std::string args;
    int rc;
  };
  std::string inputs = " --inputs " + kModel + ".z_p.npy " + kModel + ".y_mask.npy -o " + out;
  write_file_atomic(path("garbage.onnx"), "this is not a protobuf");
  write_file_atomic(path("short.npy"), "\x93NUMPY\x01");
  for (const Case& c : std::vector<Case>{
           {"run " + kModel + ".onnx --backend nope" + inputs, 2},
           {"run " + kModel + ".onnx --no-such-flag" + inputs, 2},
           {"frobnicate", 2},
           {"run " + path("missing.onnx") + inputs, 1},
           {"run " + path("garbage.onnx") + inputs, 1},
           {"run " + kModel + ".onnx --inputs " + kModel + ".y_mask.npy " + kModel + ".z_p.npy -o " + out, 1},
           {"run " + kModel + ".onnx --inputs " + path("short.npy") + " -o " + out, 1},
           {"run " + kModel + ".onnx --inputs " + kModel + ".z_p.npy -o " + out, 1},  // missing y_mask
           {"run " + kModel + ".onnx --inputs " + kModel + ".ref64.npy " + kModel + ".y_mask.npy -o " + out, 1},
           {"run " + kModel + ".onnx --input nope=" + kModel + ".z_p.npy -o " + out, 2},
           {"compare " + kModel + ".onnx --test nope", 2},
           {"check --fresh 0", 2},
       }) {
    Result r = lockstep(c.args);
    EXPECT_EQ(r.rc, c.rc) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("lockstep: ", 0), 0u) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_EQ(files_in(out), 0u) << c.args;
  }
}

TEST_F(CliTest, CheckTheEmbeddedDefaultPasses) {
  Result r = lockstep("check --fresh 2 --threads 2");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("#49 flow.6/post/Conv"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#174 flow.0/enc/in_layers.1/Conv"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fresh#2"), std::string::npos);
  EXPECT_NE(r.out.find("A2"), std::string::npos);
  EXPECT_NE(r.out.find("\nPASS"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << "no progress output when stderr is not a terminal: " << r.err;
}

TEST_F(CliTest, CheckJsonOnASharedModelWithDrawnInputs) {
  Result r = lockstep("check " + kModel + ".onnx --fresh 1 --threads 2 --seed 7 --json");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["verdict"], "PASS");
  EXPECT_EQ(report["input_seed"], 7);
  const auto& cpu = report["backends"][0];
  EXPECT_EQ(cpu["backend"], "cpu");
  EXPECT_TRUE(cpu["identical_across_aba"].get<bool>());
  ASSERT_EQ(cpu["runs"].size(), 3u);  // fresh#1, A1, A2
  bool compared = false;
  for (const auto& a : cpu["runs"][1]["anchors"])
    if (a.contains("cosine")) {
      compared = true;
      EXPECT_GE(a["cosine"].get<double>(), diff::kAgreeCosine);
    }
  EXPECT_TRUE(compared);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

class CliDefaultTest : public ::testing::Test {
 protected:
  std::string dir_ = (std::filesystem::temp_directory_path() / ("lockstep_cli_default_" + std::to_string(::getpid()))).string();
  void TearDown() override { std::filesystem::remove_all(dir_); }
  int run(const std::string& args) {
    int status = std::system((kBinary + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
};

// The written default re-imports and the reference and cpu agree on it with its own inputs.
TEST_F(CliDefaultTest, WritesTheEmbeddedDefaultAsOnnx) {
  ASSERT_EQ(run("default -o " + dir_), 0);
  const std::string inputs = " --inputs " + dir_ + "/z_p.npy " + dir_ + "/y_mask.npy";
  EXPECT_EQ(run("compare " + dir_ + "/seed_flow.onnx --ref reference --test cpu --threads 1" + inputs), 0);
}

// --max-memory below the planned arena is a clean error that writes nothing.
TEST_F(CliDefaultTest, MaxMemoryBelowThePlanFailsCleanly) {
  ASSERT_EQ(run("default -o " + dir_), 0);
  const std::string out = dir_ + "/out";
  EXPECT_EQ(run("run " + dir_ + "/seed_flow.onnx --inputs " + dir_ + "/z_p.npy " + dir_ +
                "/y_mask.npy --max-memory 4096 -o " + out),
            1);
  EXPECT_FALSE(std::filesystem::exists(out) && !std::filesystem::is_empty(out));
}

// --ragged: a Piper voice's padded batch as its utterances; each row's file holds the bits of that
// row run alone (the same command on a batch of one); a model that is no voice is refused.
TEST_F(CliTest, RaggedRunsEachRowOfAVoiceAsItsOwnUtterance) {
  const std::string voice = test::voice_path();
  if (!fs::exists(voice)) GTEST_SKIP() << "no Piper voice at " << voice;
  const std::vector<std::vector<int64_t>> rows = {test::sentence_ids(0), test::sentence_ids(5), test::sentence_ids(1)};
  const int64_t width = static_cast<int64_t>(rows[2].size());
  std::vector<int64_t> ids(3 * static_cast<size_t>(width), 0), lengths;
  for (size_t b = 0; b < 3; ++b) {
    std::copy(rows[b].begin(), rows[b].end(), ids.begin() + static_cast<std::ptrdiff_t>(b) * width);
    lengths.push_back(static_cast<int64_t>(rows[b].size()));
  }
  write_npy(path("ids.npy"), Tensor::from_vector<int64_t>({3, width}, ids));
  write_npy(path("lengths.npy"), Tensor::from_vector<int64_t>({3}, lengths));
  write_npy(path("scales.npy"), Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f}));
  Result r = lockstep("run " + voice + " --ragged --seed 3 --inputs " + path("ids.npy") + " " + path("lengths.npy") + " " +
                      path("scales.npy") + " -o " + path("batch") + " --wav " + path("batch/a.wav"));
  ASSERT_EQ(r.rc, 0) << r.err;
  for (size_t b = 0; b < 3; ++b) {
    const auto n = static_cast<int64_t>(rows[b].size());
    write_npy(path("one.npy"), Tensor::from_vector<int64_t>({1, n}, rows[b]));
    write_npy(path("one_len.npy"), Tensor::from_vector<int64_t>({1}, {n}));
    Result one = lockstep("run " + voice + " --seed 3 --inputs " + path("one.npy") + " " + path("one_len.npy") + " " +
                          path("scales.npy") + " -o " + path("one"));
    ASSERT_EQ(one.rc, 0) << one.err;
    const Tensor alone = read_npy(path("one/output.npy"));
    const Tensor in_batch = read_npy(path("batch/output." + std::to_string(b) + ".npy"));
    ASSERT_EQ(in_batch.shape(), alone.shape()) << "row " << b;
    EXPECT_EQ(std::memcmp(in_batch.raw(), alone.raw(), alone.nbytes()), 0) << "row " << b << ": not its bits alone";
    EXPECT_TRUE(fs::exists(path("batch/a." + std::to_string(b) + ".wav"))) << "row " << b;
  }
  Result no_voice = lockstep("run " + kModel + ".onnx --ragged -o " + path("x"));
  EXPECT_EQ(no_voice.rc, 2) << no_voice.err;
  EXPECT_NE(no_voice.err.find("--ragged: the model is not a Piper voice"), std::string::npos) << no_voice.err;
}

}  // namespace
}  // namespace lockstep
