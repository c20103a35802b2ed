// Protocol v2 of docs/runner-protocol.md: one long-lived runner process that serves many requests,
// so that several compilations happen inside one process of the other runtime (the state carried
// between them is what the in-process checks look at). Started as `RUNNER --serve`; it first
// prints {"lockstep_runner": 2}, then answers each request line on stdin with one reply line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace lockstep {
class Error;
}

namespace lockstep::diff {

// The words of the error a runner gets when it does not announce protocol v2.
inline constexpr const char* kNotV2 = "does not speak protocol v2";
// True for that error: a v1-only runner, which callers note and go on without.
bool is_not_v2_error(const Error& e);

class RunnerServer {
 public:
  // Starts the runner; stderr (and anything else it prints there) goes to `log_path`. Throws
  // Error(Io) naming the command when it does not announce protocol v2 within `timeout_seconds`.
  RunnerServer(const std::string& command, const std::string& log_path, double timeout_seconds);
  ~RunnerServer();  // closes stdin, waits a moment, then kills the process group
  RunnerServer(const RunnerServer&) = delete;
  RunnerServer& operator=(const RunnerServer&) = delete;

  // One request: the runner runs `model_path` on `input_dir`'s files and writes the wanted
  // tensors into `output_dir`. Throws Error(Io) with the runner's reason or the log's tail.
  void request(const std::string& model_path, const std::string& input_dir, const std::string& output_dir,
               const std::vector<std::string>& wanted, double timeout_seconds);

  int requests() const { return requests_; }
  const std::string& log_path() const { return log_path_; }

 private:
  std::string read_line(double timeout_seconds, const std::string& waiting_for);

  std::string command_, log_path_;
  pid_t pid_ = -1;
  int to_runner_ = -1, from_runner_ = -1;
  std::string buffered_;  // bytes read past the last line
  int requests_ = 0;
};

}  // namespace lockstep::diff
