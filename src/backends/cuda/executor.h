// The CUDA Executable: one device arena laid out from the memory plan, constants uploaded at
// compile, the run captured once as a CUDA graph (on first run) and replayed; taps and safe
// mode run the same launches eagerly.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/pinned_pool.h"
#include "backends/cuda/safe_mode.h"

namespace lockstep::cuda {

// Every slot of the device arena starts at a multiple of this (views keep it: channel_views.h).
inline constexpr size_t kArenaAlign = 256;

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(const ir::Graph& graph, const Options& options);
  ~CudaExecutable() override;
  CudaExecutable(const CudaExecutable&) = delete;
  CudaExecutable& operator=(const CudaExecutable&) = delete;
  std::optional<std::vector<DeviceTensor>> run_on_device(const std::vector<Tensor>& inputs,
                                                         const RunOptions& options) override;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) override;
  // Inputs a CudaExecutable left on this device are copied device to device (after waiting for
  // their producer's run), outputs kept on the device are not copied, and the host waits only
  // when some output goes to it (executor_run.cpp).
  std::vector<RunValue> run_resident(const std::vector<RunValue>& inputs, const std::vector<char>& to_host,
                                     const RunOptions& options) override;
  const ir::Graph& graph() const override { return graph_; }
  std::string backend_name() const override { return "cuda"; }
  std::optional<double> last_device_ms() const override;

  // Test-only (see testing.h): after `node_name`'s kernels, one kernel writes past its output.
  void plant_out_of_bounds_write(const std::string& node_name);
  // Test-only (see testing.h): channel Slices this Executable addresses in place.
  int views_taken() const { return views_taken_; }
  // Test-only (see testing.h): producers that compute their absorbed consumers in graph replay.
  int consumers_absorbed() const { return consumers_absorbed_; }
  // Test-only (see testing.h): the memory plan's arena bytes (0 without a plan).
  int64_t planned_arena_bytes() const { return graph_.plan ? graph_.plan->arena_bytes : 0; }
  // Test-only (see testing.h): Convs that apply their LeakyRelu producer in graph replay.
  int prologues_fused() const { return prologues_fused_; }

 private:
  // A run uses this executable's arena, staging buffers, stream and captured graph: runs of one
  // executable serialize; runs of different executables (a batch's lanes) overlap on the device.
  std::mutex run_mutex_;

  void record_programs();
  void lay_out();
  void take_views();
  void replan();
  void absorb_consumers();
  std::string absorption_unsafe(const Absorption& a) const;
  void fuse_prologues();
  void upload_constants();
  void stage_inputs(const std::vector<Tensor>& inputs);
  void set_routes(std::vector<const void*> sources, std::vector<char> keep);
  bool keeps(size_t output) const { return output < routes_.keep.size() && routes_.keep[output]; }
  void enqueue_inputs();   // the inputs, then the run-time state (seed, index faults reset)
  void enqueue_run_state();
  void enqueue_outputs();  // the index fault records, then the outputs
  void enqueue_faults_out();
  void check_index_faults() const;
  void run_graph();
  void copy_outputs_pinned();
  void run_eager(const RunOptions& options);
  std::vector<Tensor> run_locked(const std::vector<Tensor>& inputs, const RunOptions& options);
  void check_canaries(const std::string& kernel, int node_index);
  void run_profiled();
  void print_profile() const noexcept;
  void print_host_times() const noexcept;
  void free_all() noexcept;
  // cuBLAS and cuDNN from the pool (handle_pool.h) while the host enqueues work; false if held.
  bool borrow_handles();
  void return_handles() noexcept;
  struct HandleLoan {
    CudaExecutable& self;
    bool held;
    explicit HandleLoan(CudaExecutable& e, bool wanted = true) : self(e), held(wanted && e.borrow_handles()) {}
    ~HandleLoan() {
      if (held) self.return_handles();
    }
    HandleLoan(const HandleLoan&) = delete;
    HandleLoan& operator=(const HandleLoan&) = delete;
  };

  ir::Graph graph_;
  Options options_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Context> ctx_;
  std::vector<NodeProgram> programs_;
  int prologues_fused_ = 0;  // PrologueFusion entries kept (device.h)
  int consumers_absorbed_ = 0;  // Absorption entries kept (device.h)
  int views_taken_ = 0;  // channel-slice views (backends/channel_views.h): Slices with no launches
  std::vector<ir::ValueId> planned_views_;  // views the memory plan put inside their inputs (replan)

  // One allocation: constants, the planned arena, unplanned values, workspace, scratch
  // (safe mode: every slot separate, with canary guards, plus the guard table).
  void* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::vector<size_t> value_bytes_;  // per ValueId: bytes of the device buffer
  // Large constants in their process-wide device copies (executor.cpp), outside the arena.
  std::vector<std::pair<ir::ValueId, std::shared_ptr<const DeviceFloats>>> shared_constants_;
  bool is_shared_constant(ir::ValueId v) const {
    for (const auto& entry : shared_constants_)
      if (entry.first == v) return true;
    return false;
  }
  std::vector<GuardRange> guards_;
  std::vector<std::string> guard_owner_;
  GuardRange* guard_table_ = nullptr;  // in the arena (safe mode)
  uint32_t* broken_ = nullptr;         // in the arena (safe mode)
  std::vector<std::pair<void*, size_t>> fresh_;  // data regions NaN-filled at each safe run

  // Graph runs copy each output into a buffer of its pool and hand that buffer out as the output's
  // storage (LOCKSTEP_CUDA_PINNED_OUTPUTS=0: through out_stage_, as eager runs always do).
  static constexpr int kPinnedPerOutput = 8;  // buffers a caller may hold per output before copies
  bool pinned_outputs_ = false;
  std::vector<std::shared_ptr<PinnedPool>> out_pools_;     // per graph output
  std::vector<std::shared_ptr<std::byte[]>> pinned_out_;   // this run's buffers (null: staged)

  // Pinned staging: inputs are copied here, then device-side; outputs come back here.
  void* in_stage_ = nullptr;
  void* out_stage_ = nullptr;
  uint32_t* broken_host_ = nullptr;
  std::vector<size_t> in_offsets_, out_offsets_;
  size_t seed_stage_offset_ = 0;       // the run's seed in in_stage_ (when a random op reads it)
  size_t fault_bytes_ = 0;             // IndexFault records (device.h)
  IndexFault* faults_host_ = nullptr;  // pinned: read back with the outputs
  size_t in_bytes_ = 0, out_bytes_ = 0;

  // LOCKSTEP_CUDA_PROFILE=1: runs replay a second graph of the same launches with an event node
  // after each; the per-kernel and per-node table goes to stderr when the Executable is destroyed.
  bool profile_ = false;
  int profiled_runs_ = 0;
  std::vector<cudaEvent_t> events_;
  std::vector<double> launch_ms_;  // summed over profiled runs, per launch in program order
  cudaGraph_t profile_graph_ = nullptr;
  cudaGraphExec_t profile_exec_ = nullptr;

  // LOCKSTEP_CUDA_HOST_TIMES=1: each graph run's host phases (staging the inputs, the launch call,
  // the wait, the output copies) and, from event nodes, its input copies, kernels and output
  // copies; the medians go to stderr when the Executable is destroyed.
  bool host_times_ = false;
  bool compile_times_ = false;  // LOCKSTEP_CUDA_COMPILE_TIMES=1
  double alloc_ms_ = 0, pinned_ms_ = 0;  // the arena's cudaMalloc and the pinned staging, for compile_times_
  std::vector<std::array<double, 7>> host_samples_;
  cudaEvent_t graph_begin_ = nullptr, graph_end_ = nullptr;

  cudaGraph_t cuda_graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  bool ran_ = false;            // the first run is eager; the graph is captured at the second
  bool capture_first_ = false;  // LOCKSTEP_CUDA_CAPTURE_FIRST=1: capture at the first run instead
  bool eager_nodes_ = false;    // LOCKSTEP_CUDA_EAGER_NODES=1: eager runs launch every node's own kernels
  // Event nodes in the run graph around the kernels (after the input copies, before the output
  // copies): last_device_ms().
  cudaEvent_t kernels_begin_ = nullptr, kernels_end_ = nullptr;
  mutable std::optional<double> last_device_ms_;
  mutable bool device_ms_pending_ = false;  // the run did not wait: read the events when asked

  // run_resident: per input the device address it is copied from (null: staged from the host),
  // per output whether it stays on the device. Captured graphs bake them in (graph_routes_).
  struct Routes {
    std::vector<const void*> sources;
    std::vector<char> keep;
    bool operator==(const Routes&) const = default;
  };
  Routes routes_, graph_routes_;
  cudaEvent_t done_ = nullptr;  // recorded at the end of each run: resident outputs' readers wait on it
  bool synced_ = true;          // the last run waited for its stream
};

}  // namespace lockstep::cuda
