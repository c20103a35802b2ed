// A one-line progress indicator on stderr, shown only when stderr is a terminal.
#pragma once

#include <string>

namespace lockstep::cli {

class Progress {
 public:
  explicit Progress(int total);
  ~Progress();  // clears the line
  void step(const std::string& what);  // "[k/total] what"
  void clear();

 private:
  int total_;
  int done_ = 0;
  bool enabled_;
};

}  // namespace lockstep::cli
