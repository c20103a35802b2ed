// Robust outputs (issue 5): a failed write leaves nothing behind, and `lockstep run` killed with
// SIGKILL at any moment leaves no partial .npy and no stray temporary file.
#include "support/paths.h"
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/atomic_file.h"
#include "core/npy.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

size_t count_entries(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().empty() ? 0 : 1;
  return n;
}

TEST(RobustOutput, WriteIntoMissingFolderFailsCleanly) {
  const std::string dir = test::temp_dir() + "/robust_parent_is_file";
  fs::create_directories(dir);
  write_file_atomic(dir + "/file", "x");
  try {
    write_npy(dir + "/file/out.npy", Tensor::from_vector<float>({2}, {1, 2}));
    FAIL() << "wrote below a regular file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Io) << e.what();
    EXPECT_NE(std::string(e.what()).find("out.npy"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count_entries(dir), 1u);  // only "file"
}

TEST(RobustOutput, WriteIntoReadOnlyFolderFailsCleanly) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const std::string dir = test::temp_dir() + "/robust_read_only";
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0555);
  EXPECT_THROW(write_npy(dir + "/out.npy", Tensor::from_vector<float>({2}, {1, 2})), Error);
  ::chmod(dir.c_str(), 0755);
  EXPECT_EQ(count_entries(dir), 0u);
}

TEST(RobustOutput, OverwriteReplacesWholeFileAndLeavesNoTemp) {
  const std::string dir = test::temp_dir() + "/robust_overwrite";
  fs::create_directories(dir);
  write_file_atomic(dir + "/a.bin", std::string(1000, 'a'));
  write_file_atomic(dir + "/a.bin", "b");
  EXPECT_EQ(read_file(dir + "/a.bin"), "b");
  EXPECT_EQ(count_entries(dir), 1u);
}

// Kills `lockstep run` on the default graph at spread-out moments; after each kill the output
// folder holds only complete .npy files (or nothing) and, where writes go through an anonymous
// O_TMPFILE (Linux with /proc), no temporaries. Elsewhere (macOS) a named temporary may stay.
TEST(RobustOutput, SigkillMidRunLeavesNoPartialFile) {
  const std::string cli = lockstep_test::binary_dir() + "/lockstep";
  if (!fs::exists(cli)) GTEST_SKIP() << "no CLI at " << cli;
  const std::string dir = test::temp_dir() + "/robust_kill";
  fs::create_directories(dir);
  const bool no_temporaries = atomic_writes_leave_no_temporary(dir);
  if (!no_temporaries)
    std::cout << "[ robust ] no O_TMPFILE + /proc here: stray temporaries are allowed, partial files are not\n";
  const std::string model = dir + "/seed.onnx";
  zoo::write_seed_flow_onnx(model);
  int finished = 0;
  for (int delay_ms : {5, 20, 50, 100, 200, 400, 700, 1000, 1500, 2500}) {
    const std::string out = dir + "/out_" + std::to_string(delay_ms);
    fs::create_directories(out);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::execl(cli.c_str(), cli.c_str(), "run", model.c_str(), "-o", out.c_str(), "--threads", "1",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++finished;
    for (const auto& e : fs::directory_iterator(out)) {
      const std::string name = e.path().filename().string();
      if (no_temporaries) {
        EXPECT_EQ(name.find(".tmp"), std::string::npos) << "stray temporary " << name << " after " << delay_ms << " ms";
      }
      if (name.find(".tmp") != std::string::npos) continue;
      if (e.path().extension() == ".npy") EXPECT_NO_THROW(read_npy(e.path().string())) << name << " is partial";
    }
  }
  std::cout << "[ robust ] SIGKILL at 10 moments: " << finished << " runs had finished before the kill\n";
}

}  // namespace
}  // namespace lockstep
