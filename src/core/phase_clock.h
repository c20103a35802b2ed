// Wall-clock time of consecutive phases, for diagnostic lines ("programs 12.3 ms, layout 0.4 ms");
// does nothing when disabled, so it can stay in hot paths.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace lockstep {

class PhaseClock {
 public:
  explicit PhaseClock(bool enabled) : enabled_(enabled), last_(std::chrono::steady_clock::now()) {}
  // Ends the phase running since the last mark (or construction) under `name`.
  void mark(const char* name) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.2f ms", text_.empty() ? "" : ", ", name,
                  std::chrono::duration<double, std::milli>(now - last_).count());
    text_ += buf;
    last_ = now;
  }
  const std::string& str() const { return text_; }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_;
  std::string text_;
};

}  // namespace lockstep
