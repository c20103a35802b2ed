// `lockstep reduce`: the first divergent node alone, fed the reference's values of its inputs,
// re-checked on both sides (optionally with synthetic weights), written with a SHA-256 manifest.
// Exit 0 when the sides agree (nothing written), 1 when a reproducer was written.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "commands.h"
#include "diff/reduce.h"
#include "inputs.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

diff::Runner side(const std::string& spec) {
  if (!find_backend(spec) && spec.find_first_of(" \t/") == std::string::npos)
    throw Error(ErrorCode::InvalidArgument,
                "unknown backend '" + spec +
                    "' (known: reference, cpu, cuda, vulkan; an external runner is a command line, "
                    "e.g. 'python3 runners/ort_runner.py')");
  return diff::Runner::parse(spec);
}

}  // namespace

int cmd_reduce(const ReduceArgs& args) {
  diff::ReduceOptions options;
  if (!args.synthetic.empty()) options.synthetic = diff::parse_synthetic_weights(args.synthetic);
  diff::Runner ref = side(args.ref), test = side(args.test);
  ref.threads = test.threads = args.common.threads;
  if (args.timeout > 0) ref.timeout_seconds = test.timeout_seconds = args.timeout;
  Model model = load_model_or_default(args.model);
  ModelInputs inputs = gather_inputs(model.graph(), args.inputs);
  options.bisect.input_shapes = inputs.bind;
  options.bisect.progress = [](const std::string& line) {
    std::cerr << "lockstep: " << line << '\n';
  };

  std::string model_path = args.model, temp;
  if (model_path.empty()) {  // runners read files: write the embedded default to a temporary one
    temp = (fs::temp_directory_path() / ("lockstep_reduce_" + std::to_string(::getpid()))).string();
    fs::create_directories(temp);
    model_path = temp + "/seed_flow.onnx";
    zoo::write_seed_flow_onnx(model_path);
  }
  diff::ReduceResult r;
  try {
    r = diff::reduce(model_path, ref, test, inputs.tensors, args.out_dir, options);
  } catch (...) {
    if (!temp.empty()) fs::remove_all(temp);
    throw;
  }
  if (!temp.empty()) fs::remove_all(temp);
  std::cout << diff::format_reduce(r);
  if (!r.diverged) return kExitOk;
  if (!r.still_diverges)
    std::cerr << "lockstep: warning: the reduced model does not diverge on its own\n";
  if (r.synthetic && !r.synthetic_diverges)
    std::cerr
        << "lockstep: warning: the divergence does not survive synthetic weights; rerun without "
           "--synthetic-weights for a reproducer with the original weights\n";
  return kExitFail;
}

}  // namespace lockstep::cli
