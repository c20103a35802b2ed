// Opt-in per-op-family timing (LOCKSTEP_CPU_PROFILE=1): totals printed to stderr when the
// executable is destroyed. The first run (lazy JIT, first touch) is left out. Families whose
// name starts with "  " are parts of another family (not added to the total). Timing only
// observes; it never changes which kernels run.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace lockstep::cpu {

// Milliseconds since `t0`.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class Profile {
 public:
  Profile();
  ~Profile();
  bool enabled() const { return enabled_; }
  // LOCKSTEP_CPU_PROFILE=shape: one row per op, output shape and layout instead of per op.
  bool by_shape() const { return by_shape_; }
  // Starts a run; returns whether this run is recorded.
  bool begin_run();
  bool recording() const { return enabled_ && seen_ > 1; }
  void add(const std::string& family, double ms) {
    if (!recording()) return;
    auto& e = totals_[family];
    e.ms += ms;
    e.calls += 1;
  }
  void end_run();
  void set_compile_ms(double ms) { compile_ms_ = ms; }
  // Compile-time parts (primitive creation, weight reorders), printed as totals.
  void add_compile(const std::string& part, double ms) { compile_parts_[part] += ms; }

 private:
  struct Entry {
    double ms = 0;
    long calls = 0;
  };
  bool enabled_ = false, by_shape_ = false;
  long runs_ = 0, seen_ = 0;
  double compile_ms_ = 0;
  std::map<std::string, Entry> totals_;
  std::map<std::string, double> compile_parts_;
  // Process CPU time per run (robust to a loaded machine at 1 thread): start, sum and minimum.
  double cpu_start_ = 0, cpu_total_ = 0, cpu_min_ = 1e300;
};

}  // namespace lockstep::cpu
