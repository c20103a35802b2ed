// The path of the running executable, for commands that re-run themselves in fresh processes
// (check, determinism). Linux reads /proc/self/exe; macOS asks dyld; elsewhere argv[0]'s
// resolution is the caller's fallback.
#pragma once

#include <string>

namespace lockstep {

// Absolute path of this process's executable; throws Error(Io) when the platform cannot say.
std::string self_executable_path();

}  // namespace lockstep
