#include "backends/cpu/parallel.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>


#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LOCKSTEP_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define LOCKSTEP_PAUSE() asm volatile("yield" ::: "memory")
#else
#define LOCKSTEP_PAUSE() ((void)0)
#endif

namespace lockstep::cpu {

namespace {

thread_local int tls_run_threads = 1;
thread_local bool tls_in_loop = false;  // a participant of a loop: nested loops run inline

// A loop's body runs with OpenMP at one thread, as it did inside an OpenMP region: a oneDNN call in
// it (the GEMM convolution's sgemm) runs sequentially, and its bits do not depend on the team.
class SerialOmp {
 public:
  SerialOmp() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SerialOmp() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// How long an idle worker spins for the next loop before it sleeps: while some run is in flight
// (a voice's call has ~700 loops with microseconds to a few hundred of serial work between them)
// up to kRunSpinNs, else LOCKSTEP_CPU_SPIN_US (default 100 us). And how long the caller spins for
// blocks still running elsewhere before it yields its core to them.
int64_t idle_spin_ns() {
  static const int64_t ns = [] {
    const char* v = std::getenv("LOCKSTEP_CPU_SPIN_US");
    return v ? std::max<int64_t>(0, std::atoll(v)) * 1000 : int64_t{100'000};
  }();
  return ns;
}
constexpr int64_t kJoinSpinNs = 20'000;
constexpr int64_t kRunSpinNs = 2'000'000;
std::atomic<int> runs_in_flight{0};  // ThreadsScopes of more than one thread alive

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A loop's ticket packs the loop's number (high 24 bits) and the next unclaimed item (low 40): a
// claim is one compare-and-swap that fails if the loop has changed, so a late worker never runs
// a block of a loop it did not read.
constexpr int kItemBits = 40;
constexpr uint64_t kItemMask = (uint64_t{1} << kItemBits) - 1;
constexpr uint64_t kClosed = kItemMask;  // no item: the loop is over
uint32_t loop_of(uint64_t t) {
  return static_cast<uint32_t>(t >> kItemBits);
}
int64_t item_of(uint64_t t) {
  return static_cast<int64_t>(t & kItemMask);
}
uint64_t ticket(uint32_t loop, uint64_t item) {
  return (static_cast<uint64_t>(loop & 0xffffff) << kItemBits) | item;
}

class Pool {
 public:
  // Runs the loop; false if the pool is busy (another thread's loop), and the caller runs it alone.
  bool run(int64_t items, int threads, RangeFn fn, void* body) {
    std::unique_lock<std::mutex> lock(dispatch_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    grow(threads - 1);
    const uint32_t loop = (loop_number_ + 1) & 0xffffff;
    loop_number_ = loop;
    fn_.store(fn, std::memory_order_release);
    body_.store(body, std::memory_order_release);
    items_.store(items, std::memory_order_release);
    threads_.store(threads, std::memory_order_release);
    finished_.store(0, std::memory_order_release);
    ticket_.store(ticket(loop, 0), std::memory_order_seq_cst);
    epoch_.store(loop, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();
    {
      SerialOmp serial;
      participate(loop, 0);
    }
    // Blocks still running on workers: spin briefly, then give the core to them.
    const int64_t start = now_ns();
    for (int spins = 0; finished_.load(std::memory_order_acquire) < items; ++spins) {
      if ((spins & 63) == 63 && now_ns() - start > kJoinSpinNs)
        sched_yield();
      else
        LOCKSTEP_PAUSE();
    }
    ticket_.store(ticket(loop, kClosed),
                  std::memory_order_seq_cst);  // before the next loop's fields
    return true;
  }

 private:
  // Claims and runs blocks of `loop` until none is left; a worker whose slot the loop does not
  // have (it asked for fewer threads) takes none.
  void participate(uint32_t loop, int slot) {
    uint64_t t = ticket_.load(std::memory_order_acquire);
    while (loop_of(t) == loop && item_of(t) != static_cast<int64_t>(kClosed)) {
      const RangeFn fn = fn_.load(std::memory_order_acquire);
      void* body = body_.load(std::memory_order_acquire);
      const int64_t items = items_.load(std::memory_order_acquire);
      if (slot >= threads_.load(std::memory_order_acquire)) return;
      const int64_t begin = item_of(t);
      if (begin >= items) return;
      // Guided: half the remaining items over the participants, so the first blocks are large and
      // the last ones single items (whoever finishes last waits for little, as with equal shares).
      const int64_t threads = threads_.load(std::memory_order_acquire);
      const int64_t block = std::max<int64_t>(1, (items - begin) / (2 * threads));
      // Fails if another participant claimed first or the loop has moved on: t is reloaded.
      if (!ticket_.compare_exchange_weak(t, t + static_cast<uint64_t>(block),
                                         std::memory_order_acq_rel, std::memory_order_acquire))
        continue;
      const int64_t end = std::min(begin + block, items);
      tls_in_loop = true;
      fn(body, begin, end, slot);
      tls_in_loop = false;
      finished_.fetch_add(end - begin, std::memory_order_release);
      t = ticket_.load(std::memory_order_acquire);
    }
  }

  void grow(int workers) {
    while (static_cast<int>(workers_.size()) < workers) {
      const int slot = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, slot] { work(slot); });
      workers_.back().detach();  // the pool lives as long as the process (never destroyed)
    }
  }

  void work(int slot) {
    omp_set_num_threads(1);  // for good: see SerialOmp
    uint32_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      const int64_t start = now_ns();
      uint32_t e;
      for (int spins = 0; (e = epoch_.load(std::memory_order_acquire)) == seen; ++spins) {
        LOCKSTEP_PAUSE();
        if ((spins & 63) == 63 &&
            now_ns() - start > (runs_in_flight.load(std::memory_order_relaxed) > 0
                                    ? kRunSpinNs
                                    : idle_spin_ns())) {
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          epoch_.wait(seen, std::memory_order_seq_cst);
          sleepers_.fetch_sub(1, std::memory_order_seq_cst);
          spins = 0;
        }
      }
      seen = e;
      participate(e, slot);
    }
  }

  std::mutex dispatch_;
  uint32_t loop_number_ = 0;          // under dispatch_
  std::vector<std::thread> workers_;  // under dispatch_
  std::atomic<uint64_t> ticket_{ticket(0, kClosed)};
  std::atomic<uint32_t> epoch_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int64_t> finished_{0};
  std::atomic<RangeFn> fn_{nullptr};
  std::atomic<void*> body_{nullptr};
  std::atomic<int64_t> items_{0};
  std::atomic<int> threads_{1};
};

Pool* the_pool = nullptr;
std::mutex the_pool_mutex;

Pool& pool() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A forked child has none of the parent's workers: it starts a pool of its own (the parent's
    // is left as it was, unreachable).
    pthread_atfork(nullptr, nullptr, [] { the_pool = nullptr; });
  });
  Pool* p = __atomic_load_n(&the_pool, __ATOMIC_ACQUIRE);
  if (p) return *p;
  std::lock_guard<std::mutex> lock(the_pool_mutex);
  if (!the_pool) __atomic_store_n(&the_pool, new Pool, __ATOMIC_RELEASE);
  return *the_pool;
}

