// LOCKSTEP_CUDA_PROFILE: the executor's per-launch GPU times in graph replay (a second captured
// graph with an event node after every launch) and the table printed when it is destroyed.
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/executor.h"

namespace lockstep::cuda {

void CudaExecutable::run_profiled() {
  size_t total = 0;
  for (const auto& program : programs_)
    for (const auto& launch : program.launches) total += launch.in_graph();
  if (events_.empty()) {
    events_.assign(total + 1, nullptr);
    for (auto& e : events_) check_cuda(cudaEventCreate(&e), "profile event");
    launch_ms_.assign(total, 0.0);
  }
  if (!profile_exec_) {
    DeviceSetupLock setup(device_setup_mutex());  // as run_graph's capture
    // The same launches as the run graph, with an event record node between every two: times
    // are GPU time in graph replay, free of the host launch cost that eager timing adds.
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "begin profile capture");
    enqueue_inputs();
    check_cuda(cudaEventRecordWithFlags(events_[0], stream_, cudaEventRecordExternal), "profile event");
    size_t k = 0;
    for (auto& program : programs_)
      for (auto& launch : program.launches) {
        if (!launch.in_graph()) continue;
        launch.fn(stream_);
        check_cuda(cudaEventRecordWithFlags(events_[++k], stream_, cudaEventRecordExternal), "profile event");
      }
    enqueue_outputs();
    check_cuda(cudaStreamEndCapture(stream_, &profile_graph_), "end profile capture");
    check_cuda(cudaGraphInstantiate(&profile_exec_, profile_graph_, 0), "instantiate profile graph");
  }
  check_cuda(cudaGraphLaunch(profile_exec_, stream_), "launch profile graph");
  check_cuda(cudaEventRecord(done_, stream_), "run event");
  check_cuda(cudaStreamSynchronize(stream_), "profiled run");
  for (size_t i = 0; i < total; ++i) {
    float ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), "profile event");
    launch_ms_[i] += ms;
  }
  ++profiled_runs_;
}

void CudaExecutable::print_profile() const noexcept {
  if (!profiled_runs_) return;
  struct Row { double ms = 0; int count = 0; };
  std::map<std::string, Row> by_kernel;
  std::vector<std::pair<double, std::string>> by_node;
  double sum = 0;
  size_t k = 0;
  for (const auto& program : programs_) {
    double node_ms = 0;
    const ir::Node& node = graph_.nodes[static_cast<size_t>(program.node)];
    for (const auto& launch : program.launches) {
      if (!launch.in_graph()) continue;
      const double ms = launch_ms_[k++] / profiled_runs_;
      std::string family = launch.kernel.substr(0, launch.kernel.find("+epilogue"));
      by_kernel[family].ms += ms;
      by_kernel[family].count += 1;
      node_ms += ms;
      sum += ms;
    }
    if (!program.launches.empty())
      by_node.push_back({node_ms, std::string(ir::op_name(node.op)) + " " + node.name + " " + shape_str(graph_.value(node.outputs[0]).shape)});
  }
  std::vector<std::pair<std::string, Row>> rows(by_kernel.begin(), by_kernel.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  std::fprintf(stderr, "lockstep cuda profile: %.3f ms per run summed over %zu launches (graph replay, event nodes; %d runs)\n", sum, k, profiled_runs_);
  std::fprintf(stderr, "  %-44s %6s %9s %6s\n", "kernel family", "count", "ms", "share");
  for (const auto& [name, row] : rows)
    std::fprintf(stderr, "  %-44s %6d %9.3f %5.1f%%\n", name.c_str(), row.count, row.ms, 100.0 * row.ms / std::max(sum, 1e-9));
  std::sort(by_node.rbegin(), by_node.rend());
  // LOCKSTEP_CUDA_PROFILE_TOP=N lists N nodes (0: every node) instead of 12.
  const char* top_env = std::getenv("LOCKSTEP_CUDA_PROFILE_TOP");
  const size_t top = top_env && *top_env ? (std::strtoul(top_env, nullptr, 10) == 0 ? by_node.size() : std::strtoul(top_env, nullptr, 10)) : 12;
  std::fprintf(stderr, "  top nodes:\n");
  for (size_t i = 0; i < by_node.size() && i < top; ++i)
    std::fprintf(stderr, "  %9.3f ms  %s\n", by_node[i].first, by_node[i].second.c_str());
}

void CudaExecutable::print_host_times() const noexcept {
  if (host_samples_.empty()) return;
  static const char* const kPhase[7] = {"stage inputs (host copy)", "graph launch call", "wait for the graph",
                                        "  input copies (events)", "  kernels (events)", "  output copies (events)",
                                        "outputs (allocate + host copy)"};
  std::fprintf(stderr, "lockstep cuda host times: medians of %zu graph runs, ms\n", host_samples_.size());
  for (size_t k = 0; k < 7; ++k) {
    std::vector<double> v;
    for (const auto& s : host_samples_) v.push_back(s[k]);
    std::sort(v.begin(), v.end());
    std::fprintf(stderr, "  %-32s %8.4f\n", kPhase[k], v[v.size() / 2]);
  }
}

}  // namespace lockstep::cuda
