// Where this build's checkout, build tree and CLI are. Only support/paths.cpp is compiled with
// them, so no other test source depends on where the checkout lies: a compiler cache serves
// every other test object to another clone of the same commit (docs/ci.md).
#pragma once
#include <string>

namespace lockstep_test {
std::string source_dir();   // the checkout (CMAKE_SOURCE_DIR)
std::string binary_dir();   // the build tree (CMAKE_BINARY_DIR)
std::string cli_command();  // the lockstep CLI as a shell command: the binary, or an emulator and the binary
}  // namespace lockstep_test
