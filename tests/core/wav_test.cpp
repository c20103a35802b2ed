// write_wav: the RIFF header fields and PCM samples, read back byte by byte (hand-known values).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/wav.h"
#include "support/fixtures.h"

namespace lockstep {
namespace {

uint32_t le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

TEST(Wav, HeaderAndClippedSamples) {
  std::string path = test::temp_dir() + "/wav_test.wav";
  write_wav(path, Tensor::from_vector<float>({1, 1, 4}, {0.0f, 0.5f, -1.0f, 2.0f}), 22050);
  std::string b = read_file(path);
  ASSERT_EQ(b.size(), 44u + 8u);
  EXPECT_EQ(b.substr(0, 4), "RIFF");
  EXPECT_EQ(le(b, 4, 4), 36u + 8u);
  EXPECT_EQ(b.substr(8, 8), "WAVEfmt ");
  EXPECT_EQ(le(b, 20, 2), 1u);      // PCM
  EXPECT_EQ(le(b, 22, 2), 1u);      // mono
  EXPECT_EQ(le(b, 24, 4), 22050u);  // sample rate
  EXPECT_EQ(le(b, 34, 2), 16u);     // bits
  EXPECT_EQ(b.substr(36, 4), "data");
  EXPECT_EQ(le(b, 40, 4), 8u);
  EXPECT_EQ(static_cast<int16_t>(le(b, 44, 2)), 0);
  EXPECT_EQ(static_cast<int16_t>(le(b, 46, 2)), 16384);  // lrint(0.5 * 32767)
  EXPECT_EQ(static_cast<int16_t>(le(b, 48, 2)), -32767);
  EXPECT_EQ(static_cast<int16_t>(le(b, 50, 2)), 32767);  // 2.0 clipped
}

TEST(Wav, NanWritesNothing) {
  std::string path = test::temp_dir() + "/wav_nan.wav";
  std::filesystem::remove(path);
  EXPECT_THROW(write_wav(path, Tensor::from_vector<float>({2}, {0.1f, NAN}), 22050), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace lockstep
