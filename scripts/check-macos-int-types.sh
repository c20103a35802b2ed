#!/usr/bin/env bash
# Optional, not part of CI (about 9 CPU-minutes): a syntax-only pass over every lockstep source
# with macOS's 64-bit integer types. On macOS int64_t/uint64_t are long long / unsigned long long
# while size_t and ptrdiff_t stay long, so mixes such as std::min(size_t, uint64_t) or an
# overload set on int64_t called with a long compile on Linux and fail on a Mac. Glibc's
# <bits/stdint-{intn,uintn}.h> are shadowed by copies that use the long long types, and each
# compile command of an existing clang build folder (default build-asan, from the asan preset)
# is rerun with -fsyntax-only. Everything else stays Linux's (headers, libc++ 14, x86-64).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build-asan}"
[ -f "$BUILD/build.ninja" ] || { echo "check-macos-int-types: configure $BUILD first (cmake --preset asan)" >&2; exit 1; }
SHIM="$BUILD/mac-int-types"
mkdir -p "$SHIM/bits"
cat > "$SHIM/bits/stdint-intn.h" <<'EOF'
#ifndef _BITS_STDINT_INTN_H
#define _BITS_STDINT_INTN_H 1
#include <bits/types.h>
typedef __int8_t int8_t;
typedef __int16_t int16_t;
typedef __int32_t int32_t;
typedef long long int64_t; /* macOS */
#endif
EOF
cat > "$SHIM/bits/stdint-uintn.h" <<'EOF'
#ifndef _BITS_STDINT_UINTN_H
#define _BITS_STDINT_UINTN_H 1
#include <bits/types.h>
typedef __uint8_t uint8_t;
typedef __uint16_t uint16_t;
typedef __uint32_t uint32_t;
typedef unsigned long long uint64_t; /* macOS */
#endif
EOF
SHIM="$(cd "$SHIM" && pwd)"
ROOT="$PWD"
(cd "$BUILD" && ninja -t commands) | grep -E " -c $ROOT/(src|tools|tests|bench|fuzz)/" | sort -u |
  sed -E "s# -MD -MT [^ ]+ -MF [^ ]+ -o [^ ]+ -c # -fsyntax-only -I$SHIM -c #; s# -fsanitize[^ ]*##g; s# -O[0-9s] # -O0 #" \
  > "$BUILD/mac-int-types.cmds"
echo "check-macos-int-types: $(wc -l < "$BUILD/mac-int-types.cmds") sources"
fail=0
(cd "$BUILD" && tr '\n' '\0' < mac-int-types.cmds | xargs -0 -P "${JOBS:-2}" -I{} sh -c '{}') || fail=1
[ "$fail" = 0 ] && echo "check-macos-int-types: no errors with int64_t = long long" || echo "check-macos-int-types: FAILED"
exit "$fail"
