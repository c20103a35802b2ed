// Protocol v2 (docs/runner-protocol.md): one runner process serving many requests, and the checks
// it makes possible. runners/stateful_runner.py stands for the report's runtime: right in a fresh
// process, wrong from its second compile in one process. Oracles: ONNX Runtime (inside the
// runner) and lockstep's float64 reference.
#include "support/paths.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/npy.h"
#include "diff/runner.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "runners/python_env.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = lockstep_test::cli_command();  // the binary, or the emulator and the binary
constexpr int64_t kFrames = 128;           // the default's topology, short: fast traces and sessions

struct Result {
  int rc = -1;
  std::string out, err;
};

class PersistentRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = test::find_python("onnxruntime onnx numpy");
    if (python_.empty()) GTEST_SKIP() << "SKIPPED: no Python with onnxruntime, onnx and numpy (scripts/setup.sh makes .venv)";
    dir_ = fs::temp_directory_path() / ("lockstep_persistent_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = path("flow.onnx");
    graph_ = zoo::seed_flow_graph(0, kFrames);
    onnx::export_model(graph_, model_);
    auto inputs = zoo::seed_flow_inputs(kFrames);
    write_npy(path("z_p.npy"), inputs[0]);
    write_npy(path("y_mask.npy"), inputs[1]);
    inputs_arg_ = " --inputs " + path("z_p.npy") + " " + path("y_mask.npy");
    planted_ = graph_.nodes[40].name;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string stateful() const {
    return "'" + python_ + " " + test::runners_dir() + "/stateful_runner.py --node " + planted_ + "'";
  }
  Result lockstep(const std::string& args) const {
    std::string out = path("stdout.txt"), err = path("stderr.txt");
    int status = std::system((kBinary + " " + args + " >" + out + " 2>" + err).c_str());
    Result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }
  std::string python_;
  fs::path dir_;
  ir::Graph graph_;
  std::string model_, inputs_arg_, planted_;
};

TEST_F(PersistentRunner, OneProcessServesManyRequestsAndSurvivesABadOne) {
  diff::Runner runner = diff::Runner::persistent(test::ort_runner_command(python_));
  auto inputs = zoo::seed_flow_inputs(kFrames);
  diff::NamedTensors named{{"z_p", inputs[0]}, {"y_mask", inputs[1]}};
  const std::string out = graph_.value(graph_.outputs[0]).name;
  diff::NamedTensors first = runner.run(model_, named, {out}, "");
  EXPECT_THROW(runner.run(path("absent.onnx"), named, {out}, ""), Error);  // the runner's reason, not a crash
  diff::NamedTensors again = runner.run(model_, named, {out}, "");
  EXPECT_EQ(runner.requests_served(), 3);
  ASSERT_EQ(first.at(out).nbytes(), again.at(out).nbytes());
  EXPECT_EQ(std::memcmp(first.at(out).raw(), again.at(out).raw(), first.at(out).nbytes()), 0);
}

TEST_F(PersistentRunner, AVersionOneRunnerIsAClearError) {
  // faulty_runner.py speaks v1 only: started with --serve it prints its usage and exits.
  diff::Runner runner = diff::Runner::persistent(test::faulty_ort_command(python_, planted_, "scale", 2.0));
  auto inputs = zoo::seed_flow_inputs(kFrames);
  try {
    runner.run(model_, {{"z_p", inputs[0]}, {"y_mask", inputs[1]}}, {graph_.value(graph_.outputs[0]).name}, "");
    FAIL() << "a v1 runner served a v2 request";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("protocol v2"), std::string::npos) << e.what();
  }
}

