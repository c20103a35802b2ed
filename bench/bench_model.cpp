// Times one model on one lockstep backend: compile once, warm up, median of timed runs, and
// the relative L2 error of the output against a float64 oracle. Prints one JSON line.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "lockstep/lockstep.h"
#include "voices/piper.h"
#include "voices/piper_batch.h"

namespace {

// Resident memory now (not the peak): /proc/self/statm's second field, in pages.
double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return -1;
  return static_cast<double>(resident) * 4096.0 / (1 << 20);
}

// Many calls of random lengths (issue 22: no memory growth past the plan cache's bound).
// A voice's given inputs (input int64 [1, P] with P >= min_ids, input_lengths, scales) checked for
// `flag`'s calls; Error(InvalidArgument) naming the flag otherwise.
const lockstep::Tensor& voice_ids(const std::vector<lockstep::Tensor>& inputs, const char* flag, int64_t min_ids) {
  const lockstep::Tensor& ids = inputs.at(0);
  if (inputs.size() < 3 || ids.dtype() != lockstep::DType::Int64 || ids.shape().size() != 2 || ids.numel() < min_ids)
    throw lockstep::Error(lockstep::ErrorCode::InvalidArgument, std::string(flag) + " needs a voice's inputs: input int64 [1, P], P >= " +
                                                                    std::to_string(min_ids) + ", input_lengths, scales");
  return ids;
}

// The voice's inputs with `n` phonemes: ids[(first + k) % P] for k < n, and input_lengths n.
std::vector<lockstep::Tensor> voice_call(const std::vector<lockstep::Tensor>& inputs, int64_t n, int64_t first) {
  const lockstep::Tensor& ids = inputs.at(0);
  lockstep::Tensor in(lockstep::DType::Int64, {1, n}), len(lockstep::DType::Int64, {1});
  for (int64_t k = 0; k < n; ++k) in.data<int64_t>()[k] = ids.data<int64_t>()[(first + k) % ids.numel()];
  len.data<int64_t>()[0] = n;
  std::vector<lockstep::Tensor> call = inputs;
  call[0] = in;
  call[1] = len;
  return call;
}

nlohmann::json run_churn(lockstep::Executable& exe, const std::vector<lockstep::Tensor>& inputs, int calls) {
  voice_ids(inputs, "--churn", 1);
  std::mt19937_64 rng(20261202);
  std::vector<double> rss;
  for (int i = 0; i < calls; ++i) {
    const int64_t n = 5 + static_cast<int64_t>(rng() % 196);
    exe.run(voice_call(inputs, n, i));
    if ((i + 1) % std::max(1, calls / 10) == 0) {
      rss.push_back(resident_mb());
      std::cerr << "lockstep_bench: churn call " << i + 1 << ": resident " << rss.back() << " MB\n";
    }
  }
  nlohmann::json j = {{"calls", calls}, {"resident_mb", rss}};
  if (const lockstep::dynamic::Stats* s = lockstep::dynamic::stats(exe)) {
    j["cached_entries"] = s->cached_entries;
    j["cached_bytes"] = s->cached_bytes;
    j["segments_compiled"] = s->segments_compiled;
    j["evictions"] = s->evictions;
  }
  return j;
}

