#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lockstep/error.h"

namespace lockstep {

namespace {
std::atomic<uint64_t> g_temp_counter{0};

[[noreturn]] void write_failed(const std::string& path, int err) {
  throw Error(ErrorCode::Io, "cannot write '" + path + "': " + std::strerror(err));
}
}  // namespace

// The bytes go to an anonymous O_TMPFILE inode in the target's folder, which a killed process
// leaves nowhere; only when complete and synced is it linked under a unique temporary name and
// renamed over the target. Without O_TMPFILE (macOS, some file systems) a named temporary in the
// same folder is written, synced and renamed: a killed process can leave that one behind.
void write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_temp_counter.fetch_add(1));
#if defined(O_TMPFILE)
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
#else
  int fd = -1;
#endif
  const bool anonymous = fd >= 0;
  if (!anonymous) fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(path, errno);
  auto fail = [&](int err) {
    ::close(fd);
    if (!anonymous) ::unlink(tmp.c_str());
    write_failed(path, err);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail(errno);
#if defined(O_TMPFILE)
  if (anonymous) {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) fail(errno);
  }
#endif
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    write_failed(path, err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    write_failed(path, err);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, "cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(ErrorCode::Io, "cannot read '" + path + "'");
  return buffer.str();
}

}  // namespace lockstep
