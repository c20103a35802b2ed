#include "backends/cpu/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace lockstep::cpu {

namespace {

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace

bool Profile::begin_run() {
  if (!enabled_ || ++seen_ <= 1) return false;
  cpu_start_ = process_cpu_ms();
  return true;
}

void Profile::end_run() {
  if (!recording()) return;
  ++runs_;
  const double ms = process_cpu_ms() - cpu_start_;
  cpu_total_ += ms;
  cpu_min_ = std::min(cpu_min_, ms);
}

Profile::Profile() {
  const char* env = std::getenv("LOCKSTEP_CPU_PROFILE");
  enabled_ = env && *env && std::string(env) != "0";
  by_shape_ = enabled_ && std::string(env) == "shape";
}

Profile::~Profile() {
  if (!enabled_) return;
  for (const auto& [part, ms] : compile_parts_) std::fprintf(stderr, "  compile %-28s %10.1f ms\n", part.c_str(), ms);
  if (runs_ == 0) return;
  std::vector<std::pair<std::string, Entry>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  double total = 0;
  for (const auto& r : rows)
    if (r.first.rfind("  ", 0) != 0) total += r.second.ms;
  std::fprintf(stderr, "lockstep cpu profile: %ld runs, compile %.1f ms, %.3f ms/run in kernels\n", runs_,
               compile_ms_, total / static_cast<double>(runs_));
  std::fprintf(stderr, "  process CPU time per run: mean %.3f ms, min %.3f ms\n", cpu_total_ / static_cast<double>(runs_),
               cpu_min_);
  std::fprintf(stderr, "  %-32s %10s %7s %8s\n", "family", "ms/run", "share", "calls/run");
  for (const auto& [name, e] : rows)
    std::fprintf(stderr, "  %-32s %10.3f %6.1f%% %8.1f\n", name.c_str(), e.ms / static_cast<double>(runs_),
                 total > 0 ? 100.0 * e.ms / total : 0.0, static_cast<double>(e.calls) / static_cast<double>(runs_));
}

}  // namespace lockstep::cpu
