#include "support/paths.h"

namespace lockstep_test {
std::string source_dir() { return LOCKSTEP_SOURCE_DIR; }
std::string binary_dir() { return LOCKSTEP_BINARY_DIR; }
std::string cli_command() { return LOCKSTEP_CLI; }
}  // namespace lockstep_test
