#include "core/limits.h"

#include <atomic>

#include "lockstep/error.h"

namespace lockstep::limits {

namespace {
std::atomic<int64_t> g_max_model_bytes{kDefaultMaxModelBytes};
std::atomic<int64_t> g_max_nodes{kDefaultMaxNodes};
}  // namespace

Limits get() { return Limits{g_max_model_bytes.load(), g_max_nodes.load()}; }

void set(const Limits& limits) {
  g_max_model_bytes.store(limits.max_model_bytes > 0 ? limits.max_model_bytes : kDefaultMaxModelBytes);
  g_max_nodes.store(limits.max_nodes > 0 ? limits.max_nodes : kDefaultMaxNodes);
}

void check_model_bytes(int64_t asked, const std::string& what) {
  const int64_t cap = g_max_model_bytes.load();
  if (asked > cap)
    throw Error(ErrorCode::LimitExceeded, what + " is " + std::to_string(asked) + " bytes; the cap is " +
                                              std::to_string(cap) + " bytes (lockstep::limits::set max_model_bytes)");
}

void check_node_count(int64_t asked, const std::string& what) {
  const int64_t cap = g_max_nodes.load();
  if (asked > cap)
    throw Error(ErrorCode::LimitExceeded, what + " has " + std::to_string(asked) + " nodes; the cap is " +
                                              std::to_string(cap) + " (lockstep::limits::set max_nodes)");
}

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    throw Error(ErrorCode::LimitExceeded, what + ": size " + std::to_string(a) + " x " + std::to_string(b) +
                                              " overflows int64 or is negative");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
    throw Error(ErrorCode::LimitExceeded, what + ": size " + std::to_string(a) + " + " + std::to_string(b) +
                                              " overflows int64 or is negative");
  return r;
}

}  // namespace lockstep::limits
