#include "diff/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "core/atomic_file.h"
#include "core/environ.h"
#include "core/npy.h"
#include "diff/runner_server.h"
#include "lockstep/lockstep.h"
#include "onnx/import.h"

namespace lockstep::diff {

namespace fs = std::filesystem;

namespace {

constexpr size_t kLogTailBytes = 2000;  // how much of a failed runner's log goes into the error

}  // namespace

std::string runner_log_tail(const std::string& log_path) {
  std::error_code ec;
  if (!fs::exists(log_path, ec)) return "";
  std::string text;
  try {
    text = read_file(log_path);
  } catch (const Error&) {
    return "";
  }
  if (text.size() > kLogTailBytes) text = "..." + text.substr(text.size() - kLogTailBytes);
  return text.empty() ? "" : "\n--- " + log_path + " (tail) ---\n" + text;
}

namespace {

std::string log_tail(const std::string& log_path) { return runner_log_tail(log_path); }

void check_stems(const std::vector<std::string>& names, const std::string& what) {
  std::map<std::string, std::string> seen;
  for (const auto& name : names) {
    auto [it, fresh] = seen.emplace(runner_file_stem(name), name);
    if (!fresh && it->second != name)
      throw Error(ErrorCode::InvalidArgument,
                  what + " tensors '" + it->second + "' and '" + name +
                      "' have the same runner file name '" + it->first +
                      ".npy' (docs/runner-protocol.md); rename one of them");
  }
}

NamedTensors run_backend(const std::string& name, int threads, const std::string& model_path,
                         const NamedTensors& inputs, const std::vector<std::string>& wanted) {
  Model model = Model::load(model_path);
  const ir::Graph& g = model.graph();
  Options options;
  options.threads = threads;
  std::vector<Tensor> feeds;
  for (ir::ValueId v : g.inputs) {
    const ir::Value& value = g.value(v);
    auto it = inputs.find(value.name);
    if (it == inputs.end())
      throw Error(ErrorCode::MissingInput,
                  "backend runner '" + name + "': no value for input '" + value.name + "'");
    Tensor t = it->second;
    if (t.dtype() != value.dtype) t = t.to(value.dtype);
    options.input_shapes[value.name] = t.shape();
    feeds.push_back(t);
  }
  auto exe = compile(model, name, options);
  std::vector<Tensor> outs = exe->run(feeds);
  NamedTensors result;
  for (const auto& w : wanted) {
    bool found = false;
    for (size_t i = 0; i < g.outputs.size(); ++i)
      if (g.value(g.outputs[i]).name == w) {
        result[w] = outs.at(i);
        found = true;
      }
    if (!found)
      throw Error(ErrorCode::InvalidArgument,
                  "backend runner '" + name + "': '" + w + "' is no output of " + model_path);
  }
  return result;
}

// The files of one call (both protocol versions): inputs written to WORK/inputs, an empty
// WORK/outputs for the runner to fill.
struct CallFiles {
  fs::path in_dir, out_dir;
};

CallFiles prepare_call(const NamedTensors& inputs, const std::vector<std::string>& wanted, const std::string& work_dir) {
  std::vector<std::string> input_names;
  for (const auto& [name, t] : inputs) input_names.push_back(name);
  check_stems(input_names, "input");
  check_stems(wanted, "wanted");
  fs::path dir(work_dir);
  CallFiles f{fs::absolute(dir / "inputs"), fs::absolute(dir / "outputs")};
  std::error_code ec;
  fs::remove_all(f.in_dir, ec);
  fs::remove_all(f.out_dir, ec);
  fs::create_directories(f.in_dir);
  fs::create_directories(f.out_dir);
  for (const auto& [name, t] : inputs)
    write_npy((f.in_dir / (runner_file_stem(name) + ".npy")).string(), t);
  return f;
}

NamedTensors collect_outputs(const std::string& command, const CallFiles& f, const std::vector<std::string>& wanted,
                             const std::string& log) {
  NamedTensors result;
  for (const auto& w : wanted) {
    fs::path file = f.out_dir / (runner_file_stem(w) + ".npy");
    if (!fs::exists(file))
      throw Error(ErrorCode::Io, "runner '" + command + "' reported success but wrote no " + file.string() +
                                     " for tensor '" + w + "'" + log_tail(log));
    result[w] = read_npy(file.string());
  }
  return result;
}

NamedTensors run_command(const std::string& command, double timeout, const std::string& model_path,
                         const NamedTensors& inputs, const std::vector<std::string>& wanted,
                         const std::string& work_dir) {
  CallFiles f = prepare_call(inputs, wanted, work_dir);
  std::vector<std::string> args = {fs::absolute(model_path).string(), f.in_dir.string(), f.out_dir.string()};
  args.insert(args.end(), wanted.begin(), wanted.end());
  std::string log = (fs::path(work_dir) / "runner.log").string();
  SpawnResult r = spawn_command(command, args, log, timeout);
  if (r.timed_out)
    throw Error(ErrorCode::Io, "runner '" + command + "' did not finish within " +
                                   std::to_string(int(timeout)) + " s on " + model_path +
                                   log_tail(log));
  if (r.exit_code != 0)
    throw Error(ErrorCode::Io, "runner '" + command + "' failed (exit status " +
                                   std::to_string(r.exit_code) + ") on " + model_path +
                                   log_tail(log));
  return collect_outputs(command, f, wanted, log);
}

}  // namespace

// The long-lived process of a persistent Runner and the folder of its log and call files.
struct PersistentRunnerState {
  std::mutex mutex;
  std::string dir;
  std::unique_ptr<RunnerServer> server;
  ~PersistentRunnerState() {
    server.reset();  // the process first: it may still hold files in dir
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

Runner Runner::persistent(const std::string& command_line) {
  Runner r = command(command_line);
  r.kind_ = Kind::Persistent;
  r.persistent_ = std::make_shared<PersistentRunnerState>();
  return r;
}

int Runner::requests_served() const {
  if (!persistent_) return 0;
  std::lock_guard<std::mutex> lock(persistent_->mutex);
  return persistent_->server ? persistent_->server->requests() : 0;
}

std::string runner_file_stem(const std::string& tensor_name) {
  std::string s = tensor_name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return s;
}

void require_known_side(const std::string& spec) {
  if (!find_backend(spec) && spec.find_first_of(" \t/") == std::string::npos)
    throw Error(ErrorCode::InvalidArgument, "unknown backend '" + spec +
                                                "' (known: reference, cpu, cuda; an external runner is a command line "
                                                "or, from Python, a callable)");
}

bool is_lockstep_backend_name(const std::string& spec) {
  return find_backend(spec) != nullptr;
}

Runner Runner::parse(const std::string& spec) {
  if (spec.empty())
    throw Error(ErrorCode::InvalidArgument, "empty runner: give a backend name or a command");
  return is_lockstep_backend_name(spec) ? backend(spec) : command(spec);
}

Runner Runner::backend(const std::string& name) {
  if (!is_lockstep_backend_name(name))
    throw Error(ErrorCode::InvalidArgument,
                "unknown backend '" + name + "' (reference, cpu or cuda)");
  Runner r;
  r.kind_ = Kind::Backend;
  r.spec_ = name;
  return r;
}

Runner Runner::command(const std::string& command_line) {
  bool blank = command_line.find_first_not_of(" \t\n") == std::string::npos;
  if (blank) throw Error(ErrorCode::InvalidArgument, "empty runner command");
  Runner r;
  r.kind_ = Kind::Command;
  r.spec_ = command_line;
  return r;
}

Runner Runner::function(const std::string& display_name, RunnerFn fn) {
  Runner r;
  r.kind_ = Kind::Function;
  r.spec_ = display_name;
  r.fn_ = std::move(fn);
  return r;
}

NamedTensors Runner::run(const std::string& model_path, const NamedTensors& inputs,
                         const std::vector<std::string>& wanted,
                         const std::string& work_dir) const {
  switch (kind_) {
    case Kind::Backend:
      return run_backend(spec_, threads, model_path, inputs, wanted);
    case Kind::Function: {
      NamedTensors out = fn_(model_path, inputs, wanted);
      for (const auto& w : wanted)
        if (!out.count(w))
          throw Error(ErrorCode::Io, "runner '" + spec_ + "' returned no '" + w + "'");
      return out;
    }
    case Kind::Persistent: {
      PersistentRunnerState& state = *persistent_;
      std::lock_guard<std::mutex> lock(state.mutex);
      if (!state.server) {
        std::string tmpl = (fs::temp_directory_path() / "lockstep-server-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw Error(ErrorCode::Io, "cannot create a temporary folder " + tmpl);
        state.dir = tmpl;
        state.server = std::make_unique<RunnerServer>(spec_, state.dir + "/runner.log", timeout_seconds);
      }
      const std::string dir = work_dir.empty() ? state.dir + "/call" : work_dir;
      CallFiles f = prepare_call(inputs, wanted, dir);
      state.server->request(fs::absolute(model_path).string(), f.in_dir.string(), f.out_dir.string(), wanted,
                            timeout_seconds);
      return collect_outputs(spec_, f, wanted, state.server->log_path());
    }
    case Kind::Command: {
      if (!work_dir.empty())
        return run_command(spec_, timeout_seconds, model_path, inputs, wanted, work_dir);
      std::string tmpl = (fs::temp_directory_path() / "lockstep-runner-XXXXXX").string();
      if (!mkdtemp(tmpl.data()))
        throw Error(ErrorCode::Io, "cannot create a temporary folder " + tmpl);
      std::error_code ec;
      try {
        NamedTensors out = run_command(spec_, timeout_seconds, model_path, inputs, wanted, tmpl);
        fs::remove_all(tmpl, ec);
        return out;
      } catch (...) {
        fs::remove_all(tmpl, ec);
        throw;
      }
    }
  }
  return {};
}

SpawnResult spawn_command(const std::string& command, const std::vector<std::string>& args,
                          const std::string& log_path, double timeout_seconds) {
  std::vector<std::string> argv_s = {"/bin/sh", "-c", command + " \"$@\"", "lockstep-runner"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: a timeout kills the runner's children too

  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), process_environment());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw Error(ErrorCode::Io, "cannot start runner '" + command + "': " + std::strerror(rc));

  SpawnResult result;
  int status = 0;
  auto sleep = std::chrono::milliseconds(2);
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR)
      throw Error(ErrorCode::Io, "waitpid failed for runner '" + command + "'");
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > timeout_seconds) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(50)) sleep *= 2;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace lockstep::diff
