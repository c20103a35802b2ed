// A Metrics record as JSON for the tools' --json reports; non-finite values become strings
// (JSON has no inf or NaN).
#pragma once

#include <nlohmann/json.hpp>

#include "diff/metrics.h"

namespace lockstep::diff {

nlohmann::json metrics_json(const Metrics& m);

}  // namespace lockstep::diff
