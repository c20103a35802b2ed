// The `lockstep` command line: argument parsing (CLI11) and error reporting. Each subcommand
// lives in its own cmd_*.cpp. Errors print one line "lockstep: <message>" and exit 2 for usage
// errors, 1 for model/data errors or divergence.
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.h"
#include "lockstep/error.h"

using namespace lockstep::cli;

namespace {

void add_inputs(CLI::App* cmd, InputArgs& in) {
  cmd->add_option("--inputs", in.files, "input .npy files, in the model's input order")->expected(1, -1);
  cmd->add_option("--inputs-npz", in.npz, ".npz with one array per input name (or arr_0, arr_1, ...)");
  cmd->add_option("--input", in.named, "NAME=FILE.npy for one input (repeatable)");
  cmd->add_option("--seed", in.seed, "seed for drawn inputs when none are given (default 0)");
}

void add_common(CLI::App* cmd, CommonArgs& common) {
  cmd->add_option("--threads", common.threads, "CPU threads (0 = all hardware threads)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", common.json, "machine-readable output on stdout");
  cmd->add_option("--max-memory", common.max_memory, "cap on the planned memory arena in bytes (0 = none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--f64-accumulate", common.f64_accumulate,
                  "node-name prefixes whose Conv/MatMul accumulate in float64 on the cpu ('none': no node; default: "
                  "a Piper voice's text encoder /enc_p/, else none)");
}

// --precision on run, compare and check: the cuda fast modes (other backends compute as always).
void add_precision(CLI::App* cmd, CommonArgs& common) {
  cmd->add_flag("--safe", common.safe,
                "cuda safe mode: sync and check after every kernel, NaN-filled buffers, guard canaries");
  cmd->add_option("--precision", common.precision, "cuda arithmetic: fp32 (strict, default), tf32, fp16, bf16")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep: compile ONNX models for the CPU and GPU, checked against a float64 reference"};
  app.require_subcommand(1);

  RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "run a model on one backend; outputs go to OUTDIR/<name>.npy");
  run_cmd->add_option("model", run.model, "ONNX model")->required();
  run_cmd->add_option("-b,--backend", run.backend, "reference, cpu, cuda or vulkan (default cpu)");
  run_cmd->add_option("-o,--out", run.out_dir, "output folder (default .)");
  run_cmd->add_flag("--print-after-all", run.print_after_all, "dump the IR to stderr after each pass");
  run_cmd->add_option("--opt-bisect-limit", run.opt_bisect_limit, "stop after N pass applications");
  run_cmd->add_flag("--no-fuse", run.no_fuse, "no epilogue fusion");
  run_cmd->add_option("--wav", run.wav, "also write the first output as a 16-bit mono .wav (a voice's audio)");
  run_cmd->add_option("--sample-rate", run.sample_rate,
                      "sample rate of --wav (default: audio.sample_rate of MODEL.onnx.json, else 22050)")
      ->check(CLI::Range(1, 1000000));
  run_cmd->add_flag("--ragged", run.ragged,
                    "a Piper voice's padded batch as its utterances, each within its own input_lengths and "
                    "bit-identical to running it alone; row B's outputs go to NAME.B.npy (and STEM.B.wav)");
  add_inputs(run_cmd, run.inputs);
  run_cmd->get_option("--seed")->description(
      "seed for drawn inputs when none are given and for random ops without a seed attribute (default 0)");
  add_common(run_cmd, run.common);
  add_precision(run_cmd, run.common);

  CompareArgs cmp;
  auto* cmp_cmd = app.add_subcommand("compare", "run two backends on the same inputs and compare every output");
  cmp_cmd->add_option("model", cmp.model, "ONNX model")->required();
  cmp_cmd->add_option("--ref", cmp.ref, "reference side (default: reference)");
  cmp_cmd->add_option("--test", cmp.test, "tested side (default: cuda when a GPU is available, else cpu)");
  add_inputs(cmp_cmd, cmp.inputs);
  add_common(cmp_cmd, cmp.common);
  add_precision(cmp_cmd, cmp.common);

