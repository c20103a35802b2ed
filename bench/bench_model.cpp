// Times one model on one lockstep backend: compile once, warm up, median of timed runs, and
// the relative L2 error of the output against a float64 oracle. Prints one JSON line.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "diff/metrics.h"
#include "dynamic/executable.h"
#include "lockstep/lockstep.h"

int main(int argc, char** argv) {
  CLI::App app{"lockstep_bench: time a model on a lockstep backend"};
  std::string model_path, backend = "cpu", ref_path;
  std::vector<std::string> input_paths, prime_paths;
  int threads = 0, runs = 10, warmup = 2;
  std::string precision = "fp32";
  app.add_option("model", model_path, "ONNX model")->required();
  app.add_option("--backend", backend, "reference, cpu or cuda");
  app.add_option("--inputs", input_paths, ".npy inputs in graph-input order")->required();
  app.add_option("--ref", ref_path, "float64 oracle .npy for the first output");
  app.add_option("--threads", threads, "CPU threads (0 = all)");
  app.add_option("--runs", runs, "timed runs");
  app.add_option("--warmup", warmup, "untimed runs first");
  app.add_option("--prime", prime_paths,
                 "inputs of another call run once before anything is timed (a model with run-time shapes: "
                 "first_run_ms is then a new length's first call in a warm process)");
  app.add_option("--precision", precision, "cuda arithmetic: fp32 (strict), tf32, fp16, bf16")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  try {
    using clock = std::chrono::steady_clock;
    std::vector<lockstep::Tensor> inputs;
    for (const auto& p : input_paths) inputs.push_back(lockstep::read_npy(p));
    lockstep::Options options;
    options.threads = threads;
    options.precision = precision;
    auto t0 = clock::now();
    auto model = lockstep::Model::load(model_path);
    auto exe = lockstep::compile(model, backend, options);
    double compile_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    std::vector<lockstep::Tensor> outputs;
    if (!prime_paths.empty()) {
      std::vector<lockstep::Tensor> prime;
      for (const auto& p : prime_paths) prime.push_back(lockstep::read_npy(p));
      exe->run(prime);
    }
    struct rusage before {}, after {};
    getrusage(RUSAGE_SELF, &before);
    auto first = clock::now();
    outputs = exe->run(inputs);
    double first_run_ms = std::chrono::duration<double, std::milli>(clock::now() - first).count();
    getrusage(RUSAGE_SELF, &after);
    const long first_run_faults = after.ru_minflt - before.ru_minflt;  // pages touched for the first time
    const lockstep::dynamic::Stats* stage = lockstep::dynamic::stats(*exe);
    const double first_run_compile_ms = stage ? stage->last_run_compile_ms : 0;
    const int first_run_misses = stage ? stage->last_run_misses : 0;
    for (int i = 0; i < warmup; ++i) outputs = exe->run(inputs);
    std::vector<double> times, device_times;
    for (int i = 0; i < runs; ++i) {
      auto t = clock::now();
      outputs = exe->run(inputs);
      times.push_back(std::chrono::duration<double, std::milli>(clock::now() - t).count());
      if (auto d = exe->last_device_ms()) device_times.push_back(*d);
    }
    std::sort(times.begin(), times.end());
    std::sort(device_times.begin(), device_times.end());
    nlohmann::json row = {{"model", model_path},   {"backend", backend},
                          {"threads", threads},    {"runs", runs}, {"precision", precision},
                          {"median_ms", times[times.size() / 2]}, {"min_ms", times.front()},
                          {"compile_ms", compile_ms}, {"first_run_ms", first_run_ms}};
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    row["peak_rss_mb"] = static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
    row["output_shape"] = outputs.at(0).shape();
    if (stage) {  // the run-time shape stage: what the first call spent specialising and compiling
      row["first_run_compile_ms"] = first_run_compile_ms;
      row["first_run_misses"] = first_run_misses;
      row["first_run_page_faults"] = first_run_faults;
    }
    // Kernels only, without the input/output copies: how on-device peers (torch's CUDA events) time.
    if (!device_times.empty()) row["device_median_ms"] = device_times[device_times.size() / 2];
    if (!ref_path.empty()) {
      auto m = lockstep::diff::compare(outputs.at(0), lockstep::read_npy(ref_path));
      row["rel_l2"] = m.rel_l2;
      row["cosine"] = m.cosine;
    }
    std::cout << row.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "lockstep_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
