#include "ir/attributes.h"

#include <cstring>
#include <sstream>

namespace lockstep::ir {

namespace {
template <class T>
const T& typed(const Attribute& a, const std::string& name, const char* type) {
  if (const T* v = std::get_if<T>(&a)) return *v;
  throw Error(ErrorCode::UnsupportedAttribute, "attribute '" + name + "' is not of type " + type);
}
}  // namespace

const Attribute* Attributes::find(const std::string& name) const {
  if (!values_) return nullptr;
  const auto it = values_->find(name);
  return it == values_->end() ? nullptr : &it->second;
}

Attributes::Map* Attributes::own() {
  if (!values_ || values_.use_count() > 1) values_ = std::make_shared<Map>(values_ ? *values_ : Map{});
  return const_cast<Map*>(values_.get());  // made here as a non-const Map, and held by this object alone
}

const Attributes::Map& Attributes::empty() {
  static const Map none;
  return none;
}

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  const Attribute* a = find(name);
  return a ? typed<int64_t>(*a, name, "int") : fallback;
}
float Attributes::get_float(const std::string& name, float fallback) const {
  const Attribute* a = find(name);
  return a ? typed<float>(*a, name, "float") : fallback;
}
std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  const Attribute* a = find(name);
  return a ? typed<std::string>(*a, name, "string") : fallback;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, const std::vector<int64_t>& fallback) const {
  const Attribute* a = find(name);
  return a ? typed<std::vector<int64_t>>(*a, name, "ints") : fallback;
}
std::vector<float> Attributes::get_floats(const std::string& name, const std::vector<float>& fallback) const {
  const Attribute* a = find(name);
  return a ? typed<std::vector<float>>(*a, name, "floats") : fallback;
}
const Tensor* Attributes::get_tensor(const std::string& name) const {
  const Attribute* a = find(name);
  return a ? &typed<Tensor>(*a, name, "tensor") : nullptr;
}

bool Attributes::operator==(const Attributes& other) const {
  const Map &mine = all(), &theirs = other.all();
  if (mine.size() != theirs.size()) return false;
  for (const auto& [k, v] : mine) {
    auto it = theirs.find(k);
    if (it == theirs.end() || attribute_str(v) != attribute_str(it->second)) return false;
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
