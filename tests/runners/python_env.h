// Finding a Python that can run the runners in runners/ (tests SKIP with a message without one).
#pragma once

#include "support/paths.h"
#include <cstdlib>
#include <string>
#include <vector>

namespace lockstep::test {

inline std::string runners_dir() {
  return lockstep_test::source_dir() + "/runners";
}

// The first of $LOCKSTEP_PYTHON, the repo's .venv, python3 on PATH, /usr/bin/python3 that imports
// every module in `modules` (e.g. "onnxruntime onnx numpy"); "" when none does.
inline std::string find_python(const std::string& modules,
                               const char* env_var = "LOCKSTEP_PYTHON") {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(env_var); env && *env) candidates.push_back(env);
  candidates.push_back(lockstep_test::source_dir() + "/.venv/bin/python3");
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  std::string imports;
  for (size_t start = 0; start < modules.size();) {
    size_t end = modules.find(' ', start);
    if (end == std::string::npos) end = modules.size();
    if (end > start) imports += "import " + modules.substr(start, end - start) + ";";
    start = end + 1;
  }
  for (const auto& python : candidates) {
    std::string cmd = python + " -c '" + imports + "' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return python;
  }
  return "";
}

// "PYTHON RUNNERS/ort_runner.py" and a faulty wrapper around it.
inline std::string ort_runner_command(const std::string& python) {
  return python + " " + runners_dir() + "/ort_runner.py";
}
inline std::string faulty_ort_command(const std::string& python, const std::string& node,
                                      const std::string& kind, double amount) {
  return python + " " + runners_dir() + "/faulty_runner.py --node '" + node + "' --kind " + kind +
         " --amount " + std::to_string(amount) + " --inner ort";
}

}  // namespace lockstep::test
