// Per-node tolerances calibrated from the noise floor (docs/tools.md, "Tolerance calibration").
// The noise floor at a node is the relative L2 error of a clean (fault-free) float32 CPU run
// against the float64 reference at that node, both on the same compiled graph.
#pragma once

#include <cmath>

namespace lockstep::diff {

inline constexpr double kToleranceSafety = 8.0;  // how far above the float32 noise floor is still noise
inline constexpr double kToleranceFloor = 1e-6;  // exact ops (Slice, Concat) have a zero noise floor
inline constexpr double kToleranceCap = 1e-4;    // 10x the agreement bar: a broken CPU cannot hide a bug

struct ToleranceConfig {
  double safety = kToleranceSafety;
  double floor = kToleranceFloor;
  double cap = kToleranceCap;
};

// max(floor, min(cap, safety * noise)); a NaN or infinite noise floor gives the cap.
inline double calibrated_tolerance(double noise, const ToleranceConfig& config = {}) {
  double t = std::isfinite(noise) ? config.safety * noise : config.cap;
  if (t > config.cap) t = config.cap;
  return t < config.floor ? config.floor : t;
}

// The error exceeds the tolerance; NaN errors always do.
inline bool exceeds(double error, double tolerance) { return !(error <= tolerance); }

}  // namespace lockstep::diff
