// The CPU backend's worker pool (src/backends/cpu/parallel.h, docs/cpu.md "Threads"): every item
// exactly once, slots unique among the participants running at once, nested and concurrent loops
// on their callers, and the default thread count from the affinity mask.
#include "backends/cpu/parallel.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace lockstep::cpu {
namespace {

TEST(CpuParallel, EveryItemRunsOnceWithASlotBelowTheThreadCount) {
  for (int threads : {1, 2, 3, 5, 8}) {
    for (int64_t items : {1, 2, 3, 7, 64, 1000, 100003}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(items));
      std::atomic<int> bad_slot{0};
      parallel_for(items, threads, [&](int64_t i, int slot) {
        runs[static_cast<size_t>(i)].fetch_add(1);
        if (slot < 0 || slot >= threads) bad_slot.fetch_add(1);
      });
      for (int64_t i = 0; i < items; ++i)
        ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << "item " << i << " of " << items << ", " << threads << " threads";
      EXPECT_EQ(bad_slot.load(), 0) << items << " items, " << threads << " threads";
    }
  }
}

TEST(CpuParallel, NoTwoParticipantsShareASlotAtOnce) {
  // Per-slot scratch is only safe if a slot is never in two blocks at the same time.
  constexpr int kThreads = 4;
  std::atomic<int> in_use[kThreads] = {};
  std::atomic<int> clashes{0};
  for (int round = 0; round < 200; ++round) {
    parallel_for(256, kThreads, [&](int64_t, int slot) {
      if (in_use[slot].fetch_add(1) != 0) clashes.fetch_add(1);
      for (volatile int k = 0; k < 200; ++k) {
      }
      in_use[slot].fetch_sub(1);
    });
  }
  EXPECT_EQ(clashes.load(), 0);
}

TEST(CpuParallel, ALoopInsideALoopRunsOnItsCaller) {
  std::atomic<int64_t> inner_items{0};
  std::mutex m;
  std::set<std::thread::id> inner_threads_per_outer_item;
  bool each_inner_on_one_thread = true;
  parallel_for(8, 3, [&](int64_t, int) {
    const auto me = std::this_thread::get_id();
    bool same = true;
    parallel_for(100, 3, [&](int64_t, int slot) {
      inner_items.fetch_add(1);
      if (std::this_thread::get_id() != me || slot != 0) same = false;
    });
    std::lock_guard<std::mutex> lock(m);
    each_inner_on_one_thread = each_inner_on_one_thread && same;
  });
  EXPECT_EQ(inner_items.load(), 800);
  EXPECT_TRUE(each_inner_on_one_thread);
}

TEST(CpuParallel, LoopsFromSeveralThreadsAtOnceAllComplete) {
  // Two compiled models run from two threads: one gets the pool, the other runs on its caller.
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round)
        parallel_for(1000, 2, [&](int64_t i, int) { sum.fetch_add(i); });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(sum.load(), int64_t{4} * 50 * (999 * 1000 / 2));
}

TEST(CpuParallel, ThreadsScopeSetsTheRunsThreadsAndRestoresThem) {
  EXPECT_EQ(run_threads(), 1);
  {
    ThreadsScope scope(3);
    EXPECT_EQ(run_threads(), 3);
    {
      ThreadsScope inner(2);
      EXPECT_EQ(run_threads(), 2);
    }
    EXPECT_EQ(run_threads(), 3);
  }
  EXPECT_EQ(run_threads(), 1);
}

TEST(CpuParallel, UsableCpusFollowTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  const int all = CPU_COUNT(&saved);
  EXPECT_GE(usable_cpus(), 1);
  EXPECT_LE(usable_cpus(), all);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &saved)) first = c;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int pinned = usable_cpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(pinned, 1) << "this thread was pinned to CPU " << first;
}

}  // namespace
}  // namespace lockstep::cpu
