// `lockstep bisect`, `determinism` and `bisect-passes` end to end on the embedded default: clean
// backends agree (exit 0) and bad arguments are clear errors (exit 2, nothing written).
#include "support/paths.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = lockstep_test::cli_command();  // the binary, or the emulator and the binary

struct Result {
  int rc = -1;
  std::string out, err;
};

class CliDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_cli_diff_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  Result lockstep(const std::string& args) const {
    std::string out = path("stdout.txt"), err = path("stderr.txt");
    int status = std::system((kBinary + " " + args + " >" + out + " 2>" + err).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_file(out), read_file(err)};
  }
  fs::path dir_;
};

TEST_F(CliDiffTest, BisectCleanCpuAgreesInEveryFormat) {
  Result j = lockstep("bisect --test cpu --format json --threads 1");
  ASSERT_EQ(j.rc, 0) << j.err << j.out.substr(0, 2000);
  auto report = nlohmann::json::parse(j.out);
  EXPECT_TRUE(report["agrees"].get<bool>());
  EXPECT_TRUE(report["first_divergent"].is_null());
  EXPECT_GT(report["nodes"].size(), 100u);
  for (const auto& n : report["nodes"]) EXPECT_EQ(n["verdict"], "ok") << n["onnx_name"];

  const std::string html = path("report.html");
  Result h = lockstep("bisect --format html -o " + html + " --threads 1");
  ASSERT_EQ(h.rc, 0) << h.err;
  EXPECT_NE(h.out.find("agreement: all"), std::string::npos) << h.out;
  EXPECT_NE(read_file(html).find("<svg id=\"plot\""), std::string::npos);
}

TEST_F(CliDiffTest, BisectBadArgumentsAreUsageErrors) {
  Result typo = lockstep("bisect --test cdua");
  EXPECT_EQ(typo.rc, 2);
  EXPECT_NE(typo.err.find("unknown backend 'cdua'"), std::string::npos) << typo.err;
  Result fmt = lockstep("bisect --format pdf");
  EXPECT_EQ(fmt.rc, 2);
  EXPECT_NE(fmt.err.find("--format must be text, markdown, json or html"), std::string::npos) << fmt.err;
  Result html = lockstep("bisect --format html");
  EXPECT_EQ(html.rc, 2);
  EXPECT_NE(html.err.find("needs -o"), std::string::npos) << html.err;
  Result local = lockstep("bisect --local sometimes");
  EXPECT_EQ(local.rc, 2);
  EXPECT_NE(local.err.find("--local must be"), std::string::npos) << local.err;
  Result missing = lockstep("bisect " + path("absent.onnx") + " -o " + path("r.txt"));
  EXPECT_NE(missing.rc, 0);
  EXPECT_FALSE(fs::exists(path("r.txt")));
}

TEST_F(CliDiffTest, DeterminismCleanCpuPasses) {
  Result r = lockstep("determinism --runs 2 --threads 1");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("PASS: every output bit-identical across 2 fresh processes"), std::string::npos) << r.out;
  for (const char* mode : {"fresh#1", "fresh#2", "A1 again", "A2", "A1 after A2"})
    EXPECT_NE(r.out.find(mode), std::string::npos) << mode;
  Result bad = lockstep("determinism --backend opencl");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("unknown backend 'opencl'"), std::string::npos) << bad.err;
  Result runs = lockstep("determinism --runs 0");
  EXPECT_EQ(runs.rc, 2) << runs.err;
}

TEST_F(CliDiffTest, BisectPassesCleanCpuPasses) {
  Result r = lockstep("bisect-passes --threads 1");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("PASS: no pass application moves the output"), std::string::npos) << r.out;
  Result bad = lockstep("bisect-passes --backend tpu");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("unknown backend 'tpu'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace lockstep