TEST_F(PersistentRunner, DeterminismNamesTheInProcessStepAndFreshProcessesAgree) {
  Result r = lockstep("determinism " + model_ + inputs_arg_ + " --backend " + stateful() + " --runs 2 --json");
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["first_change"], "in-process A1 again") << r.out;
  for (const auto& d : j["differences"])  // the fresh processes agree: only in-process runs differ
    EXPECT_EQ(d.get<std::string>().find("SHA-256 of fresh#"), std::string::npos) << d;
  ASSERT_FALSE(j["differences"].empty());
  std::vector<std::string> modes;
  for (const auto& run : j["runs"]) modes.push_back(run["mode"]);
  EXPECT_EQ(modes, (std::vector<std::string>{"fresh#1", "fresh#2", "in-process A1", "in-process A1 again",
                                             "in-process B", "in-process C", "in-process A from another path",
                                             "in-process A2"}));
  Result text = lockstep("determinism " + model_ + inputs_arg_ + " --backend " + stateful() + " --runs 1");
  EXPECT_NE(text.out.find("the bits first changed at in-process A1 again"), std::string::npos) << text.out;
}

TEST_F(PersistentRunner, DeterminismFailsARunnerThatCachesSessionsByStructure) {
  // runners/stale_runner.py keys its serving process's sessions on node names and op types, not
  // weights: B (A's graph with other weights) is answered by A's session. Fresh processes are right.
  const std::string stale = "'" + python_ + " " + test::runners_dir() + "/stale_runner.py'";
  Result r = lockstep("determinism " + model_ + inputs_arg_ + " --backend " + stale + " --runs 1 --json");
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["first_change"], "in-process B") << r.out;
  std::string all;
  for (const auto& d : j["differences"]) all += d.get<std::string>() + "\n";
  EXPECT_NE(all.find("output " + graph_.value(graph_.outputs[0]).name +
                     ": SHA-256 of in-process B differs from B in a fresh process"), std::string::npos) << all;
  EXPECT_NE(all.find("in-process B (model B) gave A's bits: stale compiled state"), std::string::npos) << all;
  EXPECT_NE(all.find("in-process C (model C) gave A's bits"), std::string::npos) << all;
  EXPECT_EQ(all.find("in-process A2"), std::string::npos) << all;  // A's own steps are right
  Result text = lockstep("determinism " + model_ + inputs_arg_ + " --backend " + stale + " --runs 1");
  EXPECT_NE(text.out.find("FAIL:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the bits first changed at in-process B"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("gave A's bits: stale compiled state"), std::string::npos) << text.out;

  // --keep: the sequence's models stay, and the command to bisect from the failed step replays the
  // steps before it in one runner process; that bisection runs and finds the stale whole model.
  Result kept = lockstep("determinism " + model_ + inputs_arg_ + " --backend " + stale + " --runs 1 --json --keep " +
                         path("kept"));
  ASSERT_EQ(kept.rc, 1) << kept.out << kept.err;
  const std::string replay = nlohmann::json::parse(kept.out)["bisect_from_step"];
  EXPECT_EQ(replay.rfind("lockstep bisect '" + path("kept") + "/B.onnx' --test ", 0), 0u) << replay;
  EXPECT_NE(replay.find("--in-process --warm-up-with '" + model_ + "' '" + model_ + "' --inputs-npz"), std::string::npos)
      << replay;
  Result bisect = lockstep(replay.substr(std::string("lockstep ").size()) + " --format json");
  EXPECT_EQ(bisect.rc, 1) << bisect.out << bisect.err;  // the replayed step diverges again
  EXPECT_TRUE(nlohmann::json::parse(bisect.out)["diverged"].get<bool>()) << bisect.out;
  Result bad = lockstep("bisect " + model_ + inputs_arg_ + " --test " + stale + " --warm-up-with " + model_);
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("--warm-up-with needs --in-process"), std::string::npos) << bad.err;
}

