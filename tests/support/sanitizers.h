// LOCKSTEP_ASAN is defined in a build under AddressSanitizer (GCC's __SANITIZE_ADDRESS__, clang's
// __has_feature): tests that run models many times shrink their sizes there.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCKSTEP_ASAN 1
#endif
#endif
