// Node attributes: a small typed map. Floats stay float32, as ONNX stores them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lockstep/tensor.h"

namespace lockstep::ir {

using Attribute =
    std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>, Tensor>;

class Attributes {
 public:
  using Map = std::map<std::string, Attribute>;
  bool has(const std::string& name) const { return find(name) != nullptr; }
  void set(const std::string& name, Attribute value) { (*own())[name] = std::move(value); }
  void erase(const std::string& name) {
    if (has(name)) own()->erase(name);
  }
  const Map& all() const { return values_ ? *values_ : empty(); }

  // Typed getters throw Error(UnsupportedAttribute) when the attribute has another type.
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& fallback = {}) const;
  const Tensor* get_tensor(const std::string& name) const;  // nullptr when absent

  bool operator==(const Attributes& other) const;

 private:
  // Shared by copies until one of them changes (copy on write): a run-time shape miss copies the
  // not-yet-run part of a voice's graph, ~2,700 nodes, at every new length.
  std::shared_ptr<const Map> values_;
  const Attribute* find(const std::string& name) const;
  Map* own();  // this object's own map, copied first where it is shared
  static const Map& empty();
};

std::string attribute_str(const Attribute& value);  // for the printer and canonical hashing

}  // namespace lockstep::ir
