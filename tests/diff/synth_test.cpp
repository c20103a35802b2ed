// Synthetic weights (diff/synth.h): seeded, complete, shape- and dtype-preserving.
#include "diff/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "zoo/seed_flow.h"

namespace lockstep::diff {
namespace {

constexpr double kSigmaSlack = 0.05;  // sample std of > 10^4 normals is within 5% of sigma

TEST(SyntheticWeights, ParsesSigmaAndSeed) {
  SyntheticWeights a = parse_synthetic_weights("0.1,7");
  EXPECT_DOUBLE_EQ(a.sigma, 0.1);
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(parse_synthetic_weights("2").seed, 0u);
  for (const char* bad : {"", "x", "0", "-1", "0.1,", "0.1,-3", "0.1,a", "nan"})
    EXPECT_THROW(parse_synthetic_weights(bad), Error) << bad;
}

TEST(SyntheticWeights, ReplacesEveryFloatConstantKeepingShapesAndIsSeeded) {
  ir::Graph original = zoo::seed_flow_graph();
  ir::Graph a = original, b = original, c = original;
  int replaced = synthesize_weights(a, {0.3, 0});
  synthesize_weights(b, {0.3, 0});
  synthesize_weights(c, {0.3, 1});
  int floats = 0;
  double sum2 = 0;
  int64_t count = 0;
  for (size_t v = 0; v < original.values.size(); ++v) {
    const ir::Value& o = original.values[v];
    if (!o.constant.defined()) continue;
    const Tensor& t = a.values[v].constant;
    EXPECT_EQ(t.shape(), o.constant.shape()) << o.name;
    EXPECT_EQ(a.values[v].name, o.name);
    if (!is_floating(o.dtype)) {
      EXPECT_EQ(t.raw(), o.constant.raw()) << o.name;  // integer parameters untouched
      continue;
    }
    ++floats;
    EXPECT_NE(t.raw(), o.constant.raw()) << "fresh storage for " << o.name;
    EXPECT_EQ(std::memcmp(t.raw(), b.values[v].constant.raw(), t.nbytes()), 0)
        << "same seed, same values";
    if (t.numel() > 8)
      EXPECT_NE(std::memcmp(t.raw(), c.values[v].constant.raw(), t.nbytes()), 0) << o.name;
    for (int64_t i = 0; i < t.numel(); ++i) sum2 += t.element_as_double(i) * t.element_as_double(i);
    count += t.numel();
  }
  EXPECT_EQ(replaced, floats);
  EXPECT_GT(floats, 30);
  EXPECT_NEAR(std::sqrt(sum2 / static_cast<double>(count)), 0.3, 0.3 * kSigmaSlack);
  EXPECT_EQ(a.nodes.size(), original.nodes.size());
}

}  // namespace
}  // namespace lockstep::diff
