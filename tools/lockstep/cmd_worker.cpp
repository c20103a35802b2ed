// `lockstep __worker` (hidden): one fresh process for `check` — compile, run, write the anchor
// values and outputs into a folder. Exit 0 on success; an error goes to stderr (the parent's log).
#include <fstream>
#include <iostream>
#include <sstream>

#include "capture.h"
#include "commands.h"
#include "core/atomic_file.h"
#include "inputs.h"

namespace lockstep::cli {

int cmd_worker(const WorkerArgs& args) {
  Model model = load_model_or_default(args.model);
  InputArgs input_args;
  input_args.npz = args.inputs_npz;
  ModelInputs inputs = gather_inputs(model.graph(), input_args);
  std::vector<Anchor> anchors;
  std::istringstream lines(read_file(args.anchors_file));
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty()) anchors.push_back({0, line});
  Options options;
  options.threads = args.threads;
  options.precision = args.precision;
  options.safe = args.safe;
  options.f64_accumulate = f64_accumulate_from_flag(args.f64_accumulate);
  options.input_shapes = inputs.bind;
  for (const auto& a : anchors) options.observe.push_back(a.name);
  auto exe = compile(model, args.backend, options);
  write_capture(args.out_dir, run_with_taps(*exe, inputs.tensors, anchors, args.seed));
  return kExitOk;
}

}  // namespace lockstep::cli
