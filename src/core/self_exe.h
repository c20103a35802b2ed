// The path of the running executable, for commands that re-run themselves in fresh processes
// (check, determinism). Linux reads /proc/self/exe; macOS asks dyld. Elsewhere, and on Linux
// without /proc, it throws: those commands then say why they cannot start their workers.
#pragma once

#include <string>

namespace lockstep {

// Absolute path of this process's executable; throws Error(Io) when the platform cannot say.
std::string self_executable_path();

}  // namespace lockstep