// --first-calls: `calls` lengths no call of this process has met (phoneme counts from 10 to the given
// ids' count, shuffled, cut from those ids), each timed at its first call and then as a cached call
// (the median of three): the per-length ratios, and their median and spread. One process, so the
// host's jitter between processes does not enter; lengths whose frame count an earlier call met
// miss only the encoder's segment (`misses`).
nlohmann::json run_first_calls(lockstep::Executable& exe, const std::vector<lockstep::Tensor>& inputs, int calls,
                               const lockstep::RunOptions& run_options) {
  using clock = std::chrono::steady_clock;
  const lockstep::Tensor& ids = voice_ids(inputs, "--first-calls", 11);
  std::vector<int64_t> lengths;
  for (int64_t n = 10; n <= ids.numel(); ++n) lengths.push_back(n);
  std::shuffle(lengths.begin(), lengths.end(), std::mt19937_64(20261206));
  if (static_cast<int64_t>(lengths.size()) > calls) lengths.resize(static_cast<size_t>(calls));
  const lockstep::dynamic::Stats* stage = lockstep::dynamic::stats(exe);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> ratios;
  for (int64_t n : lengths) {
    // The last n ids keep the EOS and its pad where the given ids end with them.
    const std::vector<lockstep::Tensor> call = voice_call(inputs, n, ids.numel() - n);
    auto t = clock::now();
    exe.run(call, run_options);
    const double first = std::chrono::duration<double, std::milli>(clock::now() - t).count();
    const int misses = stage ? stage->last_run_misses : 0;
    std::vector<double> cached;
    for (int r = 0; r < 3; ++r) {
      t = clock::now();
      exe.run(call, run_options);
      cached.push_back(std::chrono::duration<double, std::milli>(clock::now() - t).count());
    }
    std::sort(cached.begin(), cached.end());
    ratios.push_back(first / cached[1]);
    rows.push_back({{"phonemes", n}, {"first_ms", first}, {"cached_ms", cached[1]}, {"misses", misses}});
  }
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double q) { return sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))]; };
  return {{"calls", rows.size()}, {"ratio_median", at(0.5)}, {"ratio_p10", at(0.1)}, {"ratio_p90", at(0.9)},
          {"ratio_max", sorted.empty() ? 0.0 : sorted.back()}, {"per_length", rows}};
}

// The process's peak resident memory so far (Linux reports it in KiB).
double peak_rss_mb() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// A Piper voice's padded batch as batches of `size` rows in order, each padded to its longest row.
std::vector<std::vector<lockstep::Tensor>> chunks_of(const lockstep::ir::Graph& voice, const std::vector<lockstep::Tensor>& inputs,
                                                     int64_t size) {
  const int in = lockstep::voices::input_index(voice, "input"), len = lockstep::voices::input_index(voice, "input_lengths");
  const int64_t n = inputs.at(static_cast<size_t>(in)).shape()[0];
  std::vector<std::vector<lockstep::Tensor>> out;
  for (int64_t first = 0; first < n; first += size) {
    const int64_t count = std::min(size, n - first);
    int64_t width = 0;
    for (int64_t b = first; b < first + count; ++b)
      width = std::max(width, inputs[static_cast<size_t>(len)].element_as_int(b));
    std::vector<lockstep::Tensor> chunk;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const lockstep::Tensor& t = inputs[i];
      const bool batched = t.rank() >= 1 && t.shape()[0] == n && !(voice.value(voice.inputs[i]).name == "scales" && t.rank() == 1);
      chunk.push_back(static_cast<int>(i) == in ? lockstep::voices::rows_of(t, first, count, width)
                                                : batched ? lockstep::voices::rows_of(t, first, count) : t);
    }
    out.push_back(std::move(chunk));
  }
  return out;
}

