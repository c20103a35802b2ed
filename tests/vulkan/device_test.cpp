// Device selection through the environment, in fresh `lockstep` processes (the device is chosen
// once per process): LOCKSTEP_VULKAN_DEVICE by index or name substring, a name that matches nothing
// (vulkan unavailable, the devices listed), and LOCKSTEP_VULKAN=0.
#include "support/paths.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "vulkan/vulkan_test_util.h"

namespace lockstep::vulkan_test {
namespace {

namespace fs = std::filesystem;

class VulkanDeviceSelection : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_vulkan_device_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // `lockstep ARGS` under ENV ("NAME=value ..."); stdout and stderr together in `out`.
  int lockstep(const std::string& env, const std::string& args, std::string& out) const {
    const std::string log = (dir_ / "log.txt").string();
    const int status = std::system((env + " " + lockstep_test::cli_command() + " " + args + " >" + log + " 2>&1").c_str());
    std::ifstream in(log);
    std::stringstream s;
    s << in.rdbuf();
    out = s.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
  fs::path dir_;
};

TEST_F(VulkanDeviceSelection, ByIndexByNameAndNone) {
  LOCKSTEP_REQUIRE_VULKAN();
  std::string out;
  const std::string d = dir_.string();
  ASSERT_EQ(lockstep("", "default -o " + d, out), 0) << out;
  const std::string run = "run " + d + "/seed_flow.onnx --backend vulkan --inputs " + d + "/z_p.npy " + d + "/y_mask.npy -o " + d;
  EXPECT_EQ(lockstep("LOCKSTEP_VULKAN_DEVICE=0", run, out), 0) << out;
  // The chosen device's name, lower-cased by the selection, as a substring.
  std::string name = vulkan::device_description();
  name = name.substr(0, name.find(' '));
  EXPECT_EQ(lockstep("LOCKSTEP_VULKAN_DEVICE='" + name + "'", run, out), 0) << out;
  EXPECT_EQ(lockstep("LOCKSTEP_VULKAN_DEVICE=no-such-device", run, out), 1) << out;
  EXPECT_NE(out.find("matches no usable device"), std::string::npos) << out;
  EXPECT_EQ(lockstep("LOCKSTEP_VULKAN=0", run, out), 1) << out;
  EXPECT_NE(out.find("disabled by LOCKSTEP_VULKAN=0"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::vulkan_test
