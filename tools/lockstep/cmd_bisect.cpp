// `lockstep bisect`: the first node where a tested side departs from the reference side.
// Lockstep backends are compared at every kernel boundary of one compiled graph through taps
// (diff/bisect.h); an external runner command is bisected by extracting subgraphs
// (diff/external_bisect.h). Exit 0 when everything agrees, 1 on divergence.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "commands.h"
#include "core/atomic_file.h"
#include "diff/bisect.h"
#include "diff/external_bisect.h"
#include "diff/report.h"
#include "inputs.h"
#include "progress.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

// A side is a lockstep backend name, or an external runner: a command line with a path or
// arguments. A bare unknown word is most likely a misspelt backend.
bool is_external(const std::string& spec) {
  if (find_backend(spec)) return false;
  if (spec.find_first_of(" \t/") == std::string::npos)
    throw Error(ErrorCode::InvalidArgument,
                "unknown backend '" + spec + "' (known: reference, cpu, cuda, vulkan; an external runner is a command line, "
                "e.g. 'python3 runners/ort_runner.py')");
  return true;
}

diff::LocalMode parse_local(const std::string& s) {
  if (s == "first") return diff::LocalMode::First;
  if (s == "divergent") return diff::LocalMode::Divergent;
  if (s == "all") return diff::LocalMode::All;
  throw Error(ErrorCode::InvalidArgument, "--local must be first, divergent or all (given '" + s + "')");
}

void emit(const std::string& text, const std::string& out_path) {
  if (out_path.empty()) {
    std::cout << text;
    if (!text.empty() && text.back() != '\n') std::cout << '\n';
  } else {
    write_file_atomic(out_path, text);
    std::cerr << "lockstep: report written to " << out_path << '\n';
  }
}

int bisect_external_cli(const BisectArgs& args, const std::string& format, const ModelInputs& inputs,
                        bool embedded) {
  if (format != "text" && format != "json")
    throw Error(ErrorCode::InvalidArgument, "--format " + format + " is for lockstep backends; the bisection of an "
                                            "external runner prints text or json");
  if (!args.warm_up_with.empty() && !args.in_process)
    throw Error(ErrorCode::InvalidArgument, "--warm-up-with needs --in-process (it sets up a runner process's state)");
  for (const auto& m : args.warm_up_with)
    if (!fs::exists(m)) throw Error(ErrorCode::Io, "--warm-up-with: no model file '" + m + "'");
  std::string model_path = args.model;
  std::string temp;
  if (embedded) {  // runners read a file: write the embedded default beside the work files
    temp = (fs::temp_directory_path() / ("lockstep_bisect_" + std::to_string(::getpid()))).string();
    fs::create_directories(temp);
    model_path = temp + "/seed_flow.onnx";
    zoo::write_seed_flow_onnx(model_path);
  }
  diff::ExternalBisectOptions options;
  options.input_shapes = inputs.bind;
  options.progress = [](const std::string& line) { std::cerr << "lockstep: " << line << '\n'; };
  // --in-process: a runner command becomes one persistent process (protocol v2) that first runs
  // the whole model, so every subgraph is a later compile there (the report's in-process column).
  auto side = [&](const std::string& spec) {
    return args.in_process && !find_backend(spec) ? diff::Runner::persistent(spec) : diff::Runner::parse(spec);
  };
  diff::Runner ref = side(args.ref), test = side(args.test);
  options.warm_up = args.in_process;
  options.warm_up_models = args.warm_up_with;
  ref.threads = test.threads = args.common.threads;
  diff::ExternalBisectResult result;
  try {
    result = diff::bisect_external(model_path, ref, test, inputs.tensors, options);
  } catch (...) {
    if (!temp.empty()) fs::remove_all(temp);
    throw;
  }
  if (!temp.empty()) fs::remove_all(temp);
  emit(format == "json" ? diff::external_bisect_json(result) : diff::format_external_bisect(result), args.out);
  return result.diverged ? kExitFail : kExitOk;
}

}  // namespace

int cmd_bisect(const BisectArgs& args) {
  std::string format = args.common.json ? "json" : args.format;
  if (format != "text" && format != "markdown" && format != "json" && format != "html")
    throw Error(ErrorCode::InvalidArgument, "--format must be text, markdown, json or html (given '" + format + "')");
  if (format == "html" && args.out.empty())
    throw Error(ErrorCode::InvalidArgument, "--format html needs -o FILE.html");
  diff::LocalMode local = parse_local(args.local);
  if (!(args.safety >= 1)) throw Error(ErrorCode::InvalidArgument, "--safety must be at least 1");
  if (!(args.floor > 0)) throw Error(ErrorCode::InvalidArgument, "--floor must be positive");
  const bool external = is_external(args.ref) | is_external(args.test);

  const bool embedded = args.model.empty();
  Model model = load_model_or_default(args.model);
  ModelInputs inputs;
  if (embedded && !has_input_args(args.inputs)) inputs.tensors = zoo::seed_flow_inputs();
  else inputs = gather_inputs(model.graph(), args.inputs);
  if (inputs.drawn) std::cerr << "lockstep: no inputs given; drawing them from seed " << args.inputs.seed << '\n';
  if (external) return bisect_external_cli(args, format, inputs, embedded);
  if (args.in_process)
    throw Error(ErrorCode::InvalidArgument, "--in-process is for runner commands (protocol v2); "
                                            "lockstep's backends always run in this process");
  if (!args.warm_up_with.empty())
    throw Error(ErrorCode::InvalidArgument, "--warm-up-with is for runner commands with --in-process");

  if (Model s = specialise_for_tools(model, inputs, static_cast<uint64_t>(args.inputs.seed), "bisect");
      &s.graph() != &model.graph()) {
    model = s;
    inputs.bind.clear();  // the specialised graph has its input shapes
  }
  diff::BisectConfig config;
  config.ref = args.ref;
  config.options.threads = args.common.threads;
  config.options.max_memory_bytes = args.common.max_memory;
  config.options.f64_accumulate = args.common.f64_accumulate_option();
  config.options.input_shapes = inputs.bind;
  config.tolerance.safety = args.safety;
  config.tolerance.floor = args.floor;
  config.local = local;
  config.seed = static_cast<uint64_t>(args.inputs.seed);  // random ops draw as `lockstep run --seed` does
  diff::require_backend(args.test);  // before the expensive reference run

  Progress progress(2);
  progress.step("float64 reference and cpu calibration, every kernel boundary");
  diff::Bisector bisector(model, inputs.tensors, config);
  progress.step("running " + args.test + " with taps");
  diff::BisectReport report = bisector.run(args.test);
  progress.clear();
  report.model = embedded ? "(embedded default)" : args.model;

  std::string text;
  if (format == "text") text = diff::format_text(report);
  else if (format == "markdown") text = diff::format_markdown(report);
  else if (format == "json") text = diff::to_json(report).dump(2) + "\n";
  else text = diff::format_html(report);
  emit(text, args.out);
  if (!args.out.empty()) std::cout << diff::summary_line(report) << '\n';
  return report.diverged() ? kExitFail : kExitOk;
}

}  // namespace lockstep::cli
