// The process environment for posix_spawn. Linux and other ELF systems have the global
// `environ`; on macOS only a program's own executable may link against it (shared libraries and
// bundles must ask _NSGetEnviron), so the library asks there.
#pragma once

namespace lockstep {

char** process_environment();

}  // namespace lockstep
