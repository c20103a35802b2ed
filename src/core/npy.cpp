#include "core/npy.h"

#include <cstring>
#include <limits>

#include "core/atomic_file.h"

namespace lockstep {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kMaxHeaderBytes = 1 << 20;  // numpy itself refuses headers over ~10 KB

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::InvalidModel, "malformed .npy '" + what + "': " + why);
}

// A tiny reader for the Python dict literal numpy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) bad(what_, std::string("header: expected '") + c + "' at offset " + std::to_string(pos_));
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) bad(what_, "header: expected a string");
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) bad(what_, "header: unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad(what_, "header: expected True or False");
  }
  int64_t integer() {
    skip_space();
    int64_t v = 0;
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad(what_, "header: dimension too large");
      v = v * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) bad(what_, "header: expected a dimension");
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    return v;
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (!consume(')')) {
      shape.push_back(integer());
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

 private:
  std::string_view text_;
  const std::string& what_;
  size_t pos_ = 0;
};

DType dtype_from_descr(const std::string& descr, const std::string& what) {
  if (descr == "<f4") return DType::Float32;
  if (descr == "<f8") return DType::Float64;
  if (descr == "<i8") return DType::Int64;
  if (descr == "<i4") return DType::Int32;
  if (descr == "|b1") return DType::Bool;
  if (!descr.empty() && descr[0] == '>') bad(what, "big-endian dtype '" + descr + "' is not supported (use little-endian)");
  bad(what, "dtype '" + descr + "' is not supported (float32, float64, int64, int32, bool)");
}

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Int64: return "<i8";
    case DType::Int32: return "<i4";
    case DType::Bool: return "|b1";
  }
  return "?";
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& what) {
  if (bytes.size() < kMagicSize + 4 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    bad(what, "not a .npy file (bad magic)");
  auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0;
  size_t header_start = 0;
  auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(bytes[i])); };
  if (major == 1) {
    header_len = byte(8) | byte(9) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad(what, "truncated header");
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    header_start = 12;
  } else {
    bad(what, "unsupported format version " + std::to_string(major));
  }
  if (header_len > kMaxHeaderBytes || header_start + header_len > bytes.size()) bad(what, "truncated header");

  HeaderParser p(bytes.substr(header_start, header_len), what);
  std::string descr;
  bool fortran = false;
  bool have_descr = false, have_order = false, have_shape = false;
  Shape shape;
  p.expect('{');
  while (!p.consume('}')) {
    std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      descr = p.string_literal();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.boolean();
      have_order = true;
    } else if (key == "shape") {
      shape = p.tuple();
      have_shape = true;
    } else {
      bad(what, "header: unknown key '" + key + "'");
    }
    if (!p.consume(',')) {
      p.expect('}');
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) bad(what, "header lacks descr, fortran_order or shape");
  if (fortran) bad(what, "fortran_order=True is not supported (save a C-contiguous array)");
  DType dtype = dtype_from_descr(descr, what);

  size_t data_start = header_start + header_len;
  int64_t numel = 0;
  try {
    numel = num_elements(shape);
  } catch (const Error&) {
    bad(what, "shape " + shape_str(shape) + " is too large");
  }
  size_t available = bytes.size() - data_start;
  if (static_cast<uint64_t>(numel) > available / dtype_size(dtype))
    bad(what, "data is shorter than its shape " + shape_str(shape) + " needs (" + std::to_string(available) +
                  " bytes)");
  size_t nbytes = static_cast<size_t>(numel) * dtype_size(dtype);
  if (available != nbytes)
    bad(what, "data holds " + std::to_string(available) + " bytes, shape " + shape_str(shape) + " needs " +
                  std::to_string(nbytes));
  Tensor t(dtype, shape);
  if (nbytes) std::memcpy(t.raw(), bytes.data() + data_start, nbytes);
  if (dtype == DType::Bool) {
    auto* b = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i < nbytes; ++i)
      if (b[i] > 1) bad(what, "bool data holds a byte other than 0 or 1");
  }
  return t;
}

std::string encode_npy(const Tensor& tensor) {
  if (!tensor.defined()) throw Error(ErrorCode::InvalidArgument, "cannot write an undefined tensor as .npy");
  std::string dict = std::string("{'descr': '") + descr_of(tensor.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape().size(); ++i) dict += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  dict += tensor.rank() == 1 ? ",)" : ")";
  dict += ", }";
  // Pad with spaces to a 64-byte-aligned data start, newline-terminated (numpy >= 1.9 does the same).
  size_t version_header = kMagicSize + 2 + 2;
  size_t total = version_header + dict.size() + 1;
  bool v2 = false;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - version_header > 65535) {
    v2 = true;
    version_header += 2;
    padded = (version_header + dict.size() + 1 + 63) / 64 * 64;
  }
  size_t header_len = padded - version_header;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (int i = 0; i < (v2 ? 4 : 2); ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(tensor.raw()), tensor.nbytes());
  return out;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

void write_npy(const std::string& path, const Tensor& tensor) { write_file_atomic(path, encode_npy(tensor)); }

}  // namespace lockstep
