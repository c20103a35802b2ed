#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
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

// An unnamed file in `dir` (Linux's O_TMPFILE), or -1 where the platform (macOS) or the file
// system has none.
int open_anonymous(const std::string& dir) {
#if defined(O_TMPFILE)
  return ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
#else
  (void)dir;
  return -1;
#endif
}

// Names the anonymous file `fd` as `name`, through /proc/self/fd; false (errno set) where that
// cannot be done, e.g. without /proc in a chroot or a container.
bool link_anonymous(int fd, const std::string& name) {
#if defined(O_TMPFILE)
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  return ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
#else
  (void)fd;
  (void)name;
  errno = ENOTSUP;
  return false;
#endif
}

// Writes all of `bytes` and syncs; 0 or the errno of the failure.
int write_all_and_sync(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return ::fsync(fd) == 0 ? 0 : errno;
}

// Closes `fd` and renames `tmp` over `path`; on failure removes `tmp` and throws.
void close_and_rename(int fd, const std::string& tmp, const std::string& path) {
  int err = ::close(fd) == 0 ? 0 : errno;
  if (!err && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    write_failed(path, err);
  }
}

std::string folder_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}
}  // namespace

// The bytes go to an anonymous O_TMPFILE inode in the target's folder, which a killed process
// leaves nowhere; only when complete and synced is it linked under a unique temporary name and
// renamed over the target. Without O_TMPFILE (macOS, some file systems) or without /proc to link
// it by, a named temporary in the same folder is written, synced and renamed: a killed process
// can leave that one behind (never a partial target).
void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_temp_counter.fetch_add(1));
  if (int fd = open_anonymous(folder_of(path)); fd >= 0) {
    if (int err = write_all_and_sync(fd, bytes)) {
      ::close(fd);
      write_failed(path, err);
    }
    if (link_anonymous(fd, tmp)) {
      close_and_rename(fd, tmp, path);
      return;
    }
    ::close(fd);  // not linkable here: the named temporary below
  }
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(path, errno);
  if (int err = write_all_and_sync(fd, bytes)) {
    ::close(fd);
    ::unlink(tmp.c_str());
    write_failed(path, err);
  }
  close_and_rename(fd, tmp, path);
}

bool atomic_writes_leave_no_temporary(const std::string& dir) {
  const int fd = open_anonymous(dir);
  if (fd < 0) return false;
  const bool linkable = ::access(("/proc/self/fd/" + std::to_string(fd)).c_str(), F_OK) == 0;
  ::close(fd);
  return linkable;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, "cannot open '" + path + "': " + std::strerror(errno));
  // One buffer of the file's size (a stream copy held up to three copies of a 60 MB voice at once).
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::string bytes;
  if (!ec) bytes.resize(static_cast<size_t>(size));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.bad()) throw Error(ErrorCode::Io, "cannot read '" + path + "'");
  bytes.resize(static_cast<size_t>(in.gcount()));
  // Whatever is there past the size read first (a file that grew, or one without a size).
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) bytes.append(chunk, static_cast<size_t>(in.gcount()));
  if (in.bad()) throw Error(ErrorCode::Io, "cannot read '" + path + "'");
  return bytes;
}

}  // namespace lockstep