TEST_F(PersistentRunner, CheckFailsARunnerThatCachesSessionsByStructure) {
  // check's in-process column runs B (the model with other weights) first: a structure-keyed cache
  // then answers the model's output with B's numbers. Fresh processes stay right.
  const std::string stale = "'" + python_ + " " + test::runners_dir() + "/stale_runner.py'";
  Result r = lockstep("check " + model_ + inputs_arg_ + " --ref reference --test " + stale);
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  const std::string out = "output " + graph_.value(graph_.outputs[0]).name;
  EXPECT_NE(r.out.find(out + ": in-process disagrees"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(out + ": fresh processes disagree"), std::string::npos) << r.out;
  const std::string by_path = "'" + python_ + " " + test::runners_dir() + "/stale_runner.py --key path'";
  Result ok = lockstep("check " + model_ + inputs_arg_ + " --ref reference --test " + by_path);
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
}

TEST_F(PersistentRunner, DeterminismPassesARunnerThatCachesSessionsByPath) {
  // Keyed by the file's path, the same cache is harmless: every model is compiled as itself.
  const std::string by_path = "'" + python_ + " " + test::runners_dir() + "/stale_runner.py --key path'";
  Result r = lockstep("determinism " + model_ + inputs_arg_ + " --backend " + by_path + " --runs 1");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS: every output bit-identical across 1 fresh processes and in one runner process"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in-process A from another path"), std::string::npos) << r.out;
}

TEST_F(PersistentRunner, DeterminismOfAVersionOneRunnerStillPassesWithANote) {
  // faulty_runner.py speaks v1 only; its fault is the same in every fresh process.
  Result r = lockstep("determinism " + model_ + inputs_arg_ + " --backend \"" +
                      test::faulty_ort_command(python_, planted_, "scale", 2.0) + "\" --runs 2 --json");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["notes"].size(), 1u) << r.out;
  EXPECT_NE(j["notes"][0].get<std::string>().find("in-process sequence not run"), std::string::npos);
}

TEST_F(PersistentRunner, InProcessBisectNamesThePlantedNodeWhereFreshBisectAgrees) {
  Result fresh = lockstep("bisect " + model_ + inputs_arg_ + " --test " + stateful() + " --format json");
  ASSERT_EQ(fresh.rc, 0) << fresh.out << fresh.err;
  EXPECT_FALSE(nlohmann::json::parse(fresh.out)["diverged"].get<bool>());
  Result in_process = lockstep("bisect " + model_ + inputs_arg_ + " --test " + stateful() + " --in-process --format json");
  ASSERT_EQ(in_process.rc, 1) << in_process.out << in_process.err;
  auto j = nlohmann::json::parse(in_process.out);
  EXPECT_TRUE(j["in_process"].get<bool>());
  EXPECT_EQ(j["warm_up_runs"], 1);
  EXPECT_EQ(j["node"]["name"], planted_) << in_process.out;
}

TEST_F(PersistentRunner, CheckTableShowsFreshAgreementAndInProcessDivergence) {
  // The report's table for a pair: anchors before and after the planted node, fresh and in-process.
  const std::string before = graph_.nodes[10].name, after = graph_.nodes[60].name;
  Result r = lockstep("check " + model_ + inputs_arg_ + " --ref reference --test " + stateful() + " --anchors " +
                      before + "," + planted_ + "," + after + " --format json");
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 4u);  // three anchors and the output
  for (const auto& p : j["points"]) EXPECT_LT(p["fresh"]["rel_l2"].get<double>(), 1e-5) << p;
  EXPECT_LT(j["points"][0]["in_process"]["rel_l2"].get<double>(), 1e-5);  // the first request is right
  EXPECT_GT(j["points"][1]["in_process"]["rel_l2"].get<double>(), 1e-3);  // the planted node, second compile
  EXPECT_NE(j["points"][1]["sha256_fresh"], j["points"][1]["sha256_in_process"]);
  Result text = lockstep("check " + model_ + inputs_arg_ + " --ref reference --test " + stateful() + " --anchors " +
                         planted_);
  EXPECT_NE(text.out.find("in-process cosine"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("FAIL"), std::string::npos) << text.out;
  Result bad = lockstep("check " + model_ + inputs_arg_ + " --ref reference --test cpu --anchors no_such_node");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("no node 'no_such_node'"), std::string::npos) << bad.err;
}

TEST_F(PersistentRunner, InProcessNeedsARunner) {
  Result r = lockstep("bisect " + model_ + inputs_arg_ + " --test cpu --in-process");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--in-process is for runner commands"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lockstep
