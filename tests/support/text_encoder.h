// A text encoder's products as the float64-accumulation tests build them (Options::f64_accumulate):
// under the prefix "/enc/", a k3 Conv 192 -> 384 (pads 1, bias, Relu epilogue), a k5 dilation-2
// Conv 384 -> 192, and attention scores [2, t, t] = q^T k from its output seen as two heads; one
// 1x1 Conv named "/dec/conv" outside the prefix. Input x [1, 192, t]; outputs scores, the 1x1's.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace lockstep::test {

// Its products against the float64 reference when computed in float64 and rounded once: one
// rounding is ~3e-8 rel L2 for these values (float32 accumulation measured 1.9e-7 to 3.2e-7).
inline constexpr double kOneRoundingRelL2 = 6e-8;

ir::Graph text_encoder_products(int64_t t, uint32_t seed);

}  // namespace lockstep::test
