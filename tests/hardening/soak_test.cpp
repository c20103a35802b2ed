// Memory-growth soak (issue 5): compile / run / destroy the embedded default graph many times and
// compare resident memory after warm-up with the end. Opt-in, it takes minutes:
// LOCKSTEP_SOAK_CYCLES=1000 lockstep_tests --gtest_filter='Soak.*'. Under ASan the RSS check is
// off (the allocator quarantine holds freed memory) and LeakSanitizer does the judging at exit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__APPLE__)
#include <mach/mach.h>
#endif

#include "lockstep/lockstep.h"
#include "zoo/seed_flow.h"
#include "support/sanitizers.h"

namespace lockstep {
namespace {

constexpr int kWarmupCycles = 20;
// Allocator noise (glibc arenas, oneDNN's primitive cache) stays well below this; a leak of one
// arena per cycle (~10 MiB for the default graph) exceeds it within a couple of cycles.
constexpr int64_t kMaxRssGrowthBytes = int64_t{16} << 20;

// Resident memory now: Linux's /proc/self/status, macOS's task_info; -1 where neither answers.
int64_t rss_bytes() {
#if defined(__APPLE__)
  mach_task_basic_info_data_t info{};
  mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
  if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, reinterpret_cast<task_info_t>(&info), &count) == KERN_SUCCESS)
    return static_cast<int64_t>(info.resident_size);
  return -1;
#else
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmRSS:  1234 kB"
  return -1;
#endif
}

TEST(Soak, CompileRunDestroyCyclesDoNotGrowMemory) {
  const char* env = std::getenv("LOCKSTEP_SOAK_CYCLES");
  const int cycles = env ? std::atoi(env) : 0;
  if (cycles <= kWarmupCycles) GTEST_SKIP() << "set LOCKSTEP_SOAK_CYCLES (> " << kWarmupCycles << ") to run";
#ifndef LOCKSTEP_ASAN
  // Under ASan LeakSanitizer judges and RSS is only printed; without ASan RSS is the check.
  if (rss_bytes() < 0) GTEST_SKIP() << "cannot read resident memory here (no /proc/self/status, not macOS)";
#endif
  const Model model = Model::from_graph(zoo::seed_flow_graph());
  const std::vector<Tensor> inputs = zoo::seed_flow_inputs();
  Options options;
  options.threads = 2;
  std::string first_hash;
  int64_t after_warmup = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < cycles; ++c) {
    auto exe = compile(model, "cpu", options);
    std::vector<Tensor> out = exe->run(inputs);
    ASSERT_EQ(out.size(), 1u);
    if (c == kWarmupCycles - 1) after_warmup = rss_bytes();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t at_end = rss_bytes();
  std::cout << "[ soak ] " << cycles << " compile/run/destroy cycles in " << seconds << " s; RSS after "
            << kWarmupCycles << " warm-up cycles " << after_warmup / 1024 << " KiB, at the end " << at_end / 1024
            << " KiB, growth " << (at_end - after_warmup) / 1024 << " KiB\n";
#ifndef LOCKSTEP_ASAN
  EXPECT_LE(at_end - after_warmup, kMaxRssGrowthBytes);
#endif
}

}  // namespace
}  // namespace lockstep
