# Cross-compiling lockstep for arm64 Linux (aarch64) on a Debian 12 x86-64 host.
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DLOCKSTEP_CUDA=OFF
#
# Compiler: Debian's crossbuild-essential-arm64 (aarch64-linux-gnu-g++ 12, its own libc and
# libstdc++ under /usr/aarch64-linux-gnu). Libraries: an arm64 sysroot made of Debian's arm64
# .debs unpacked with `dpkg -x` (scripts/test-arm64.sh makes it; default build-arm64/sysroot,
# else -DLOCKSTEP_ARM64_SYSROOT=DIR or the environment variable of that name), so nothing arm64
# is installed on the host. Code generators run on the host: protoc is the host's amd64 protoc
# (the same protobuf 3.21.12 as the arm64 libprotobuf).
# Tests run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR) with the sysroot as the guest's
# root for libraries (-L) and a CPU model without SVE (QEMU_CPU, default neoverse-n1), so
# oneDNN sees what it sees on Apple Silicon: NEON (ASIMD) only.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT LOCKSTEP_ARM64_SYSROOT)
  if(DEFINED ENV{LOCKSTEP_ARM64_SYSROOT})
    set(LOCKSTEP_ARM64_SYSROOT "$ENV{LOCKSTEP_ARM64_SYSROOT}")
  else()
    get_filename_component(LOCKSTEP_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build-arm64/sysroot" ABSOLUTE)
  endif()
endif()
set(LOCKSTEP_ARM64_SYSROOT "${LOCKSTEP_ARM64_SYSROOT}" CACHE PATH "arm64 libraries (unpacked Debian .debs)")
if(NOT EXISTS "${LOCKSTEP_ARM64_SYSROOT}/usr/include")
  message(FATAL_ERROR "no arm64 sysroot at ${LOCKSTEP_ARM64_SYSROOT}: run scripts/test-arm64.sh (it unpacks one)")
endif()
# try_compile projects re-read this file: hand them the sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LOCKSTEP_ARM64_SYSROOT)

# Libraries, headers and CMake packages come from the sysroot alone; programs (protoc) from the host.
set(CMAKE_FIND_ROOT_PATH "${LOCKSTEP_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Not --sysroot: libc and libstdc++ stay the cross compiler's own. The sysroot's headers come
# before the compiler's fallback /usr/include (the host's, arch-independent only), its arm64
# triplet headers (opensslconf.h, cblas.h) are found at all, and the linker resolves the
# libraries' own dependencies (libgfortran, libgomp, libz) inside it.
foreach(lang C CXX)
  set(CMAKE_${lang}_STANDARD_INCLUDE_DIRECTORIES
      "${LOCKSTEP_ARM64_SYSROOT}/usr/include/aarch64-linux-gnu" "${LOCKSTEP_ARM64_SYSROOT}/usr/include")
endforeach()
set(_lockstep_rpath_link
    "-Wl,-rpath-link,${LOCKSTEP_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${LOCKSTEP_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_lockstep_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_lockstep_rpath_link}")

# ctest (and gtest_discover_tests) run arm64 binaries through qemu-user.
if(DEFINED ENV{QEMU_CPU} AND NOT "$ENV{QEMU_CPU}" STREQUAL "")
  set(_lockstep_qemu_cpu "$ENV{QEMU_CPU}")
else()
  set(_lockstep_qemu_cpu neoverse-n1)
endif()
set(LOCKSTEP_QEMU_CPU "${_lockstep_qemu_cpu}" CACHE STRING "qemu-aarch64 CPU model for tests (no SVE: neoverse-n1, cortex-a76)")
find_program(LOCKSTEP_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${LOCKSTEP_QEMU_AARCH64};-L;${LOCKSTEP_ARM64_SYSROOT};-cpu;${LOCKSTEP_QEMU_CPU}")
# No build RPATH: under qemu the sysroot is the guest's root (-L), so the loader finds the
# libraries in their Debian places; an RPATH would only name host paths.
set(CMAKE_SKIP_BUILD_RPATH ON)
