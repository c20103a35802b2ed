#include "onnx/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/limits.h"
#include "lockstep/error.h"
#include "lockstep/tensor.h"
#include "onnx/proto_tensor.h"

namespace lockstep::onnx {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& location, const std::string& why) {
  throw Error(ErrorCode::InvalidModel, what + " has external data location '" + location + "': " + why);
}

int64_t parse_size(const std::string& text, const std::string& key, const std::string& what,
                   const std::string& location) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
    refuse(what, location, "external data key '" + key + "' = '" + text + "' is not a non-negative integer");
  return v;
}

// True when `inner` equals `outer` or lies below it (both canonical).
bool is_within(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i)
    if (i == inner.end() || *o != *i) return false;
  return true;
}

// Closes the descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool has_external_data(const ::onnx::TensorProto& proto) {
  return proto.data_location() == ::onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0;
}

::onnx::TensorProto load_external_data(const ::onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what, int64_t& total_bytes) {
  std::string location;
  bool has_location = false;
  std::optional<int64_t> offset, length;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
      has_location = true;
    }
  }
  if (!has_location || location.empty())
    throw Error(ErrorCode::InvalidModel, what + " uses external data but names no 'location'");
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "offset") offset = parse_size(kv.value(), "offset", what, location);
    else if (kv.key() == "length") length = parse_size(kv.value(), "length", what, location);
  }
  if (base_dir.empty())
    refuse(what, location, "the model was loaded from memory, so it has no folder to read external data from");
  if (location.find('\0') != std::string::npos) refuse(what, location, "the path contains a NUL byte");
  const fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    refuse(what, location, "absolute paths are refused; external data must lie in the model's folder");
  for (const auto& part : rel)
    if (part == "..") refuse(what, location, "'..' components are refused; external data must lie in the model's folder");

  // Resolve symlinks on both sides, then require the file to stay inside the folder.
  std::error_code ec;
  const fs::path folder = fs::canonical(base_dir, ec);
  if (ec) refuse(what, location, "the model's folder '" + base_dir + "' cannot be resolved: " + ec.message());
  const fs::path file = fs::canonical(folder / rel, ec);
  if (ec) throw Error(ErrorCode::Io, what + ": cannot open external data file '" + location + "' in '" + base_dir +
                                         "': " + ec.message());
  if (!is_within(folder, file) || file == folder)
    refuse(what, location, "it resolves to '" + file.string() + "', outside the model's folder '" + folder.string() +
                               "' (symlink escape refused)");

  Fd fd;
  fd.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd.fd < 0)
    throw Error(ErrorCode::Io, what + ": cannot open external data file '" + location + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode)) refuse(what, location, "it is not a regular file");
  const int64_t file_size = static_cast<int64_t>(st.st_size);
  const int64_t off = offset.value_or(0);
  if (off > file_size)
    refuse(what, location, "offset " + std::to_string(off) + " is past the end of the file (" +
                               std::to_string(file_size) + " bytes)");
  const int64_t len = length.value_or(file_size - off);
  if (len > file_size - off)
    refuse(what, location, "offset " + std::to_string(off) + " + length " + std::to_string(len) +
                               " runs past the end of the file (" + std::to_string(file_size) + " bytes)");

  // When lockstep knows the dtype, the length must match dims x dtype before anything is read.
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (dtype) {
    Shape shape(proto.dims().begin(), proto.dims().end());
    for (int64_t d : shape)
      if (d < 0) throw Error(ErrorCode::InvalidModel, what + " has a negative dim in " + shape_str(shape));
    const int64_t want = limits::checked_mul(num_elements(shape), static_cast<int64_t>(dtype_size(*dtype)), what);
    if (want != len)
      refuse(what, location, "length " + std::to_string(len) + " bytes does not match its " + dtype_name(*dtype) +
                                 " shape " + shape_str(shape) + ", which needs " + std::to_string(want));
  }
  total_bytes = limits::checked_add(total_bytes, len, what);
  limits::check_model_bytes(total_bytes, "the model plus its external data (through " + what + ")");

  ::onnx::TensorProto out;
  out.set_name(proto.name());
  out.set_data_type(proto.data_type());
  for (int64_t d : proto.dims()) out.add_dims(d);
  std::string* raw = out.mutable_raw_data();
  raw->resize(static_cast<size_t>(len));
  int64_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd.fd, raw->data() + done, static_cast<size_t>(len - done), static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(ErrorCode::Io, what + ": reading external data file '" + location + "' failed at byte " +
                                     std::to_string(off + done) + (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
    done += n;
  }
  return out;
}

}  // namespace lockstep::onnx
