#include "diff/metrics_json.h"

#include <cmath>
#include <string>

namespace lockstep::diff {

nlohmann::json metrics_json(const Metrics& m) {
  auto f = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(std::to_string(x)); };
  return {{"cosine", f(m.cosine)},
          {"max_abs_delta", f(m.max_abs_delta)},
          {"rms_ratio", f(m.rms_ratio)},
          {"rel_l2", f(m.rel_l2)},
          {"nan_count_test", m.nan_count_test},
          {"nan_count_ref", m.nan_count_ref},
          {"shape_match", m.shape_match}};
}

}  // namespace lockstep::diff
