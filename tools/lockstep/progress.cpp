#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace lockstep::cli {

Progress::Progress(int total) : total_(total), enabled_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { clear(); }

void Progress::step(const std::string& what) {
  ++done_;
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K[%d/%d] %s", done_, total_, what.c_str());
  std::fflush(stderr);
}

void Progress::clear() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace lockstep::cli
