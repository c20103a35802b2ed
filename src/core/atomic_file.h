// Every file lockstep writes goes to a temporary name beside the target and is renamed into
// place, so an interrupted run never leaves a partial file.
#pragma once

#include <string>
#include <string_view>

namespace lockstep {

void write_file_atomic(const std::string& path, std::string_view bytes);
// Whether a write into `dir` that is killed midway leaves no temporary file behind: true with
// Linux's O_TMPFILE and /proc; false on macOS and file systems without O_TMPFILE, where a named
// temporary can stay (the target itself is never partial anywhere).
bool atomic_writes_leave_no_temporary(const std::string& dir);
std::string read_file(const std::string& path);  // Error(Io) naming the path on failure

}  // namespace lockstep
