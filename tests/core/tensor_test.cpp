#include <gtest/gtest.h>

#include "core/hash.h"
#include "lockstep/tensor.h"

namespace lockstep {

TEST(Tensor, ConvertsBetweenDtypes) {
  Tensor t = Tensor::from_vector<float>({2, 2}, {1.5f, -2.0f, 0.0f, 3.0f});
  Tensor i = t.to(DType::Int64);
  EXPECT_EQ(i.data<int64_t>()[0], 1);
  EXPECT_EQ(i.data<int64_t>()[1], -2);
  Tensor b = t.to(DType::Bool);
  EXPECT_FALSE(b.data<bool>()[2]);
  EXPECT_TRUE(b.data<bool>()[3]);
}

TEST(Tensor, RejectsOverflowingShapes) {
  EXPECT_THROW(num_elements({int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_THROW(num_elements({-1, 3}), Error);
  EXPECT_THROW(Tensor(DType::Float32, {int64_t{1} << 30, int64_t{1} << 20}), Error);
}

TEST(Tensor, AccessWithWrongTypeThrows) {
  Tensor t(DType::Float32, {3});
  EXPECT_THROW(t.data<double>(), Error);
}

// A tensor over outside storage reads it in place and releases it through its deleter when the
// last copy dies (the CUDA backend's pinned output buffers).
TEST(Tensor, OverOutsideStorageReleasesItOnce) {
  int released = 0;
  alignas(64) static float buffer[6] = {1, 2, 3, 4, 5, 6};
  {
    std::shared_ptr<std::byte[]> storage(reinterpret_cast<std::byte*>(buffer), [&](std::byte*) { ++released; });
    Tensor t = Tensor::over(DType::Float32, {2, 3}, std::move(storage));
    EXPECT_EQ(t.numel(), 6);
    EXPECT_EQ(t.data<float>()[4], 5.0f);
    Tensor copy = t.reshaped({3, 2});
    EXPECT_EQ(copy.raw(), t.raw());
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1);
  EXPECT_THROW(Tensor::over(DType::Float32, {1}, nullptr), Error);
}

TEST(Hash, Sha256OfKnownString) {
  // FIPS 180-2 test vector for "abc".
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace lockstep
