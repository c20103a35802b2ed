// The subcommands of the `lockstep` CLI. main.cpp parses arguments (CLI11) into these structs;
// each cmd_*.cpp implements one subcommand and returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/lockstep.h"

namespace lockstep::cli {

// Exit codes: 0 success/agreement, 1 model/data error or divergence, 2 usage error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitUsage = 2;

struct InputArgs {
  std::vector<std::string> files;  // --inputs a.npy b.npy, in graph-input order
  std::string npz;                 // --inputs-npz x.npz, keyed by input name (or arr_0, arr_1, ...)
  std::vector<std::string> named;  // --input NAME=FILE
  uint64_t seed = 0;               // draws inputs when none are given
};

struct CommonArgs {
  int threads = 0;
  bool json = false;
  std::string precision = "fp32";  // --precision (run, compare, check): cuda fast modes
  int64_t max_memory = 0;          // --max-memory: cap on the planned arena in bytes; 0 = none
  bool safe = false;               // --safe (run, compare, check): cuda safe mode
  // --f64-accumulate PREFIX...: node-name prefixes whose Conv/MatMul accumulate in float64; "none"
  // for no node; not given: the model's default (Options::f64_accumulate).
  std::vector<std::string> f64_accumulate;
  std::optional<std::vector<std::string>> f64_accumulate_option() const { return f64_accumulate_from_flag(f64_accumulate); }
};

struct RunArgs {
  std::string model;
  std::string backend = "cpu";
  std::string out_dir = ".";
  InputArgs inputs;
  CommonArgs common;
  bool print_after_all = false;
  int opt_bisect_limit = -1;
  bool no_fuse = false;
  std::string wav;      // also write output 0 as a 16-bit PCM .wav (a voice's audio)
  int sample_rate = 0;  // 0: the voice's MODEL.onnx.json audio.sample_rate, else 22050
  bool ragged = false;  // a Piper voice's padded batch as its utterances (voices/piper_batch.h)
};

struct CompareArgs {
  std::string model;
  std::string ref = "reference";
  std::string test;  // empty: cuda when a GPU is available, else cpu
  InputArgs inputs;
  CommonArgs common;
};

struct InfoArgs {
  std::string model;
  bool shapes = false;
  std::string kernels;  // --kernels BACKEND: compile and list what computes each node
  CommonArgs common;
};

struct CheckArgs {
  std::string model;  // empty: the embedded default
  InputArgs inputs;
  int fresh = 3;
  // --ref/--test (either given): the report's table for that pair of sides (cmd_check_pair.cpp).
  std::string ref, test;
  std::string anchors;           // comma-separated node names; empty: the default anchors
  std::string format = "text";   // text, markdown, json (the pair table)
  CommonArgs common;
};

// The hidden `__worker` subcommand: one fresh-process run for `check`.
struct WorkerArgs {
  std::string model;  // empty: the embedded default
  std::string backend;
  std::string inputs_npz;
  std::string anchors_file;  // one ONNX node name per line
  std::string out_dir;
  int threads = 0;
  std::string precision = "fp32";
  bool safe = false;
  uint64_t seed = 0;  // the run seed of the model's random ops
  std::vector<std::string> f64_accumulate;  // as CommonArgs::f64_accumulate
};

// `bisect`, `determinism`, `bisect-passes` (cmd_bisect.cpp, cmd_determinism.cpp, cmd_bisect_passes.cpp).
struct BisectArgs {
  std::string model;  // empty: the embedded default
  std::string ref = "reference";
  std::string test = "cpu";
  std::string format = "text";  // text, markdown, json, html
  std::string out;              // report file; empty: stdout
  std::string local = "first";  // first, divergent, all
  double safety = 8;            // diff::kToleranceSafety
  double floor = 1e-6;          // diff::kToleranceFloor
  bool in_process = false;      // runner sides: one persistent process each (protocol v2)
  std::vector<std::string> warm_up_with;  // with in_process: models each runner process runs first
  InputArgs inputs;
  CommonArgs common;
};

struct DeterminismArgs {
  std::string model;  // empty: the embedded default
  std::string backend = "cpu";
  int runs = 8;
  std::string keep;  // runners: keep the sequence's models and inputs here, to bisect a failed step
  InputArgs inputs;
  CommonArgs common;
};

struct BisectPassesArgs {
  std::string model;  // empty: the embedded default
  std::string backend = "cpu";
  InputArgs inputs;
  CommonArgs common;
};

// `extract` and `reduce` (cmd_extract.cpp, cmd_reduce.cpp).
struct ExtractArgs {
  std::string model;
  std::vector<std::string> outputs;  // tensor names (a node name stands for its outputs)
  std::vector<std::string> inputs;   // empty: the model's inputs
  std::string out;
  CommonArgs common;
};

struct ReduceArgs {
  std::string model;  // empty: the embedded default
  std::string ref = "reference";
  std::string test = "cpu";
  std::string out_dir;
  std::string synthetic;  // "SIGMA[,SEED]"; empty: original weights
  double timeout = 0;     // seconds per runner invocation; 0: diff::kDefaultRunnerTimeoutSeconds
  InputArgs inputs;
  CommonArgs common;
};

// `default` (cmd_default.cpp): the embedded default written as ONNX + .npy inputs.
struct DefaultArgs {
  std::string out_dir;
  uint64_t seed = 0;
};

int cmd_default(const DefaultArgs& args);
int cmd_extract(const ExtractArgs& args);
int cmd_reduce(const ReduceArgs& args);
int cmd_bisect(const BisectArgs& args);
int cmd_determinism(const DeterminismArgs& args);
int cmd_bisect_passes(const BisectPassesArgs& args);
int cmd_run(const RunArgs& args);
int cmd_compare(const CompareArgs& args);
int cmd_info(const InfoArgs& args);
int cmd_check(const CheckArgs& args);
int cmd_check_pair(const CheckArgs& args);
int cmd_worker(const WorkerArgs& args);
// `lockstep corpus ARGS...`: python3 -m lockstep.corpus ARGS... (Ray is Python; docs/corpus.md).
int cmd_corpus(const std::vector<std::string>& args, const char* argv0);

}  // namespace lockstep::cli
