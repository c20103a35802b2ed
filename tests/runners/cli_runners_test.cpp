// `lockstep extract` and `lockstep reduce` from the command line: results, exit codes, clear
// errors for bad arguments (and no files left behind), runners through the CLI.
#include "support/paths.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/npy.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "runners/python_env.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = lockstep_test::cli_command();  // the binary, or the emulator and the binary
constexpr int64_t kFrames = 128;  // the default's topology, short: fast reference traces

struct Result {
  int rc = -1;
  std::string out, err;
};

class RunnersCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_runners_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = path("flow.onnx");
    onnx::export_model(zoo::seed_flow_graph(0, kFrames), model_);
    auto inputs = zoo::seed_flow_inputs(kFrames);
    write_npy(path("z_p.npy"), inputs[0]);
    write_npy(path("y_mask.npy"), inputs[1]);
    inputs_arg_ = " --inputs " + path("z_p.npy") + " " + path("y_mask.npy");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  Result lockstep(const std::string& args) const {
    std::string out = path("stdout.txt"), err = path("stderr.txt");
    int status = std::system((kBinary + " " + args + " >" + out + " 2>" + err).c_str());
    Result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }
  fs::path dir_;
  std::string model_, inputs_arg_;
};

TEST_F(RunnersCli, ExtractWritesAValidSubgraph) {
  ir::Graph g = onnx::import_model(model_);
  std::string tensor = g.value(g.nodes[40].outputs[0]).name;
  Result r = lockstep("extract " + model_ + " --outputs '" + tensor + "' -o " + path("sub.onnx"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("re-imported, shapes checked"), std::string::npos) << r.out;
  ir::Graph sub = onnx::import_model(path("sub.onnx"));
  EXPECT_EQ(sub.nodes.back().name, g.nodes[40].name);
  EXPECT_LE(sub.nodes.size(), 41u);
  Result j = lockstep("extract " + model_ + " --outputs '" + tensor + "' -o " + path("sub2.onnx") +
                      " --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["nodes"], sub.nodes.size());
}

TEST_F(RunnersCli, ExtractBadArgumentsAreClearAndWriteNothing) {
  Result r = lockstep("extract " + model_ + " --outputs no_such_tensor -o " + path("x.onnx"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown output tensor 'no_such_tensor'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("x.onnx")));
  EXPECT_EQ(lockstep("extract " + model_ + " -o " + path("x.onnx")).rc, 2);  // --outputs missing
  Result missing = lockstep("extract " + path("nope.onnx") + " --outputs a -o " + path("x.onnx"));
  EXPECT_EQ(missing.rc, 1);
  EXPECT_FALSE(fs::exists(path("x.onnx")));
}

TEST_F(RunnersCli, ReduceOnCleanBackendsReportsAgreementAndExitsZero) {
  Result r = lockstep("reduce " + model_ + inputs_arg_ + " --ref reference --test cpu -o " +
                      path("repro"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("agree"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("repro")));
}

TEST_F(RunnersCli, ReduceBadArgumentsAreClear) {
  Result typo = lockstep("reduce " + model_ + inputs_arg_ + " --test cpuu -o " + path("repro"));
  EXPECT_EQ(typo.rc, 2);
  EXPECT_NE(typo.err.find("unknown backend 'cpuu'"), std::string::npos) << typo.err;
  Result synth =
      lockstep("reduce " + model_ + inputs_arg_ + " --synthetic-weights 0.1,x -o " + path("repro"));
  EXPECT_EQ(synth.rc, 2);
  EXPECT_NE(synth.err.find("SIGMA,SEED"), std::string::npos) << synth.err;
  EXPECT_EQ(lockstep("reduce " + model_ + inputs_arg_).rc, 2);  // -o missing
  fs::create_directories(path("full"));
  write_file_atomic(path("full/x"), "x");
  Result full = lockstep("reduce " + model_ + inputs_arg_ + " -o " + path("full"));
  EXPECT_EQ(full.rc, 2);
  EXPECT_NE(full.err.find("not an empty folder"), std::string::npos) << full.err;
  EXPECT_FALSE(fs::exists(path("repro")));
}

TEST_F(RunnersCli, ReduceThroughOrtRunners) {
  std::string python = test::find_python("onnxruntime onnx numpy");
  if (python.empty())
    GTEST_SKIP() << "no python3 with onnxruntime and onnx: reduce through ORT NOT tested";
  Result clean = lockstep("reduce " + model_ + inputs_arg_ + " --test '" +
                          test::ort_runner_command(python) + "' -o " + path("clean"));
  EXPECT_EQ(clean.rc, 0) << clean.err;
  EXPECT_FALSE(fs::exists(path("clean")));

  ir::Graph g = onnx::import_model(model_);
  std::string node = g.nodes[70].name;
  Result r = lockstep("reduce " + model_ + inputs_arg_ + " --test \"" +
                      test::faulty_ort_command(python, node, "offset", 0.5) + "\" -o " +
                      path("repro") + " --synthetic-weights 0.1,0");
  EXPECT_EQ(r.rc, 1) << r.err;  // a divergence was found and reduced
  auto manifest = nlohmann::json::parse(read_file(path("repro/manifest.json")));
  EXPECT_EQ(manifest["node"]["name"], node);
  EXPECT_EQ(manifest["recheck"]["diverges"], true);
  EXPECT_EQ(manifest["synthetic_weights"]["diverges"], true);
  ir::Graph back = onnx::import_model(path("repro/model.onnx"));
  EXPECT_EQ(back.nodes.size(), 1u);
  EXPECT_NE(r.out.find("still diverges"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lockstep