// --ragged: the inputs are a Piper voice's padded batch, run as batches of `batch_size` rows
// (0: all) by a PiperBatcher with `lanes` lanes (docs/piper.md "Batches"): the time of one pass
// over every row (first: every length compiled; then the median), clips/s, whether each row has
// the bits of its batch-1 call on one executable, and the segments the timed passes compiled.
nlohmann::json run_ragged(const lockstep::Model& model, const std::string& backend, const lockstep::Options& options,
                          const std::vector<lockstep::Tensor>& inputs, int lanes, int64_t batch_size, int runs, int warmup,
                          uint64_t seed) {
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t) { return std::chrono::duration<double, std::milli>(clock::now() - t).count(); };
  std::vector<std::string> row_errors;
  const std::vector<std::vector<lockstep::Tensor>> rows = lockstep::voices::split_batch(model.graph(), inputs, &row_errors);
  const int64_t n = static_cast<int64_t>(rows.size());
  const auto chunks = chunks_of(model.graph(), inputs, batch_size > 0 ? batch_size : n);
  lockstep::voices::PiperBatcher batcher(model, backend, options, lanes);
  std::vector<lockstep::voices::BatchResult> results;
  auto pass = [&] {
    results.clear();
    for (const auto& chunk : chunks)
      for (auto& r : batcher.run(chunk, {seed})) results.push_back(std::move(r));
  };
  auto t = clock::now();
  pass();
  const double first_ms = ms_since(t);
  for (int i = 0; i < warmup; ++i) pass();
  const int64_t compiled_before = batcher.segments_compiled();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    t = clock::now();
    pass();
    times.push_back(ms_since(t));
  }
  std::sort(times.begin(), times.end());
  const int64_t compiled_timed = batcher.segments_compiled() - compiled_before;
  auto single = lockstep::compile(model, backend, options);
  int same = 0, failed = 0;
  double samples = 0;
  std::string first_error;
  for (int64_t b = 0; b < n; ++b) {
    const auto& r = results[static_cast<size_t>(b)];
    if (!r.error.empty() || !row_errors[static_cast<size_t>(b)].empty()) {
      if (failed++ == 0) first_error = "row " + std::to_string(b) + ": " + r.error + row_errors[static_cast<size_t>(b)];
      continue;
    }
    lockstep::RunOptions run;
    run.seed = seed;
    const lockstep::Tensor want = single->run(rows[static_cast<size_t>(b)], run).at(0);
    const lockstep::Tensor& got = r.outputs.at(0);
    samples += static_cast<double>(got.numel());
    same += got.shape() == want.shape() && std::memcmp(got.raw(), want.raw(), got.nbytes()) == 0;
  }
  const double median = times[times.size() / 2];
  return {{"rows", n}, {"batch_size", batch_size > 0 ? batch_size : n}, {"lanes", batcher.lanes()},
          {"first_pass_ms", first_ms}, {"median_ms", median}, {"min_ms", times.front()},
          {"clips_per_s", 1000.0 * static_cast<double>(n) / median}, {"audio_s", samples / 22050.0},
          {"rows_failed", failed}, {"first_error", first_error}, {"rows_same_bits_as_batch1", same},
          {"timed_segments_compiled", compiled_timed}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep_bench: time a model on a lockstep backend"};
  std::string model_path, backend = "cpu", ref_path;
  std::vector<std::string> input_paths, prime_paths;
  int threads = 0, runs = 10, warmup = 2;
  std::string precision = "fp32";
  std::vector<std::string> f64_accumulate;
  app.add_option("model", model_path, "ONNX model")->required();
  app.add_option("--backend", backend, "reference, cpu or cuda");
  app.add_option("--inputs", input_paths, ".npy inputs in graph-input order")->required();
  app.add_option("--ref", ref_path, "float64 oracle .npy for the first output");
  app.add_option("--threads", threads, "CPU threads (0 = all)");
  app.add_option("--runs", runs, "timed runs")->check(CLI::Range(1, 1 << 30));  // the median needs one
  app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, 1 << 30));
  app.add_option("--prime", prime_paths,
                 "inputs of another call run once before anything is timed (a model with run-time shapes: "
                 "first_run_ms is then a new length's first call in a warm process)");
  app.add_option("--precision", precision, "cuda arithmetic: fp32 (strict), tf32, fp16, bf16")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}));
  int churn = 0;
  app.add_option("--f64-accumulate", f64_accumulate,
                 "node-name prefixes whose Conv/MatMul accumulate in float64 ('none': no node; default: the model's)");
  app.add_option("--churn", churn,
                 "a voice (inputs input, input_lengths, scales): after the timed runs, this many calls of random "
                 "lengths (5-200 phonemes cut from the given ids), reporting resident memory and the segment cache");
  int first_calls = 0;
  app.add_option("--first-calls", first_calls,
                 "a voice: after the timed runs, this many lengths no call has met (10 phonemes up to the given "
                 "ids' count, cut from them), each timed at its first call and cached; prints the ratios");
  bool ragged = false;
  int lanes = 0;
  uint64_t seed = 0;
  app.add_flag("--ragged", ragged, "a Piper voice's padded batch run as its utterances (PiperBatcher); prints clips/s");
  app.add_option("--lanes", lanes, "with --ragged: the batcher's lanes (0: the backend's default)")->check(CLI::Range(0, 256));
  int64_t batch_size = 0;
  app.add_option("--batch-size", batch_size, "with --ragged: run the rows in batches of this many, in order (0: one batch)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  app.add_option("--seed", seed, "the noise seed of every call");
  CLI11_PARSE(app, argc, argv);
  try {
    using clock = std::chrono::steady_clock;
    std::vector<lockstep::Tensor> inputs;
    for (const auto& p : input_paths) inputs.push_back(lockstep::read_npy(p));
    lockstep::Options options;
    options.threads = threads;
    options.precision = precision;
    options.f64_accumulate = lockstep::f64_accumulate_from_flag(f64_accumulate);
    auto t0 = clock::now();
    auto model = lockstep::Model::load(model_path);
    if (ragged) {
      nlohmann::json row = run_ragged(model, backend, options, inputs, lanes, batch_size, runs, warmup, seed);
      row["model"] = model_path;
      row["backend"] = backend;
      row["peak_rss_mb"] = peak_rss_mb();
      std::cout << row.dump() << std::endl;
      return 0;
    }
    auto exe = lockstep::compile(model, backend, options);
    lockstep::RunOptions run_options;
    run_options.seed = seed;
    double compile_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    std::vector<lockstep::Tensor> outputs;
    if (!prime_paths.empty()) {
      std::vector<lockstep::Tensor> prime;
      for (const auto& p : prime_paths) prime.push_back(lockstep::read_npy(p));
      exe->run(prime, run_options);
    }
    struct rusage before {}, after {};
    getrusage(RUSAGE_SELF, &before);
    auto first = clock::now();
    outputs = exe->run(inputs, run_options);
    double first_run_ms = std::chrono::duration<double, std::milli>(clock::now() - first).count();
    getrusage(RUSAGE_SELF, &after);
    const long first_run_faults = after.ru_minflt - before.ru_minflt;  // pages touched for the first time
    const lockstep::dynamic::Stats* stage = lockstep::dynamic::stats(*exe);
    const double first_run_compile_ms = stage ? stage->last_run_compile_ms : 0;
    const int first_run_misses = stage ? stage->last_run_misses : 0;
    for (int i = 0; i < warmup; ++i) outputs = exe->run(inputs, run_options);
    std::vector<double> times, device_times;
    for (int i = 0; i < runs; ++i) {
      auto t = clock::now();
      outputs = exe->run(inputs, run_options);
      times.push_back(std::chrono::duration<double, std::milli>(clock::now() - t).count());
      if (auto d = exe->last_device_ms()) device_times.push_back(*d);
    }
    std::sort(times.begin(), times.end());
    std::sort(device_times.begin(), device_times.end());
    nlohmann::json row = {{"model", model_path},   {"backend", backend},
                          {"threads", threads},    {"runs", runs}, {"precision", precision},
                          {"median_ms", times[times.size() / 2]}, {"min_ms", times.front()},
                          {"compile_ms", compile_ms}, {"first_run_ms", first_run_ms}};
    row["peak_rss_mb"] = peak_rss_mb();
    row["output_shape"] = outputs.at(0).shape();
    if (stage) {  // the run-time shape stage: what the first call spent specialising and compiling
      row["first_run_compile_ms"] = first_run_compile_ms;
      row["first_run_misses"] = first_run_misses;
      row["first_run_page_faults"] = first_run_faults;
      // What a cached call hands across to its backend: on a GPU, the segments that hand the host
      // values wait for it (segments_to_host); values_on_device pass between segments in device memory.
      row["segments"] = stage->last_run_segments;
      row["segments_to_host"] = stage->last_run_host_reads;
      row["values_on_device"] = stage->last_run_values_on_device;
      row["values_fetched_back"] = stage->last_run_downloads;
      row["host_nodes"] = stage->last_run_host_nodes;
      row["bytes_to_backend"] = stage->last_run_bytes_in;
      row["bytes_from_backend"] = stage->last_run_bytes_out;
      row["segments_ms"] = stage->last_run_segments_ms;  // of the last timed call
      row["host_nodes_ms"] = stage->last_run_host_nodes_ms;
      if (stage->last_run_device_ms > 0) row["segments_device_ms"] = stage->last_run_device_ms;
    }
    // Kernels only, without the input/output copies: how on-device peers (torch's CUDA events) time.
    if (!device_times.empty()) row["device_median_ms"] = device_times[device_times.size() / 2];
    if (!ref_path.empty()) {
      auto m = lockstep::diff::compare(outputs.at(0), lockstep::read_npy(ref_path));
      row["rel_l2"] = m.rel_l2;
      row["cosine"] = m.cosine;
    }
    if (churn > 0) row["churn"] = run_churn(*exe, inputs, churn);
    if (first_calls > 0) row["first_calls"] = run_first_calls(*exe, inputs, first_calls, run_options);
    std::cout << row.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "lockstep_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