// The CPU quota of this process's cgroup, in CPUs (rounded up); 0 when none is set or readable.
int cgroup_cpu_quota() {
  std::ifstream self("/proc/self/cgroup");
  std::string line, v2_path;
  while (std::getline(self, line)) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
  }
  double best = 0;
  auto take = [&best](double quota, double period) {
    if (quota > 0 && period > 0) {
      double cpus = quota / period;
      best = best > 0 ? std::min(best, cpus) : cpus;
    }
  };
  if (!v2_path.empty()) {  // cgroup v2: cpu.max ("max 100000" or "200000 100000") here and above
    for (std::string p = v2_path;; p = p.substr(0, p.rfind('/'))) {
      std::ifstream f("/sys/fs/cgroup" + p + (p.empty() || p.back() != '/' ? "/" : "") + "cpu.max");
      std::string quota;
      double period = 0;
      if (f >> quota >> period && quota != "max") take(std::atof(quota.c_str()), period);
      if (p.empty() || p == "/") break;
    }
  } else {  // cgroup v1
    std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        per("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    double quota = 0, period = 0;
    if (q >> quota && per >> period) take(quota, period);
  }
  return best > 0 ? std::max(1, static_cast<int>(std::ceil(best - 1e-9))) : 0;
}

}  // namespace

int run_threads() {
  return tls_run_threads;
}

ThreadsScope::ThreadsScope(int threads)
    : saved_(tls_run_threads), saved_omp_(omp_get_max_threads()) {
  tls_run_threads = std::max(1, threads);
  omp_set_num_threads(tls_run_threads);
  if (tls_run_threads > 1) runs_in_flight.fetch_add(1, std::memory_order_relaxed);
}

ThreadsScope::~ThreadsScope() {
  if (tls_run_threads > 1) runs_in_flight.fetch_sub(1, std::memory_order_relaxed);
  tls_run_threads = saved_;
  omp_set_num_threads(saved_omp_);
}

void parallel_ranges(int64_t items, int threads, RangeFn fn, void* body) {
  if (items <= 0) return;
  threads = static_cast<int>(std::min<int64_t>(threads, items));
  if (threads <= 1 || tls_in_loop || !pool().run(items, threads, fn, body)) {
    const bool was = tls_in_loop;
    tls_in_loop = true;
    SerialOmp serial;
    fn(body, 0, items, 0);
    tls_in_loop = was;
  }
}

int usable_cpus() {
  int cpus = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)));
  const int quota = cgroup_cpu_quota();
  return quota > 0 ? std::min(cpus, quota) : cpus;
}

}  // namespace lockstep::cpu
