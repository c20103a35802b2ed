// The CPU backend's threads (docs/cpu.md, "Threads"): one pool of workers for every kernel. A
// parallel loop's items are claimed in blocks by whichever participants are running — the caller
// and the workers that are awake — so a worker whose core is busy with other work is never waited
// for unless it holds a block; on a machine shared with other processes the loop degrades towards
// the caller running it alone instead of stalling at a barrier for a scheduler time slice.
// Items must be independent (each output computed whole by one participant): then the bits do not
// depend on who ran what, only on the kernel's own plan.
#pragma once

#include <cstdint>

namespace lockstep::cpu {

// The threads a run asks for (Options::threads, set for the run's scope by ThreadsScope); 1
// outside a run.
int run_threads();

// Sets run_threads() for a scope and restores the caller's afterwards (OpenMP's count too, which
// oneDNN's primitives use).
class ThreadsScope {
 public:
  explicit ThreadsScope(int threads);
  ~ThreadsScope();
  ThreadsScope(const ThreadsScope&) = delete;
  ThreadsScope& operator=(const ThreadsScope&) = delete;

 private:
  int saved_, saved_omp_;
};

using RangeFn = void (*)(void* body, int64_t begin, int64_t end, int slot);

// Runs fn(body, begin, end, slot) over [0, items) split into blocks, on up to `threads`
// participants. slot is in [0, threads) and unique among the participants of one loop (per-thread
// scratch). A loop started inside another one, or while another thread's loop holds the pool,
// runs on the calling thread alone (slot 0).
void parallel_ranges(int64_t items, int threads, RangeFn fn, void* body);

// body(begin, end, slot) over blocks of [0, items).
template <class F>
void parallel_blocks(int64_t items, int threads, F&& body) {
  parallel_ranges(
      items, threads,
      [](void* b, int64_t begin, int64_t end, int slot) {
        (*static_cast<F*>(b))(begin, end, slot);
      },
      &body);
}

// body(item, slot) for every item of [0, items) on up to `threads` participants.
template <class F>
void parallel_for(int64_t items, int threads, F&& body) {
  parallel_blocks(items, threads, [&body](int64_t begin, int64_t end, int slot) {
    for (int64_t i = begin; i < end; ++i) body(i, slot);
  });
}

// The same with the run's thread count; when `parallel` is false, on the calling thread alone
// (loops too small to be worth waking anyone).
template <class F>
void parallel_for(int64_t items, F&& body, bool parallel = true) {
  parallel_for(items, parallel ? run_threads() : 1, static_cast<F&&>(body));
}

// The CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota (cgroup v2
// cpu.max or v1 cfs_quota_us, rounded up), at least 1. The default thread count.
int usable_cpus();

}  // namespace lockstep::cpu
