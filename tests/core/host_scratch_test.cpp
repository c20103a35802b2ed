// HostScratch (src/core/host_scratch.h): the shared arena/workspace reservation of the run-time
// shape stage's cpu segments.
#include <gtest/gtest.h>

#include <cstring>

#include "core/host_scratch.h"
#include "lockstep/error.h"

namespace lockstep {
namespace {

TEST(HostScratch, RegionsAreDistinctZeroedAndStable) {
  HostScratch scratch(1 << 20);
  std::byte* a = scratch.arena(1000);
  std::byte* w = scratch.workspace(5000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(w, nullptr);
  EXPECT_GE(w - a, 1 << 20) << "the workspace starts past the whole arena region";
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(w[i], std::byte{0}) << "untouched pages read as zero";
  std::memset(a, 7, 1000);
  EXPECT_EQ(scratch.arena(200), a) << "every user gets the same start";
  EXPECT_EQ(scratch.workspace(64), w);
  EXPECT_EQ(scratch.arena_high_water(), 1000);
  EXPECT_EQ(scratch.workspace_high_water(), 5000);
}

TEST(HostScratch, OverTheRegionIsOutOfMemory) {
  HostScratch scratch(1 << 16);
  try {
    scratch.arena((1 << 16) + 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find("arena"), std::string::npos) << e.what();
  }
  EXPECT_NE(scratch.arena(1 << 16), nullptr) << "an error loses nothing: the region is still usable";
}

}  // namespace
}  // namespace lockstep
