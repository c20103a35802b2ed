#include "core/self_exe.h"

#include <cstdint>
#include <filesystem>
#include <system_error>
#include <vector>

#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

#include "lockstep/error.h"

namespace lockstep {

std::string self_executable_path() {
#if defined(__APPLE__)
  uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::vector<char> buf(size + 1, '\0');
  if (_NSGetExecutablePath(buf.data(), &size) == 0) {
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(buf.data(), ec);
    return ec ? std::string(buf.data()) : canonical.string();
  }
  throw Error(ErrorCode::Io, "cannot find this executable's path (_NSGetExecutablePath)");
#else
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(ErrorCode::Io, "cannot find this executable's path (/proc/self/exe): " + ec.message());
  return path.string();
#endif
}

}  // namespace lockstep
