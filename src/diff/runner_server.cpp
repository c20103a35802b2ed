#include "diff/runner_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/environ.h"
#include "diff/runner.h"
#include "lockstep/error.h"

namespace lockstep::diff {
namespace {

std::string tail_of(const std::string& path) { return runner_log_tail(path); }

// write() that reports a runner gone as EPIPE instead of letting SIGPIPE end this process:
// SIGPIPE is blocked on this thread around the write, and one it raised is taken back.
ssize_t write_no_sigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = write(fd, data, size);
  if (w < 0 && errno == EPIPE) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
    errno = EPIPE;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return w;
}

}  // namespace

RunnerServer::RunnerServer(const std::string& command, const std::string& log_path, double timeout_seconds)
    : command_(command), log_path_(log_path) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw Error(ErrorCode::Io, "cannot create pipes for runner '" + command + "'");
  std::vector<std::string> argv_s = {"/bin/sh", "-c", command + " \"$@\"", "lockstep-runner", "--serve"};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: ending the server ends its children
  int rc = posix_spawn(&pid_, "/bin/sh", &actions, &attr, argv.data(), process_environment());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  to_runner_ = in[1];
  from_runner_ = out[0];
  fcntl(to_runner_, F_SETFD, FD_CLOEXEC);
  fcntl(from_runner_, F_SETFD, FD_CLOEXEC);
  if (rc != 0) {
    close(to_runner_);
    close(from_runner_);
    throw Error(ErrorCode::Io, "cannot start runner '" + command + "': " + std::strerror(rc));
  }
  std::string hello = read_line(timeout_seconds, "its protocol v2 announcement (--serve)");
  nlohmann::json j = nlohmann::json::parse(hello, nullptr, false);
  if (!j.is_object() || j.value("lockstep_runner", 0) != 2)
    throw Error(ErrorCode::Io, "runner '" + command + "' " + kNotV2 + ": started with --serve it " +
                                   "printed '" + hello.substr(0, 200) + "' (docs/runner-protocol.md)" + tail_of(log_path_));
}

RunnerServer::~RunnerServer() {
  if (to_runner_ >= 0) close(to_runner_);  // EOF: a well-behaved runner exits
  if (from_runner_ >= 0) close(from_runner_);
  if (pid_ <= 0) return;
  int status = 0;
  for (int i = 0; i < 100; ++i) {  // up to a second
    if (waitpid(pid_, &status, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(-pid_, SIGKILL);
  waitpid(pid_, &status, 0);
}

std::string RunnerServer::read_line(double timeout_seconds, const std::string& waiting_for) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    double left = timeout_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left <= 0)
      throw Error(ErrorCode::Io, "runner '" + command_ + "' sent no " + waiting_for + " within " +
                                     std::to_string(int(timeout_seconds)) + " s" + tail_of(log_path_));
    pollfd p{from_runner_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno != EINTR) throw Error(ErrorCode::Io, "poll failed on runner '" + command_ + "'");
    if (n <= 0) continue;
    char chunk[4096];
    ssize_t got = read(from_runner_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      int status = 0;
      std::string how = "it ended";
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        how = WIFEXITED(status) ? "it exited with status " + std::to_string(WEXITSTATUS(status)) : "it was killed";
      }
      throw Error(ErrorCode::Io, "runner '" + command_ + "' closed its output before " + waiting_for + ": " + how +
                                     (requests_ == 0 ? std::string(" (") + kNotV2 + "?)" : std::string()) +
                                     tail_of(log_path_));
    }
    buffered_.append(chunk, static_cast<size_t>(got));
  }
}

bool is_not_v2_error(const Error& e) { return std::string(e.what()).find(kNotV2) != std::string::npos; }

void RunnerServer::request(const std::string& model_path, const std::string& input_dir, const std::string& output_dir,
                           const std::vector<std::string>& wanted, double timeout_seconds) {
  nlohmann::json req = {{"model", model_path}, {"inputs", input_dir}, {"outputs", output_dir}, {"wanted", wanted}};
  std::string line = req.dump() + "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t w = write_no_sigpipe(to_runner_, line.data() + done, line.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw Error(ErrorCode::Io, "runner '" + command_ + "' stopped reading requests" + tail_of(log_path_));
    done += static_cast<size_t>(w);
  }
  ++requests_;
  std::string reply = read_line(timeout_seconds, "reply to request " + std::to_string(requests_));
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  if (!j.is_object() || !j.contains("ok"))
    throw Error(ErrorCode::Io, "runner '" + command_ + "' replied '" + reply.substr(0, 200) +
                                   "', not a protocol v2 reply" + tail_of(log_path_));
  if (!j["ok"].get<bool>())
    throw Error(ErrorCode::Io, "runner '" + command_ + "' failed request " + std::to_string(requests_) + " on " +
                                   model_path + ": " + j.value("error", std::string("(no reason given)")) +
                                   tail_of(log_path_));
}

}  // namespace lockstep::diff
