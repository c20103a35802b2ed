// The conv tile length's thread scaling (conv_tiling.h): unchanged at 1-3 threads, longer with
// more threads (capped at 16384 outputs), and it decides whether a conv is tiled at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/conv_tiling.h"
#include "backends/cpu/onednn_impl.h"

namespace lockstep {
namespace {

// The scaled cap (conv_tiling.cpp) and the 1-thread lengths the rule starts from.
constexpr int64_t kScaledCap = 16384;

TEST(CpuConvTileLength, FewThreadsKeepTheBaseLength) {
  if (std::getenv("LOCKSTEP_CPU_CONV_TILE")) GTEST_SKIP() << "LOCKSTEP_CPU_CONV_TILE fixes the length";
  for (int64_t channels : {8, 16, 64, 256, 512})
    for (int threads : {0, 1, 2, 3}) EXPECT_EQ(cpu::conv_tile_outputs(channels, threads), cpu::conv_tile_outputs(channels, 1));
  EXPECT_EQ(cpu::conv_tile_outputs(512, 1), 2048);
  EXPECT_EQ(cpu::conv_tile_outputs(8, 1), 8192);
}

TEST(CpuConvTileLength, ManyThreadsGetLongerTilesUpToTheCap) {
  if (std::getenv("LOCKSTEP_CPU_CONV_TILE")) GTEST_SKIP() << "LOCKSTEP_CPU_CONV_TILE fixes the length";
  for (int64_t channels : {8, 16, 64, 256, 512}) {
    int64_t previous = cpu::conv_tile_outputs(channels, 1);
    for (int threads : {4, 8, 16, 64}) {
      const int64_t L = cpu::conv_tile_outputs(channels, threads);
      EXPECT_GE(L, previous) << channels << " channels, " << threads << " threads";
      EXPECT_LE(L, std::max(kScaledCap, cpu::conv_tile_outputs(channels, 1)));
      previous = L;
    }
    EXPECT_EQ(cpu::conv_tile_outputs(channels, 16), kScaledCap) << channels << " channels";
  }
  EXPECT_EQ(cpu::conv_tile_outputs(512, 4), 4096);
}

TEST(CpuConvTileLength, ThreadsDecideWhetherAConvIsTiled) {
  if (std::getenv("LOCKSTEP_CPU_CONV_TILE")) GTEST_SKIP() << "LOCKSTEP_CPU_CONV_TILE fixes the length";
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  cpu::Conv1dShape s{.n = 1, .ci = 64, .co = 64, .groups = 1, .w_in = 10000, .w_out = 10000,
                     .k = 3, .stride = 1, .dilation = 0, .pad_begin = 1};
  const cpu::TiledConv1d two(engine, s, true, 2);
  if (cpu::is_reference_impl(two.implementation()))
    GTEST_SKIP() << "needs a oneDNN convolution kernel: oneDNN has only " << two.implementation()
                 << " on this CPU, which TiledConv1d never tiles (the GEMM convolution runs such convs)";
  EXPECT_TRUE(two.tiled());                                       // 2048-output tiles
  EXPECT_FALSE(cpu::TiledConv1d(engine, s, true, 16).tiled());   // one 16384-output tile holds it
}

}  // namespace
}  // namespace lockstep
