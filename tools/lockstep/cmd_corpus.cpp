// `lockstep corpus`: the corpus tool is Python (Ray, pyarrow, piper-tts's phonemizer), so this
// subcommand hands its arguments to `python3 -m lockstep.corpus` — the python3 beside this binary
// when there is one (a venv or wheel install puts both in one bin/), else the one on PATH.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "core/self_exe.h"

namespace lockstep::cli {

int cmd_corpus(const std::vector<std::string>& args, const char* argv0) {
  namespace fs = std::filesystem;
  std::string python = "python3";
  try {
    const fs::path bin = fs::path(self_executable_path()).parent_path();
    std::error_code ec;
    if (fs::exists(bin / "python3", ec)) python = (bin / "python3").string();
  } catch (const Error&) {  // the platform cannot say where this binary is: PATH's python3
  }
  std::vector<std::string> words = {python, "-m", "lockstep.corpus"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << (argv0 ? argv0 : "lockstep") << ": corpus: cannot start " << python << ": " << std::strerror(errno)
            << " (the corpus tool is Python: pip install 'lockstep[corpus]')\n";
  return kExitFail;
}

}  // namespace lockstep::cli
