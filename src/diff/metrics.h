// How far a test tensor is from a reference tensor, computed in double from any dtype.
#pragma once

#include <cstdint>

#include "lockstep/tensor.h"

namespace lockstep::diff {

// The agreement bar of DESIGN.md ("The promise"): named once, used by compare and check.
inline constexpr double kAgreeRelL2 = 1e-5;
inline constexpr double kAgreeCosine = 0.9999999;

struct Metrics {
  double cosine = 1;         // <test, ref> / (|test| |ref|); 1 when both are zero, 0 when one is
  double max_abs_delta = 0;  // max |test - ref|
  double rms_ratio = 1;      // rms(test) / rms(ref); 1 when both are zero
  double rel_l2 = 0;         // |test - ref| / |ref|; |test - ref| when ref is zero
  int64_t nan_count_test = 0;
  int64_t nan_count_ref = 0;
  bool shape_match = true;   // false: the other fields are left at their defaults except NaN counts
};

// Element counts must match for the numbers to mean anything; a shape mismatch sets shape_match
// (and compares nothing). NaNs are counted and make cosine/rel_l2/max_abs_delta NaN.
Metrics compare(const Tensor& test, const Tensor& ref);

// True when the metrics meet the agreement bar (shape match, no NaN, rel_l2 and cosine).
bool agrees(const Metrics& m);

}  // namespace lockstep::diff
