// `lockstep determinism`: N fresh processes (the hidden __worker) and an in-process sequence
// (compile A, run twice; A at another length; compile B and C, A's graph with other weights, run;
// compile A again, also from another path, run; run A1 again), SHA-256 per output per run in one
// table. Every in-process step must give the bits a fresh process gives for its model and inputs
// (B's for B, C's for C): exit 1 on any difference, naming the step and whose bits it returned.
// An external runner gets fresh processes (each call of a command is one) and, when it speaks
// protocol v2, the same sequence in one persistent process of it.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/self_exe.h"
#include "capture.h"
#include "commands.h"
#include "dynamic/executable.h"
#include "core/atomic_file.h"
#include "core/npy.h"
#include "diff/determinism.h"
#include "diff/runner.h"
#include "inputs.h"
#include "progress.h"
#include "table.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

constexpr double kWorkerTimeoutSeconds = 600;

struct ScratchDir {
  ScratchDir() {
    path = (fs::temp_directory_path() / ("lockstep_determinism_" + std::to_string(::getpid()))).string();
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string last_line(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return "";
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

int cmd_determinism(const DeterminismArgs& args) {
  if (args.runs < 1) throw Error(ErrorCode::InvalidArgument, "--runs must be at least 1");
  const bool backend = find_backend(args.backend) != nullptr;
  bool churned = false;  // the in-process sequence ran the executable at another length
  if (!backend && args.backend.find_first_of(" \t/") == std::string::npos)
    throw Error(ErrorCode::InvalidArgument, "unknown backend '" + args.backend +
                                                "' (known: reference, cpu, cuda, vulkan; an external runner is a command line)");
  if (backend) {
    std::string why;
    if (!find_backend(args.backend)->available(&why)) throw Error(ErrorCode::DeviceUnavailable, args.backend + ": " + why);
  }
  const bool embedded = args.model.empty();
  Model model = load_model_or_default(args.model);
  const ir::Graph& graph = model.graph();
  ModelInputs inputs;
  if (embedded && !has_input_args(args.inputs)) inputs.tensors = zoo::seed_flow_inputs();
  else inputs = gather_inputs(graph, args.inputs);

  diff::DeterminismReport report;
  report.backend = args.backend;
  for (ir::ValueId o : graph.outputs) report.output_names.push_back(graph.value(o).name);

  ScratchDir scratch;
  // --keep (runners): the sequence's models and inputs stay in that folder, to bisect a failed step.
  const std::string work = args.keep.empty() || backend ? scratch.path : args.keep;
  if (!args.keep.empty()) {
    if (backend) throw Error(ErrorCode::InvalidArgument, "--keep is for runner commands (lockstep's backends need no replay)");
    fs::create_directories(args.keep);
  }
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < graph.inputs.size(); ++i) named[graph.value(graph.inputs[i]).name] = inputs.tensors[i];
  std::string model_path = args.model;
  if (embedded && !backend) {
    model_path = work + "/seed_flow.onnx";
    zoo::write_seed_flow_onnx(model_path);
  }
  const std::string inputs_npz = work + "/inputs.npz", anchors = scratch.path + "/no_anchors.txt";
  write_npz(inputs_npz, named);
  write_file_atomic(anchors, "");
  const std::string self = shell_quote(self_executable_path());

  // One fresh process of the worker: `model` ("" the embedded default) on the inputs in `npz`.
  auto fresh_worker = [&](const std::string& model_file, const std::string& npz, const std::string& dir) {
    fs::create_directories(dir);
    std::vector<std::string> wargs{"__worker", "--backend", args.backend, "--inputs-npz", npz, "--anchors",
                                   anchors, "--out", dir, "--threads", std::to_string(args.common.threads)};
    if (!args.common.f64_accumulate.empty()) {
      wargs.push_back("--f64-accumulate");
      wargs.insert(wargs.end(), args.common.f64_accumulate.begin(), args.common.f64_accumulate.end());
    }
    if (!model_file.empty()) wargs.insert(wargs.begin() + 1, model_file);
    diff::SpawnResult r = diff::spawn_command(self, wargs, dir + "/log.txt", kWorkerTimeoutSeconds);
    if (r.exit_code != 0)
      throw Error(ErrorCode::Io, (r.timed_out ? std::string("worker timed out") : "worker exited with " +
                                                                                       std::to_string(r.exit_code)) +
                                     ": " + last_line(dir + "/log.txt"));
    return diff::output_hashes(read_capture(dir, 0, graph.outputs.size()).outputs);
  };

  // Backends: B and C (A's graph with other weights) and A from another path, as files.
  std::vector<diff::OtherGraph> others;
  if (backend) others = diff::sequence_others(model, inputs.tensors, scratch.path, embedded ? "" : args.model);
  Progress progress(args.runs + (backend ? 2 + static_cast<int>(others.size()) : 0));
  for (int f = 1; f <= args.runs; ++f) {
    progress.step("fresh process " + std::to_string(f) + "/" + std::to_string(args.runs));
    diff::DeterminismRun run{"fresh#" + std::to_string(f), {}, "", true};
    std::string dir = scratch.path + "/run" + std::to_string(f);
    try {
      if (backend) {
        run.sha256 = fresh_worker(embedded ? "" : args.model, inputs_npz, dir);
      } else {
        diff::NamedTensors out = diff::Runner::command(args.backend).run(model_path, named, report.output_names, dir);
        std::vector<Tensor> ordered;
        for (const auto& name : report.output_names) ordered.push_back(out.at(name));
        run.sha256 = diff::output_hashes(ordered);
      }
    } catch (const Error& e) {
      run.error = e.what();
    }
    report.runs.push_back(std::move(run));
  }
  if (backend) {
    progress.step("in-process A1, A1 again, [A1 at length B, A1 after it,] B, C, A2, A from another path, A1 after A2");
    Options options;
    options.threads = args.common.threads;
    options.max_memory_bytes = args.common.max_memory;
    options.f64_accumulate = args.common.f64_accumulate_option();
    options.input_shapes = inputs.bind;
    // Sizes known only at run time even with these shapes bound (a voice): compile unbound, so
    // that the sequence can churn lengths on the one executable (A1 at length B, then A again).
    if (dynamic::needs_run_time_shapes(model.graph(), options)) options.input_shapes.clear();
    for (auto& r : diff::in_process_sequence(model, inputs.tensors, args.backend, options, others)) {
      churned |= r.mode == "A1 at length B";
      report.runs.push_back(std::move(r));
    }
    // What a fresh process gives for each model the sequence ran besides A.
    auto fresh_other = [&](const std::string& key, const std::string& file, const std::string& npz) {
      progress.step("fresh process of " + key);
      try {
        report.fresh[key] = fresh_worker(file, npz, scratch.path + "/fresh_" + std::to_string(report.fresh.size()));
      } catch (const Error& e) {
        report.notes.push_back("no fresh run of " + key + ": " + std::string(e.what()).substr(0, 200));
      }
    };
    for (const auto& o : others)
      if (o.expect != "A") fresh_other(o.expect, o.path, inputs_npz);
    if (churned) {
      const std::string npz = scratch.path + "/inputs_at_length_b.npz";
      write_npz(npz, diff::by_input_name(graph, diff::other_length_inputs(graph, inputs.tensors)));
      fresh_other("A at length B", embedded ? "" : args.model, npz);
    }
  }
  if (!backend) {
    // The runner's own process across compilations (protocol v2): what fresh processes cannot see.
    progress.step("in-process A1, A1 again, B, C, A2, A from another path in one runner process");
    std::string note;
    for (auto& r : diff::runner_in_process_sequence(args.backend, model_path, named, report.output_names,
                                                    work, &note, &report.fresh))
      report.runs.push_back(std::move(r));
    if (!note.empty()) report.notes.push_back(note);
  }
  progress.clear();
  diff::find_differences(report);
  // A runner's failed in-process step, replayed: bisect its model in one runner process that first
  // runs the models of the steps before it (those at A's inputs), as the sequence did.
  std::string bisect_from_step;
  if (!backend && !args.keep.empty() && report.first_change.rfind("in-process ", 0) == 0) {
    std::string earlier, failed;
    for (const auto& r : report.runs) {
      if (r.mode == report.first_change) {
        failed = r.model;
        break;
      }
      if (!r.model.empty() && r.expect != "A at length B") earlier += " " + shell_quote(r.model);
    }
    if (!failed.empty())
      bisect_from_step = "lockstep bisect " + shell_quote(failed) + " --test " + shell_quote(args.backend) +
                         " --in-process" + (earlier.empty() ? "" : " --warm-up-with" + earlier) + " --inputs-npz " +
                         shell_quote(inputs_npz);
  }

  if (args.common.json) {
    nlohmann::json j = {{"model", embedded ? "(embedded default)" : args.model},
                        {"backend", args.backend},
                        {"fresh_processes", args.runs},
                        {"outputs", report.output_names},
                        {"runs", nlohmann::json::array()},
                        {"identical", report.identical()},
                        {"differences", report.differences},
                        {"first_change", report.first_change},
                        {"fresh_of_others", report.fresh},
                        {"bisect_from_step", bisect_from_step},
                        {"notes", report.notes}};
    for (const auto& r : report.runs) {
      nlohmann::json jr = {{"mode", r.mode}, {"compared", r.of_a}, {"sha256", r.sha256}, {"expect", r.expect}};
      if (!r.error.empty()) jr["error"] = r.error;
      j["runs"].push_back(jr);
    }
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "model:   " << (embedded ? "embedded default (seed-shaped VITS flow, 174 nodes)" : args.model) << '\n'
              << "backend: " << args.backend << '\n';
    Table table({"run", "output", "sha256", "status"});
    for (const auto& r : report.runs) {
      if (!r.error.empty()) {
        table.add({r.mode, "-", "-", "FAILED: " + r.error.substr(0, 80)});
        continue;
      }
      for (size_t i = 0; i < r.sha256.size(); ++i) {
        std::string name = i < report.output_names.size() ? report.output_names[i] : "#" + std::to_string(i);
        std::string status = !r.of_a ? "other graph (not compared)" : "";
        const std::string prefix = "output " + name + ": SHA-256 of " + r.mode + " differs";
        if (r.of_a)
          for (const auto& d : report.differences)
            if (d.rfind(prefix, 0) == 0) status = "DIFFERS";
        table.add({r.mode, name, r.sha256[i], status});
      }
    }
    table.print(std::cout);
    for (const auto& n : report.notes) std::cout << "NOTE: " << n << '\n';
    if (report.identical()) {
      std::string steps;
      for (const auto& r : report.runs)
        if (r.mode.rfind("fresh#", 0) != 0) steps += (steps.empty() ? "" : ", ") + r.mode;
      std::cout << "PASS: every output bit-identical across " << args.runs << " fresh processes"
                << (steps.empty() ? std::string()
                                  : std::string(backend ? " and in one process, each step with its model's fresh bits: "
                                                        : " and in one runner process, each step with its model's fresh bits: ") +
                                        steps)
                << '\n';
    }
    else {
      std::cout << "FAIL: " << report.differences.size() << " difference(s)"
                << (report.first_change.empty() ? "" : "; the bits first changed at " + report.first_change) << '\n';
      for (const auto& d : report.differences) std::cout << "  " << d << '\n';
      if (!bisect_from_step.empty()) std::cout << "to bisect from that step: " << bisect_from_step << '\n';
      else if (!backend && args.keep.empty())
        std::cout << "(--keep DIR keeps the sequence's models and prints how to bisect from the failed step)\n";
    }
  }
  return report.identical() ? kExitOk : kExitFail;
}

}  // namespace lockstep::cli
