#include "ir/attributes.h"

#include <cstring>
#include <sstream>

namespace lockstep::ir {

namespace {
template <class T>
const T& typed(const std::map<std::string, Attribute>& values, const std::string& name, const char* type) {
  const Attribute& a = values.at(name);
  if (const T* v = std::get_if<T>(&a)) return *v;
  throw Error(ErrorCode::UnsupportedAttribute, "attribute '" + name + "' is not of type " + type);
}
}  // namespace

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? typed<int64_t>(values_, name, "int") : fallback;
}
float Attributes::get_float(const std::string& name, float fallback) const {
  return has(name) ? typed<float>(values_, name, "float") : fallback;
}
std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  return has(name) ? typed<std::string>(values_, name, "string") : fallback;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, const std::vector<int64_t>& fallback) const {
  return has(name) ? typed<std::vector<int64_t>>(values_, name, "ints") : fallback;
}
std::vector<float> Attributes::get_floats(const std::string& name, const std::vector<float>& fallback) const {
  return has(name) ? typed<std::vector<float>>(values_, name, "floats") : fallback;
}
const Tensor* Attributes::get_tensor(const std::string& name) const {
  return has(name) ? &typed<Tensor>(values_, name, "tensor") : nullptr;
}

bool Attributes::operator==(const Attributes& other) const {
  if (values_.size() != other.values_.size()) return false;
  for (const auto& [k, v] : values_) {
    auto it = other.values_.find(k);
    if (it == other.values_.end() || attribute_str(v) != attribute_str(it->second)) return false;
  }
  return true;
}

std::string attribute_str(const Attribute& value) {
  std::ostringstream out;
  out.precision(9);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>) {
          out << v;
        } else if constexpr (std::is_same_v<T, std::string>) {
          out << '"' << v << '"';
        } else if constexpr (std::is_same_v<T, Tensor>) {
          out << "tensor<" << dtype_name(v.dtype()) << shape_str(v.shape()) << ">{";
          for (int64_t i = 0; i < v.numel() && i < 16; ++i) out << (i ? "," : "") << v.element_as_double(i);
          if (v.numel() > 16) out << ",...";
          out << "}";
        } else {
          out << "[";
          for (size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
          out << "]";
        }
      },
      value);
  return out.str();
}

}  // namespace lockstep::ir
