// Immutable things prepared once per content key and shared by everyone who asks for the same
// key (prepared weights of the cpu and cuda backends): one process-wide store, values held
// weakly, so each lives exactly as long as some executable uses it (docs/dynamic-shapes.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <typeinfo>

namespace lockstep {

namespace detail {
// The one store: key (with the type's name) -> weakly held value; `make` runs on a miss, under
// the store's lock.
std::shared_ptr<const void> shared_by_key(const std::string& key, const std::function<std::shared_ptr<const void>()>& make);
}  // namespace detail

template <class T>
std::shared_ptr<const T> shared_by_key(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
  return std::static_pointer_cast<const T>(
      detail::shared_by_key(std::string(typeid(T).name()) + "|" + key, [&]() -> std::shared_ptr<const void> { return make(); }));
}

}  // namespace lockstep
