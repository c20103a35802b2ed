// NCW <-> NWC transposes against the index definition, on sizes with ragged 16-edges.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <vector>

#include "backends/cpu/transpose.h"

namespace lockstep::cpu {
namespace {

std::vector<float> iota_vec(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f - 7.0f;
  return v;
}

TEST(CpuTranspose, NcwToNwcAndBackMatchTheDefinition) {
  for (auto [n, c, w] : std::vector<std::array<int64_t, 3>>{{1, 16, 64}, {2, 37, 130}, {1, 72, 1024}, {3, 5, 17}, {1, 1, 9}}) {
    std::vector<float> x = iota_vec(n * c * w), t(x.size(), -1.0f), back(x.size(), -1.0f);
    ncw_to_nwc(x.data(), t.data(), n, c, w);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < w; ++i)
          ASSERT_EQ(t[static_cast<size_t>((p * w + i) * c + ch)], x[static_cast<size_t>((p * c + ch) * w + i)])
              << n << "x" << c << "x" << w << " at " << p << "," << ch << "," << i;
    // Every (plane, tile) visited once, the tiles covering [0, w). The callback runs on the
    // OpenMP threads of the transpose: the sum is atomic (a plain one lost updates under load).
    std::atomic<int64_t> covered{0};
    nwc_to_ncw(t.data(), back.data(), n, c, w, [&](int64_t, int64_t w0, int64_t w1) { covered += w1 - w0; });
    EXPECT_EQ(covered.load(), n * w);
    EXPECT_EQ(back, x);
  }
}

}  // namespace
}  // namespace lockstep::cpu