  InfoArgs info;
  auto* info_cmd = app.add_subcommand("info", "ops, nodes, parameters, inputs and outputs of a model");
  info_cmd->add_option("model", info.model, "ONNX model")->required();
  info_cmd->add_flag("--shapes", info.shapes, "prepare the model and list every node's output shapes");
  info_cmd->add_option("--kernels", info.kernels,
                       "compile for this backend (e.g. cpu) and list the implementation that computes each node");
  add_common(info_cmd, info.common);

  CheckArgs check;
  auto* check_cmd = app.add_subcommand(
      "check", "every available backend against the reference, in fresh processes and A/B/A in one process");
  check_cmd->add_option("model", check.model, "ONNX model (default: the embedded seed-shaped VITS flow)");
  check_cmd->add_option("--fresh", check.fresh, "fresh processes per backend (default 3)")->check(CLI::Range(1, 64));
  check_cmd->add_option("--ref", check.ref, "with --test: the report's table for a pair of sides (backend or runner command)");
  check_cmd->add_option("--test", check.test, "with --ref: the tested side (backend or runner command)");
  check_cmd->add_option("--anchors", check.anchors, "pair table: comma-separated node names (default: the usual anchors)");
  check_cmd->add_option("--format", check.format, "pair table: text, markdown or json (default text)");
  add_inputs(check_cmd, check.inputs);
  add_common(check_cmd, check.common);
  add_precision(check_cmd, check.common);

  BisectArgs bis;
  auto* bis_cmd = app.add_subcommand("bisect", "the first node where --test departs from --ref, local or inherited");
  bis_cmd->add_option("model", bis.model, "ONNX model (default: the embedded seed-shaped VITS flow)");
  bis_cmd->add_option("--ref", bis.ref, "reference side: a backend or a runner command (default: reference)");
  bis_cmd->add_option("--test", bis.test, "tested side: a backend or a runner command (default: cpu)");
  bis_cmd->add_option("--format", bis.format, "text, markdown, json or html (default text)");
  bis_cmd->add_option("-o,--out", bis.out, "write the report to this file (html needs it)");
  bis_cmd->add_option("--local", bis.local, "one-node replay at: first (divergent node), divergent, all");
  bis_cmd->add_option("--safety", bis.safety, "tolerance = safety x cpu noise floor per node (default 8)");
  bis_cmd->add_option("--floor", bis.floor, "smallest tolerance, rel L2 (default 1e-6)");
  bis_cmd->add_flag("--in-process", bis.in_process,
                    "runner sides: every subgraph in ONE runner process (protocol v2), after a whole-model warm-up");
  bis_cmd->add_option("--warm-up-with", bis.warm_up_with,
                      "with --in-process: models each runner process runs first, in order (determinism --keep prints them)");
  add_inputs(bis_cmd, bis.inputs);
  bis_cmd->get_option("--seed")->description(
      "seed for drawn inputs when none are given and for random ops without a seed attribute, as `run` (default 0)");
  add_common(bis_cmd, bis.common);

  DeterminismArgs det;
  auto* det_cmd = app.add_subcommand("determinism", "SHA-256 of every output across fresh processes and A/B/C/A in one process");
  det_cmd->add_option("model", det.model, "ONNX model (default: the embedded seed-shaped VITS flow)");
  det_cmd->add_option("-b,--backend", det.backend, "a backend or a runner command (default cpu)");
  det_cmd->add_option("--runs", det.runs, "fresh processes (default 8)")->check(CLI::Range(1, 256));
  det_cmd->add_option("--keep", det.keep,
                      "runners: keep the in-process sequence's models and inputs in this folder, and print how to bisect a failed step");
  add_inputs(det_cmd, det.inputs);
  add_common(det_cmd, det.common);

  DefaultArgs def;
  auto* def_cmd = app.add_subcommand("default", "write the embedded default graph as ONNX with its inputs as .npy");
  def_cmd->add_option("-o,--out", def.out_dir, "output folder")->required();
  def_cmd->add_option("--seed", def.seed, "weight seed (default 0, the one `check` uses)");

  ExtractArgs ext;
  auto* ext_cmd = app.add_subcommand("extract", "the subgraph computing the named tensors, as an ONNX file");
  ext_cmd->add_option("model", ext.model, "ONNX model")->required();
  ext_cmd->add_option("--outputs", ext.outputs, "tensor names the subgraph ends at (a node name: its outputs)")
      ->required()
      ->expected(1, -1);
  ext_cmd->add_option("--inputs", ext.inputs, "tensor names that become its inputs (default: the model's)")->expected(1, -1);
  ext_cmd->add_option("-o,--out", ext.out, "output ONNX file")->required();
  add_common(ext_cmd, ext.common);

