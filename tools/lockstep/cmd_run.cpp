// `lockstep run`: compile a model for one backend, run it once, write each output as .npy.
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/hash.h"
#include "core/atomic_file.h"
#include "core/npy.h"
#include "core/wav.h"
#include "ir/graph.h"
#include "inputs.h"
#include "voices/piper.h"
#include "voices/piper_batch.h"

namespace lockstep::cli {

namespace fs = std::filesystem;

namespace {

// A Piper voice's sample rate from the .onnx.json beside it (audio.sample_rate), else 22050.
int voice_sample_rate(const std::string& model) {
  constexpr int kPiperDefault = 22050;
  std::error_code ec;
  if (model.empty() || !fs::exists(model + ".json", ec)) return kPiperDefault;
  try {
    auto config = nlohmann::json::parse(read_file(model + ".json"));
    return config.at("audio").at("sample_rate").get<int>();
  } catch (const std::exception&) {
    return kPiperDefault;
  }
}

// --ragged: each row of a Piper voice's padded batch as its own utterance (bit-identical to
// running it alone with the same --seed); row b's outputs go to NAME.b.npy, its audio to STEM.b.wav.
int run_ragged(const RunArgs& args, const Model& model, const ModelInputs& inputs, const Options& options) {
  if (!voices::is_piper_voice(model.graph()))
    throw Error(ErrorCode::InvalidArgument, "--ragged: the model is not a Piper voice (inputs input, input_lengths, scales)");
  Options per_row = options;
  per_row.input_shapes.clear();  // the rows run at their own lengths, not the padded batch's
  voices::PiperBatcher batcher(model, args.backend, per_row);
  const std::vector<Tensor>& in = inputs.tensors;
  std::vector<voices::BatchResult> results = batcher.run(in, {args.inputs.seed});
  std::error_code ec;
  fs::create_directories(args.out_dir, ec);
  if (ec) throw Error(ErrorCode::Io, "cannot create output folder '" + args.out_dir + "': " + ec.message());
  nlohmann::json report = {{"model", args.model}, {"backend", args.backend}, {"lanes", batcher.lanes()},
                           {"seed", args.inputs.seed}, {"rows", nlohmann::json::array()}};
  const ir::Graph& graph = model.graph();
  int failed = 0;
  for (size_t b = 0; b < results.size(); ++b) {
    nlohmann::json row = {{"row", b}};
    if (!results[b].error.empty()) {
      row["error"] = results[b].error;
      ++failed;
      std::cerr << "lockstep: row " << b << ": " << results[b].error << '\n';
    }
    for (size_t i = 0; i < results[b].outputs.size(); ++i) {
      const Tensor& t = results[b].outputs[i];
      const std::string path =
          (fs::path(args.out_dir) / (file_stem(graph.value(graph.outputs.at(i)).name) + "." + std::to_string(b) + ".npy")).string();
      write_npy(path, t);
      row["outputs"].push_back({{"file", path}, {"shape", t.shape()}, {"sha256", sha256_hex(t)}});
    }
    if (!args.wav.empty() && !results[b].outputs.empty()) {
      fs::path wav(args.wav);
      const std::string path = (wav.parent_path() / (wav.stem().string() + "." + std::to_string(b) + ".wav")).string();
      write_wav(path, results[b].outputs[0], args.sample_rate > 0 ? args.sample_rate : voice_sample_rate(args.model));
      row["wav"] = path;
    }
    report["rows"].push_back(row);
  }
  if (args.common.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    for (const auto& row : report["rows"])
      if (row.contains("outputs"))
        std::cout << "row " << row["row"].get<int>() << ": " << row["outputs"][0]["file"].get<std::string>() << " "
                  << shape_str(row["outputs"][0]["shape"].get<Shape>()) << "  sha256 "
                  << row["outputs"][0]["sha256"].get<std::string>().substr(0, 16) << '\n';
  }
  return failed ? kExitFail : kExitOk;
}

}  // namespace

int cmd_run(const RunArgs& args) {
  for (const std::string& name : {args.backend})
    if (!find_backend(name))
      throw Error(ErrorCode::InvalidArgument, "unknown backend '" + name + "' (known: reference, cpu, cuda, vulkan)");
  Model model = load_model_or_default(args.model);
  ModelInputs inputs = gather_inputs(model.graph(), args.inputs);
  if (inputs.drawn)
    std::cerr << "lockstep: no inputs given; drawing them from seed " << args.inputs.seed
              << " (uniform[-1,1] floats, zero integers)\n";
  Options options;
  options.threads = args.common.threads;
  options.max_memory_bytes = args.common.max_memory;
  options.f64_accumulate = args.common.f64_accumulate_option();
  options.safe = args.common.safe;
  options.input_shapes = inputs.bind;
  options.print_after_all = args.print_after_all;
  options.opt_bisect_limit = args.opt_bisect_limit;
  options.fuse = !args.no_fuse;
  options.precision = args.common.precision;
  if (options.precision != "fp32" && args.backend != "cuda")
    std::cerr << "lockstep: note: --precision " << options.precision << " applies to cuda only; " << args.backend
              << " computes as always\n";
  if (args.ragged) return run_ragged(args, model, inputs, options);
  auto exe = compile(model, args.backend, options);
  RunOptions run_options;
  run_options.seed = args.inputs.seed;  // one --seed: drawn inputs and random ops without a seed attribute
  std::vector<Tensor> outputs = exe->run(inputs.tensors, run_options);

  const ir::Graph& graph = exe->graph();
  bool has_random = false;
  for (const auto& node : graph.nodes) has_random = has_random || ir::is_random(node.op);
  std::error_code ec;
  fs::create_directories(args.out_dir, ec);
  if (ec) throw Error(ErrorCode::Io, "cannot create output folder '" + args.out_dir + "': " + ec.message());
  // Each file is written atomically; if one fails, the ones this run already wrote are removed.
  std::vector<std::string> written;
  nlohmann::json report = {{"model", args.model.empty() ? "(embedded default)" : args.model},
                           {"backend", exe->backend_name()},
                           {"outputs", nlohmann::json::array()}};
  if (inputs.drawn) report["input_seed"] = args.inputs.seed;
  report["seed"] = run_options.seed;
  try {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string& name = graph.value(graph.outputs.at(i)).name;
      std::string path = (fs::path(args.out_dir) / (file_stem(name) + ".npy")).string();
      write_npy(path, outputs[i]);
      written.push_back(path);
      report["outputs"].push_back({{"name", name},
                                   {"file", path},
                                   {"dtype", dtype_name(outputs[i].dtype())},
                                   {"shape", outputs[i].shape()},
                                   {"sha256", sha256_hex(outputs[i])}});
    }
    if (!args.wav.empty()) {
      const int rate = args.sample_rate > 0 ? args.sample_rate : voice_sample_rate(args.model);
      write_wav(args.wav, outputs.at(0), rate);
      written.push_back(args.wav);
      report["wav"] = {{"file", args.wav}, {"sample_rate", rate}, {"samples", outputs.at(0).numel()}};
    }
  } catch (...) {
    for (const auto& path : written) fs::remove(path, ec);
    throw;
  }
  if (args.common.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    if (has_random) std::cout << "random ops seeded with --seed " << run_options.seed << '\n';
    for (const auto& o : report["outputs"])
      std::cout << o["name"].get<std::string>() << " " << o["dtype"].get<std::string>() << " "
                << shape_str(o["shape"].get<Shape>()) << " -> " << o["file"].get<std::string>() << "  sha256 "
                << o["sha256"].get<std::string>().substr(0, 16) << '\n';
    if (report.contains("wav"))
      std::cout << "wav: " << args.wav << " (" << report["wav"]["samples"].get<int64_t>() << " samples at "
                << report["wav"]["sample_rate"].get<int>() << " Hz)\n";
  }
  return kExitOk;
}

}  // namespace lockstep::cli
