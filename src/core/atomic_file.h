// Every file lockstep writes goes to a temporary name beside the target and is renamed into
// place, so an interrupted run never leaves a partial file.
#pragma once

#include <string>
#include <string_view>

namespace lockstep {

void write_file_atomic(const std::string& path, std::string_view bytes);
std::string read_file(const std::string& path);  // Error(Io) naming the path on failure

}  // namespace lockstep