  ReduceArgs red;
  auto* red_cmd = app.add_subcommand("reduce", "the first divergent node alone, re-checked, with a SHA-256 manifest");
  red_cmd->add_option("model", red.model, "ONNX model (default: the embedded seed-shaped VITS flow)");
  red_cmd->add_option("--ref", red.ref, "reference side: a backend or a runner command (default: reference)");
  red_cmd->add_option("--test", red.test, "tested side: a backend or a runner command (default: cpu)");
  red_cmd->add_option("-o,--out", red.out_dir, "output folder (new or empty)")->required();
  red_cmd->add_option("--synthetic-weights", red.synthetic, "SIGMA[,SEED]: replace float initializers by N(0,SIGMA)");
  red_cmd->add_option("--timeout", red.timeout, "seconds per runner invocation (default 600)");
  add_inputs(red_cmd, red.inputs);
  add_common(red_cmd, red.common);

  BisectPassesArgs bp;
  auto* bp_cmd = app.add_subcommand("bisect-passes", "the first pass application after which the output moves");
  bp_cmd->add_option("model", bp.model, "ONNX model (default: the embedded seed-shaped VITS flow)");
  bp_cmd->add_option("-b,--backend", bp.backend, "reference, cpu, cuda or vulkan (default cpu)");
  add_inputs(bp_cmd, bp.inputs);
  add_common(bp_cmd, bp.common);

  WorkerArgs worker;
  auto* corpus_cmd = app.add_subcommand("corpus", "a speech corpus from rows of text with a Piper voice, on Ray "
                                                  "(python3 -m lockstep.corpus; --help there)");
  corpus_cmd->prefix_command();  // every argument after `corpus` is the Python tool's
  corpus_cmd->set_help_flag();
  auto* worker_cmd = app.add_subcommand("__worker", "")->group("");  // hidden: used by check
  worker_cmd->add_option("model", worker.model);
  worker_cmd->add_option("--backend", worker.backend)->required();
  worker_cmd->add_option("--inputs-npz", worker.inputs_npz)->required();
  worker_cmd->add_option("--anchors", worker.anchors_file)->required();
  worker_cmd->add_option("--out", worker.out_dir)->required();
  worker_cmd->add_option("--threads", worker.threads);
  worker_cmd->add_option("--precision", worker.precision);
  worker_cmd->add_flag("--safe", worker.safe);
  worker_cmd->add_option("--seed", worker.seed);
  worker_cmd->add_option("--f64-accumulate", worker.f64_accumulate);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "lockstep: " << e.what() << " (see lockstep --help)\n";
    return kExitUsage;
  }

  try {
    if (run_cmd->parsed()) return cmd_run(run);
    if (corpus_cmd->parsed()) return cmd_corpus(corpus_cmd->remaining(), argv[0]);
    if (cmp_cmd->parsed()) return cmd_compare(cmp);
    if (info_cmd->parsed()) return cmd_info(info);
    if (check_cmd->parsed())
      return check.ref.empty() && check.test.empty() && check.anchors.empty() ? cmd_check(check) : cmd_check_pair(check);
    if (worker_cmd->parsed()) return cmd_worker(worker);
    if (bis_cmd->parsed()) return cmd_bisect(bis);
    if (det_cmd->parsed()) return cmd_determinism(det);
    if (bp_cmd->parsed()) return cmd_bisect_passes(bp);
    if (def_cmd->parsed()) return cmd_default(def);
    if (ext_cmd->parsed()) return cmd_extract(ext);
    if (red_cmd->parsed()) return cmd_reduce(red);
  } catch (const lockstep::Error& e) {
    std::cerr << "lockstep: " << e.what() << '\n';
    return e.code() == lockstep::ErrorCode::InvalidArgument ? kExitUsage : kExitFail;
  } catch (const std::exception& e) {
    std::cerr << "lockstep: internal error: " << e.what() << '\n';
    return kExitFail;
  }
  return kExitUsage;
}
