#include "diff/metrics.h"

#include <cmath>
#include <limits>

namespace lockstep::diff {

Metrics compare(const Tensor& test, const Tensor& ref) {
  Metrics m;
  for (int64_t i = 0; i < test.numel(); ++i) m.nan_count_test += std::isnan(test.element_as_double(i));
  for (int64_t i = 0; i < ref.numel(); ++i) m.nan_count_ref += std::isnan(ref.element_as_double(i));
  if (test.shape() != ref.shape()) {
    m.shape_match = false;
    m.cosine = 0;
    m.max_abs_delta = m.rel_l2 = std::numeric_limits<double>::infinity();
    return m;
  }
  double dot = 0, tt = 0, rr = 0, dd = 0, max_abs = 0;
  for (int64_t i = 0; i < test.numel(); ++i) {
    double t = test.element_as_double(i), r = ref.element_as_double(i), d = t - r;
    dot += t * r;
    tt += t * t;
    rr += r * r;
    dd += d * d;
    // NaN-propagating max: a NaN anywhere makes the max NaN.
    double a = std::fabs(d);
    if (std::isnan(a) || a > max_abs) max_abs = std::isnan(max_abs) ? max_abs : a;
  }
  m.max_abs_delta = max_abs;
  if (tt == 0 && rr == 0) m.cosine = 1;
  else if (tt == 0 || rr == 0) m.cosine = 0;
  else m.cosine = dot / (std::sqrt(tt) * std::sqrt(rr));
  if (std::isnan(dot)) m.cosine = std::numeric_limits<double>::quiet_NaN();
  m.rms_ratio = rr == 0 ? (tt == 0 ? 1 : std::numeric_limits<double>::infinity()) : std::sqrt(tt / rr);
  m.rel_l2 = rr == 0 ? std::sqrt(dd) : std::sqrt(dd / rr);
  return m;
}

bool agrees(const Metrics& m) {
  return m.shape_match && m.nan_count_test == 0 && m.nan_count_ref == 0 && m.rel_l2 <= kAgreeRelL2 &&
         m.cosine >= kAgreeCosine;
}

}  // namespace lockstep::diff
