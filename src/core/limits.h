// Process-wide resource caps for untrusted models (docs/security.md): the size of a model file
// plus its external data, and the number of nodes in a graph. Planned memory has its own cap per
// compile (Options.max_memory_bytes). Over a cap is Error(LimitExceeded) saying asked vs cap.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep::limits {

inline constexpr int64_t kDefaultMaxModelBytes = int64_t{4} << 30;  // 4 GiB: file + external data
inline constexpr int64_t kDefaultMaxNodes = 1'000'000;

struct Limits {
  int64_t max_model_bytes = kDefaultMaxModelBytes;
  int64_t max_nodes = kDefaultMaxNodes;
};

Limits get();
void set(const Limits& limits);  // values <= 0 restore the defaults

// Throws Error(LimitExceeded) "<what> is <asked> bytes; the cap is <cap> bytes (<how to raise>)".
void check_model_bytes(int64_t asked, const std::string& what);
void check_node_count(int64_t asked, const std::string& what);

// a * b and a + b for non-negative sizes; Error(LimitExceeded) naming `what` on int64 overflow.
int64_t checked_mul(int64_t a, int64_t b, const std::string& what);
int64_t checked_add(int64_t a, int64_t b, const std::string& what);

}  // namespace lockstep::limits
