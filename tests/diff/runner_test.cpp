// Runners (diff/runner.h): the protocol's file names, spawning with logs and timeouts, and a
// shell-script runner that speaks the protocol without Python.
#include "diff/runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/npy.h"
#include "support/fixtures.h"

namespace lockstep::diff {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  std::string d = test::temp_dir() + "/runner_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(RunnerProtocol, FileStemsEscapeEveryByteOutsideTheSafeSet) {
  EXPECT_EQ(runner_file_stem("/flows.0/enc/Conv_output_0"), "_flows.0_enc_Conv_output_0");
  EXPECT_EQ(runner_file_stem("a b:c"), "a_b_c");
  EXPECT_EQ(runner_file_stem("x-y.z_w"), "x-y.z_w");
  EXPECT_EQ(runner_file_stem("\xc3\xa9"), "__");  // UTF-8 é: two bytes, two underscores
}

TEST(RunnerProtocol, ParseTellsBackendsFromCommands) {
  EXPECT_EQ(Runner::parse("cpu").kind(), Runner::Kind::Backend);
  EXPECT_TRUE(Runner::parse("reference").is_reference());
  EXPECT_EQ(Runner::parse("python3 runners/ort_runner.py").kind(), Runner::Kind::Command);
  EXPECT_THROW(Runner::parse(""), Error);
  EXPECT_THROW(Runner::command("   "), Error);
  EXPECT_THROW(Runner::backend("tpu"), Error);
}

TEST(RunnerProtocol, SpawnReportsExitCodeLogAndTimeout) {
  std::string d = fresh_dir("spawn");
  SpawnResult ok = spawn_command("echo", {"hello", "it's"}, d + "/a.log", 10);
  EXPECT_EQ(ok.exit_code, 0);
  std::ifstream log(d + "/a.log");
  std::string line;
  std::getline(log, line);
  EXPECT_EQ(line, "hello it's");  // arguments arrive verbatim, quotes included
  EXPECT_EQ(spawn_command("exit 7 #", {}, d + "/b.log", 10).exit_code, 7);
  SpawnResult slow = spawn_command("sleep 30 #", {}, d + "/c.log", 0.3);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_LT(slow.seconds, 5);
}

// A runner in sh: copies input x to the wanted output (identity model), or fails on request.
std::string write_sh_runner(const std::string& dir) {
  std::string path = dir + "/copy_runner.sh";
  std::ofstream f(path);
  f << "#!/bin/sh\n"
       "model=$1; in=$2; out=$3; shift 3\n"
       "[ -f \"$model\" ] || { echo \"no model $model\" >&2; exit 3; }\n"
       "for name in \"$@\"; do\n"
       "  stem=$(printf '%s' \"$name\" | sed 's/[^A-Za-z0-9._-]/_/g')\n"
       "  [ \"$stem\" = fail ] && { echo 'planted failure' >&2; exit 4; }\n"
       "  [ \"$stem\" = missing ] && continue\n"
       "  cp \"$in/x.npy\" \"$out/$stem.npy\"\n"
       "done\n";
  f.close();
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

TEST(RunnerProtocol, CommandRunnerWritesInputsAndReadsNamedOutputs) {
  std::string d = fresh_dir("sh");
  Runner r = Runner::command("sh " + write_sh_runner(d));
  std::string model = d + "/model.onnx";
  std::ofstream(model) << "not used";
  Tensor x = Tensor::from_vector<float>({2}, {1.5f, -2.0f});
  NamedTensors out = r.run(model, {{"x", x}}, {"a/b", "c d"}, d + "/work");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("a/b").data<float>()[1], -2.0f);
  EXPECT_TRUE(fs::exists(d + "/work/inputs/x.npy"));
  EXPECT_TRUE(fs::exists(d + "/work/outputs/a_b.npy"));

  try {
    r.run(model, {{"x", x}}, {"fail"}, d + "/work2");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("exit status 4"), std::string::npos) << what;
    EXPECT_NE(what.find("planted failure"), std::string::npos) << what;  // the log's tail
  }
  EXPECT_THROW(r.run(model, {{"x", x}}, {"missing"}, d + "/work3"), Error);
  // Two wanted names with one file name are refused before anything runs.
  EXPECT_THROW(r.run(model, {{"x", x}}, {"a/b", "a_b"}, d + "/work4"), Error);
  Runner slow = Runner::command("sleep 30 #");
  slow.timeout_seconds = 0.3;
  EXPECT_THROW(slow.run(model, {{"x", x}}, {"y"}, d + "/work5"), Error);
}

}  // namespace
}  // namespace lockstep::diff
