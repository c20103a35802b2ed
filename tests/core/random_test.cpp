// The one random generator (src/core/random.h): Philox4x32-10 against Random123's published
// known-answer vectors, FNV-1a against its published values, chunking, and sanity statistics.
#include "core/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lockstep::random {
namespace {

// Random123 tests/kat_vectors, "philox4x32 10" lines (also in TensorFlow's philox tests).
TEST(Philox, Random123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// FNV-1a 64 published test values ("" is the offset basis).
TEST(Philox, Fnv1a64KnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// Element i is the same whether it is drawn alone, in a chunk at any offset, or in one call.
TEST(Philox, ChunksGiveTheSameBits) {
  const uint64_t key = stream_key(7, "noise");
  std::vector<float> whole(103), parts(103);
  fill_normal(whole.data(), 0, 103, key, 0.5, 2.0);
  for (int64_t first : {0, 1, 5, 6, 50, 99}) {
    const int64_t end = first == 99 ? 103 : first + 1;
    for (int64_t i = first; i < end; ++i) fill_normal(&parts[static_cast<size_t>(i)], i, 1, key, 0.5, 2.0);
  }
  fill_normal(parts.data() + 7, 7, 40, key, 0.5, 2.0);
  for (int64_t i : {0, 1, 5, 6, 7, 20, 46, 50, 99, 100, 102}) EXPECT_EQ(parts[i], whole[i]) << i;
  std::vector<float> u(9), u2(4);
  fill_uniform(u.data(), 0, 9, key, -1, 1);
  fill_uniform(u2.data(), 3, 4, key, -1, 1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(u2[i], u[3 + i]);
}

TEST(Philox, KeysSeparateSeedsAndNodes) {
  EXPECT_NE(stream_key(0, "a"), stream_key(1, "a"));
  EXPECT_NE(stream_key(0, "a"), stream_key(0, "b"));
  EXPECT_EQ(stream_key(3, "a"), stream_key(3, "a"));
  EXPECT_EQ(op_seed(false, 5.0f, 11), 11u);
  EXPECT_EQ(op_seed(true, 5.0f, 11), 5u);
  EXPECT_NE(op_seed(true, 0.5f, 11), op_seed(true, 1.5f, 11));
}

// 1e5 draws: mean within 5 standard errors, std within 2 %; uniform in (low, high).
TEST(Philox, Statistics) {
  constexpr int64_t n = 100000;
  std::vector<float> z(n), u(n);
  fill_normal(z.data(), 0, n, stream_key(42, "z"), 1.0, 3.0);
  fill_uniform(u.data(), 0, n, stream_key(42, "u"), -2.0, 6.0);
  double sum = 0, sq = 0, usum = 0, umin = 1e9, umax = -1e9;
  for (int64_t i = 0; i < n; ++i) {
    sum += z[i];
    sq += (z[i] - 1.0) * (z[i] - 1.0);
    usum += u[i];
    umin = std::min<double>(umin, u[i]);
    umax = std::max<double>(umax, u[i]);
  }
  const double mean = sum / n, std = std::sqrt(sq / n);
  EXPECT_NEAR(mean, 1.0, 5 * 3.0 / std::sqrt(double(n)));
  EXPECT_NEAR(std, 3.0, 0.02 * 3.0);
  EXPECT_NEAR(usum / n, 2.0, 5 * (8.0 / std::sqrt(12.0)) / std::sqrt(double(n)));
  EXPECT_GT(umin, -2.0);
  EXPECT_LT(umax, 6.0);
  EXPECT_LT(umin, -1.99);
  EXPECT_GT(umax, 5.99);
}

}  // namespace
}  // namespace lockstep::random
