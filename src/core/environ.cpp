#include "core/environ.h"

#if defined(__APPLE__)
#include <crt_externs.h>
#else
#include <unistd.h>
extern char** environ;  // POSIX; <unistd.h> declares it only with _GNU_SOURCE on glibc
#endif

namespace lockstep {

char** process_environment() {
#if defined(__APPLE__)
  return *_NSGetEnviron();
#else
  return environ;
#endif
}

}  // namespace lockstep
