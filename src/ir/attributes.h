// Node attributes: a small typed map. Floats stay float32, as ONNX stores them.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "lockstep/tensor.h"

namespace lockstep::ir {

using Attribute =
    std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>, Tensor>;

class Attributes {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, Attribute value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, Attribute>& all() const { return values_; }

  // Typed getters throw Error(UnsupportedAttribute) when the attribute has another type.
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& fallback = {}) const;
  const Tensor* get_tensor(const std::string& name) const;  // nullptr when absent

  bool operator==(const Attributes& other) const;

 private:
  std::map<std::string, Attribute> values_;
};

std::string attribute_str(const Attribute& value);  // for the printer and canonical hashing

}  // namespace lockstep::ir
