#include "core/shared_by_key.h"

#include <mutex>
#include <unordered_map>

namespace lockstep::detail {

std::shared_ptr<const void> shared_by_key(const std::string& key, const std::function<std::shared_ptr<const void>()>& make) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<const void>> alive;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = alive.find(key); it != alive.end())
    if (auto p = it->second.lock()) return p;
  if (alive.size() > 4096)  // drop expired keys now and then
    for (auto it = alive.begin(); it != alive.end();) it = it->second.expired() ? alive.erase(it) : std::next(it);
  std::shared_ptr<const void> made = make();
  alive[key] = made;
  return made;
}

}  // namespace lockstep::detail
