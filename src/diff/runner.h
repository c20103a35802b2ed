// Runners: who computes tensors for bisect/reduce. Either one of lockstep's backends (in-process)
// or an external command speaking docs/runner-protocol.md, run in a fresh process each time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/tensor.h"

namespace lockstep::diff {

inline constexpr double kDefaultRunnerTimeoutSeconds = 600;

// The protocol's file name of a tensor: every byte outside [A-Za-z0-9._-] becomes '_', then
// ".npy" is appended by the caller. Two names with the same stem in one call are an error.
std::string runner_file_stem(const std::string& tensor_name);

// The last 2000 bytes of a runner's log as a block for an error message ("" when there is none).
std::string runner_log_tail(const std::string& log_path);

// A side given as text is a backend name or a command line (with a space or a '/'); a bare
// unknown word is a misspelt backend: Error(InvalidArgument) naming it.
void require_known_side(const std::string& spec);

// True for "reference", "cpu", "cuda" (names find_backend knows).
bool is_lockstep_backend_name(const std::string& spec);

// Named tensors in, named tensors out.
using NamedTensors = std::map<std::string, Tensor>;
// An in-process runner for tests: (model path, inputs by name, wanted names) -> wanted tensors.
using RunnerFn =
    std::function<NamedTensors(const std::string& model_path, const NamedTensors& inputs,
                               const std::vector<std::string>& wanted)>;

class RunnerServer;
struct PersistentRunnerState;

class Runner {
 public:
  enum class Kind { Backend, Command, Function, Persistent };

  // A lockstep backend name, else an external command (a shell fragment; its arguments are
  // appended as "$@", so "python3 runners/ort_runner.py --threads 1" works).
  static Runner parse(const std::string& spec);
  static Runner backend(const std::string& name);
  static Runner command(const std::string& command_line);
  // In-process callables: the Python package's runners, and tests.
  static Runner function(const std::string& display_name, RunnerFn fn);
  // A command served by ONE long-lived process (protocol v2: `COMMAND --serve`,
  // docs/runner-protocol.md), started at the first run(); copies of this Runner share it, so
  // every run is a later compilation inside the same process of the other runtime.
  static Runner persistent(const std::string& command_line);
  // Requests the persistent process has served (0 for other kinds).
  int requests_served() const;

  Kind kind() const { return kind_; }
  bool is_reference() const { return kind_ == Kind::Backend && spec_ == "reference"; }
  const std::string& spec() const { return spec_; }  // backend name, command line or display name

  // Runs the model file on `inputs` and returns every name in `wanted` (graph outputs of the
  // model). `work_dir` (created if absent) receives inputs/, outputs/ and runner.log for a
  // command; empty: a temporary folder, removed afterwards. Throws Error(Io / InvalidModel) naming
  // the runner, the tensor and the log.
  NamedTensors run(const std::string& model_path, const NamedTensors& inputs,
                   const std::vector<std::string>& wanted, const std::string& work_dir) const;

  double timeout_seconds = kDefaultRunnerTimeoutSeconds;
  int threads = 0;  // lockstep backends only

 private:
  Kind kind_ = Kind::Backend;
  std::string spec_;
  RunnerFn fn_;
  std::shared_ptr<PersistentRunnerState> persistent_;
};

// Result of spawning a command: exit status (-1 killed by timeout or signal) and the log path.
struct SpawnResult {
  int exit_code = -1;
  bool timed_out = false;
  double seconds = 0;
};
// Runs `/bin/sh -c '<command> "$@"' lockstep-runner ARGS...` with stdout and stderr appended to
// `log_path`, in its own process group (killed as a group on timeout).
SpawnResult spawn_command(const std::string& command, const std::vector<std::string>& args,
                          const std::string& log_path, double timeout_seconds);

}  // namespace lockstep::diff
