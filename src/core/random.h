// The one random generator of every backend: Philox4x32-10 (Salmon et al., SC'11), counter-based,
// so element i of a random op's output is a pure function of (seed, ONNX node name, i). The cpu
// kernel fills its output with these functions, the reference widens the same float32 values to
// double, the CUDA kernels draw on the device with the same per-element code (random_math.h, IEEE
// operations only, no libm): the noise is bit-identical everywhere.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace lockstep::random {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32-10 block (Random123's philox4x32 with 10 rounds; tests check its kat_vectors).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// FNV-1a, 64 bits, of the bytes of `text`.
uint64_t fnv1a64(std::string_view text);

// The 64-bit Philox key of one random op: the seed (the op's `seed` attribute when set, else the
// run's seed) mixed with the FNV-1a hash of the ONNX node name, so two ops of one graph draw
// independent streams.
uint64_t stream_key(uint64_t seed, std::string_view node_name);

// The seed an op uses: its `seed` attribute when present (an integral value as that integer,
// any other value by its float32 bits), else the run's seed.
uint64_t op_seed(bool has_seed_attribute, float seed_attribute, uint64_t run_seed);

// Element i comes from block i / 4 (counter = {block lo, block hi, 0, 0}), word i % 4:
//   uniform: u = (word + 0.5) * 2^-32 in double, value = float(low + (high - low) * u);
//   normal:  words (0,1) and (2,3) of a block are Box-Muller pairs, in double:
//            r = sqrt(-2 ln u0), z = r cos(2 pi u1) (even element), r sin(2 pi u1) (odd);
//            value = float(mean + scale * z), with ln, cos and sin as random_math.h's series
//            (within 2.3e-16 relative of libm's; 1 of 2e7 float32 values differs from glibc's).
// Elements [first, first + count) are written to out[0, count).
void fill_uniform(float* out, int64_t first, int64_t count, uint64_t key, double low, double high);
void fill_normal(float* out, int64_t first, int64_t count, uint64_t key, double mean, double scale);

}  // namespace lockstep::random
