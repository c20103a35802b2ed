// The CUDA executable's runs: input staging, graph capture and replay, eager runs (the first
// run of a shape, taps, faults, safe mode), outputs into pinned buffers.
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>

#include "backends/cuda/executor.h"
#include "core/phase_clock.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

// An output run_resident() left in the producing executable's arena.
class CudaResident final : public ResidentValue {
 public:
  CudaResident(const void* ptr, size_t bytes, DType dtype, Shape shape, cudaEvent_t ready, int device)
      : ptr_(ptr), bytes_(bytes), dtype_(dtype), shape_(std::move(shape)), ready_(ready), device_(device) {}
  Tensor download() const override {
    check_cuda(cudaSetDevice(device_), "select device");
    check_cuda(cudaEventSynchronize(ready_), "wait for a device value");
    Tensor t(dtype_, shape_);
    if (bytes_) check_cuda(cudaMemcpy(t.raw(), ptr_, bytes_, cudaMemcpyDeviceToHost), "copy a device value");
    return t;
  }
  size_t nbytes() const override { return bytes_; }
  const void* ptr() const { return ptr_; }
  cudaEvent_t ready() const { return ready_; }
  int device() const { return device_; }

 private:
  const void* ptr_;
  size_t bytes_;
  DType dtype_;
  Shape shape_;
  cudaEvent_t ready_;
  int device_;
};

}  // namespace

// A change of routes invalidates the captured graphs (their copies are baked in).
void CudaExecutable::set_routes(std::vector<const void*> sources, std::vector<char> keep) {
  routes_ = {std::move(sources), std::move(keep)};
  if (routes_ == graph_routes_) return;
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (cuda_graph_) cudaGraphDestroy(cuda_graph_);
  if (profile_exec_) cudaGraphExecDestroy(profile_exec_);
  if (profile_graph_) cudaGraphDestroy(profile_graph_);
  graph_exec_ = profile_exec_ = nullptr;
  cuda_graph_ = profile_graph_ = nullptr;
  graph_routes_ = routes_;
}

std::optional<double> CudaExecutable::last_device_ms() const {
  if (device_ms_pending_) {
    float ms = 0.0f;
    check_cuda(cudaEventSynchronize(kernels_end_), "kernel time");
    check_cuda(cudaEventElapsedTime(&ms, kernels_begin_, kernels_end_), "kernel time");
    last_device_ms_ = ms;
    device_ms_pending_ = false;
  }
  return last_device_ms_;
}

void CudaExecutable::stage_inputs(const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph_.inputs.size())
    throw Error(ErrorCode::MissingInput, "cuda: the model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " +
                                             std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& value = graph_.value(graph_.inputs[i]);
    const Tensor& t = inputs[i];
    if (i < routes_.sources.size() && routes_.sources[i]) continue;  // copied on the device
    if (!t.defined()) throw Error(ErrorCode::MissingInput, "cuda: input '" + value.name + "' is missing");
    const bool dtype_ok = is_floating(value.dtype) ? is_floating(t.dtype()) : t.dtype() == value.dtype;
    if (!dtype_ok)
      throw Error(ErrorCode::DTypeMismatch, "cuda: input '" + value.name + "' must be " + dtype_name(value.dtype) + ", got " +
                                                dtype_name(t.dtype()));
    if (t.shape() != value.shape)
      throw Error(ErrorCode::ShapeMismatch, "cuda: input '" + value.name + "' must have shape " + shape_str(value.shape) +
                                                ", got " + shape_str(t.shape()));
    Tensor d = to_device_repr(t);
    std::memcpy(static_cast<std::byte*>(in_stage_) + in_offsets_[i], d.raw(), d.nbytes());
  }
}

void CudaExecutable::enqueue_inputs() {
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const size_t bytes = value_bytes_[static_cast<size_t>(graph_.inputs[i])];
    const void* source = i < routes_.sources.size() ? routes_.sources[i] : nullptr;
    if (bytes && source)
      check_cuda(cudaMemcpyAsync(ctx_->ptr(graph_.inputs[i]), source, bytes, cudaMemcpyDeviceToDevice, stream_),
                 "copy a device input");
    else if (bytes)
      check_cuda(cudaMemcpyAsync(ctx_->ptr(graph_.inputs[i]), static_cast<std::byte*>(in_stage_) + in_offsets_[i], bytes,
                                 cudaMemcpyHostToDevice, stream_), "copy input");
  }
  enqueue_run_state();
}

void CudaExecutable::enqueue_run_state() {
  if (ctx_->needs_run_seed())
    check_cuda(cudaMemcpyAsync(ctx_->run_seed_, static_cast<std::byte*>(in_stage_) + seed_stage_offset_, sizeof(uint64_t),
                               cudaMemcpyHostToDevice, stream_), "copy the run seed");
  if (fault_bytes_) check_cuda(cudaMemsetAsync(ctx_->index_faults_, 0xFF, fault_bytes_, stream_), "reset index faults");
}

void CudaExecutable::enqueue_faults_out() {
  if (fault_bytes_)
    check_cuda(cudaMemcpyAsync(faults_host_, ctx_->index_faults_, fault_bytes_, cudaMemcpyDeviceToHost, stream_), "copy index faults");
}

// After the run has synchronized: the cpu's error for the first node whose kernel met a bad index.
void CudaExecutable::check_index_faults() const {
  const auto& nodes = ctx_->index_fault_nodes();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const IndexFault& f = faults_host_[k];
    if (f.position == ~0ull) continue;
    const ir::Node& node = graph_.nodes[static_cast<size_t>(nodes[k])];
    ir::checked_index(node, f.index, f.dim, static_cast<int64_t>(f.position), "index");  // throws
    throw Error(ErrorCode::InvalidArgument, "cuda: index " + std::to_string(f.index) + " at position " +
                                                std::to_string(f.position) + " is out of range", node.name, ir::op_name(node.op));
  }
}

void CudaExecutable::enqueue_outputs() {
  enqueue_faults_out();
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const size_t bytes = value_bytes_[static_cast<size_t>(graph_.outputs[i])];
    if (bytes && !keeps(i))
      check_cuda(cudaMemcpyAsync(static_cast<std::byte*>(out_stage_) + out_offsets_[i], ctx_->ptr(graph_.outputs[i]), bytes,
                                 cudaMemcpyDeviceToHost, stream_), "copy output");
  }
}

// After the graph: each output into a buffer of its pool (handed out as the output's storage by
// run()), or into the staging buffer when its pool has none to give.
void CudaExecutable::copy_outputs_pinned() {
  const size_t n = graph_.outputs.size();
  if (out_pools_.empty())
    for (size_t i = 0; i < n; ++i) out_pools_.push_back(PinnedPool::make(value_bytes_[static_cast<size_t>(graph_.outputs[i])], kPinnedPerOutput));
  pinned_out_.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const size_t bytes = value_bytes_[static_cast<size_t>(graph_.outputs[i])];
    if (!bytes || keeps(i)) continue;
    pinned_out_[i] = out_pools_[i]->take();
    void* dst = pinned_out_[i] ? static_cast<void*>(pinned_out_[i].get()) : static_cast<std::byte*>(out_stage_) + out_offsets_[i];
    check_cuda(cudaMemcpyAsync(dst, ctx_->ptr(graph_.outputs[i]), bytes, cudaMemcpyDeviceToHost, stream_), "copy output");
  }
  if (host_times_) check_cuda(cudaEventRecord(graph_end_, stream_), "timing event");
}

void CudaExecutable::run_graph() {
  if (!graph_exec_) {
    PhaseClock capture(compile_times_);
    // Captured once: input copies from pinned staging, every launch, and (pinned outputs off) the
    // output copies to staging; copy_outputs_pinned() otherwise copies after the graph.
    if (!kernels_begin_) check_cuda(cudaEventCreate(&kernels_begin_), "timing event");
    if (!kernels_end_) check_cuda(cudaEventCreate(&kernels_end_), "timing event");
    if (host_times_) {
      check_cuda(cudaEventCreate(&graph_begin_), "timing event");
      check_cuda(cudaEventCreate(&graph_end_), "timing event");
    }
    DeviceSetupLock setup(device_setup_mutex());  // no allocation or device sync on any thread meanwhile
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "begin graph capture");
    try {
      if (host_times_) check_cuda(cudaEventRecordWithFlags(graph_begin_, stream_, cudaEventRecordExternal), "timing event");
      enqueue_inputs();
      check_cuda(cudaEventRecordWithFlags(kernels_begin_, stream_, cudaEventRecordExternal), "timing event");
      for (auto& program : programs_)
        for (auto& launch : program.launches) {
          if (!launch.in_graph()) continue;
          launch.fn(stream_);
          check_cuda(cudaPeekAtLastError(), "launch " + launch.kernel + " during capture",
                     graph_.nodes[static_cast<size_t>(program.node)].name);
        }
      check_cuda(cudaEventRecordWithFlags(kernels_end_, stream_, cudaEventRecordExternal), "timing event");
      if (!pinned_outputs_) enqueue_outputs();
      else enqueue_faults_out();
      if (host_times_ && !pinned_outputs_) check_cuda(cudaEventRecordWithFlags(graph_end_, stream_, cudaEventRecordExternal), "timing event");
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream_, &broken);
      if (broken) cudaGraphDestroy(broken);
      cudaGetLastError();
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream_, &cuda_graph_), "end graph capture");
    check_cuda(cudaGraphInstantiate(&graph_exec_, cuda_graph_, 0), "instantiate graph");
    if (compile_times_) {
      capture.mark("capture+instantiate");
      std::fprintf(stderr, "lockstep cuda first run: %s\n", capture.str().c_str());
    }
  }
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  check_cuda(cudaGraphLaunch(graph_exec_, stream_), "launch graph");
  if (pinned_outputs_) copy_outputs_pinned();
  check_cuda(cudaEventRecord(done_, stream_), "run event");
  const auto t1 = clock::now();
  // Every output kept on the device (run_resident) and no index faults to read: the next
  // segment's stream waits on done_, not the host.
  bool wait = fault_bytes_ || host_times_;
  for (size_t i = 0; i < graph_.outputs.size() && !wait; ++i) wait = value_bytes_[static_cast<size_t>(graph_.outputs[i])] && !keeps(i);
  if (!wait) {
    synced_ = false;
    device_ms_pending_ = true;
    return;
  }
  check_cuda(cudaStreamSynchronize(stream_), "run graph");
  const auto t2 = clock::now();
  float ms = 0.0f;
  check_cuda(cudaEventElapsedTime(&ms, kernels_begin_, kernels_end_), "kernel time");
  last_device_ms_ = ms;
  device_ms_pending_ = false;
  if (host_times_) {
    float in_ms = 0.0f, out_ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&in_ms, graph_begin_, kernels_begin_), "input copy time");
    check_cuda(cudaEventElapsedTime(&out_ms, kernels_end_, graph_end_), "output copy time");
    const auto ms_of = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    host_samples_.push_back({0.0, ms_of(t1 - t0), ms_of(t2 - t1), in_ms, ms, out_ms, 0.0});
  }
}

void CudaExecutable::check_canaries(const std::string& kernel, int node_index) {
  check_cuda(cudaMemsetAsync(broken_, 0xFF, sizeof(uint32_t), stream_), "reset canary word");
  launch_canary_check(guard_table_, static_cast<int>(guards_.size()), broken_, stream_);
  check_cuda(cudaMemcpyAsync(broken_host_, broken_, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_), "read canary word");
  check_cuda(cudaStreamSynchronize(stream_), "canary check");
  const uint32_t first = *broken_host_;
  if (first == 0xFFFFFFFFu) return;
  const std::string node = node_index >= 0 ? graph_.nodes[static_cast<size_t>(node_index)].result_onnx_name() : std::string();
  const std::string op = node_index >= 0 ? ir::op_name(graph_.nodes[static_cast<size_t>(node_index)].op) : "";
  throw Error(ErrorCode::Internal, "cuda safe mode: kernel '" + kernel + "' of ONNX node '" + node +
                                       "' wrote outside its buffer: the canary " + guard_owner_[first] + " is broken",
              node, op);
}

void CudaExecutable::run_eager(const RunOptions& options) {
  const bool safe = options_.safe;
  // Node by node (every node's own kernels) only where something looks between nodes: taps,
  // faults, safe mode. A plain first run streams the graph's launches uncaptured: the same
  // kernels and bits as its replays, and fewer of them (absorbed consumers, fused prologues).
  const bool node_by_node = safe || options.tap || options.fault_for_testing || eager_nodes_;
  if (safe) {
    for (const auto& [ptr, bytes] : fresh_) launch_nan_fill(ptr, bytes, stream_);
    check_cuda(cudaStreamSynchronize(stream_), "safe mode NaN fill");
  }
  enqueue_inputs();
  if (!kernels_begin_) check_cuda(cudaEventCreate(&kernels_begin_), "timing event");
  if (!kernels_end_) check_cuda(cudaEventCreate(&kernels_end_), "timing event");
  check_cuda(cudaEventRecord(kernels_begin_, stream_), "timing event");
  for (auto& program : programs_) {
    const ir::Node& node = graph_.nodes[static_cast<size_t>(program.node)];
    for (auto& launch : program.launches) {
      if (node_by_node ? !launch.in_eager() : !launch.in_graph()) continue;
      launch.fn(stream_);
      if (safe) {
        check_cuda(cudaGetLastError(), "launch " + launch.kernel, node.name);
        check_cuda(cudaStreamSynchronize(stream_), "run " + launch.kernel, node.name);
        check_canaries(launch.kernel, program.node);
      }
    }
    if (options.fault_for_testing) {  // test-only: alter the node's outputs through a host copy
      check_cuda(cudaStreamSynchronize(stream_), "run node", node.name);
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        const ir::ValueId v = node.outputs[i];
        if (v == ir::kNoValue) continue;
        const ir::Value& value = graph_.value(v);
        Tensor t(device_dtype(value.dtype), value.shape);
        if (!t.nbytes()) continue;
        check_cuda(cudaMemcpy(t.raw(), ctx_->ptr(v), t.nbytes(), cudaMemcpyDeviceToHost), "fault copy", node.name);
        options.fault_for_testing(node, static_cast<int>(i), t);
        check_cuda(cudaMemcpy(ctx_->ptr(v), t.raw(), t.nbytes(), cudaMemcpyHostToDevice), "fault copy", node.name);
      }
    }
    if (options.tap) {
      check_cuda(cudaStreamSynchronize(stream_), "run node", node.name);
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        const ir::ValueId v = node.outputs[i];
        if (v == ir::kNoValue) continue;
        const ir::Value& value = graph_.value(v);
        Tensor t(device_dtype(value.dtype), value.shape);
        if (t.nbytes()) check_cuda(cudaMemcpy(t.raw(), ctx_->ptr(v), t.nbytes(), cudaMemcpyDeviceToHost), "tap copy", node.name);
        options.tap(node, static_cast<int>(i), t);
      }
    }
  }
  check_cuda(cudaEventRecord(kernels_end_, stream_), "timing event");
  enqueue_outputs();
  check_cuda(cudaEventRecord(done_, stream_), "run event");
  check_cuda(cudaStreamSynchronize(stream_), "run");
  float ms = 0.0f;  // with taps or safe mode, host copies and checks fall inside
  check_cuda(cudaEventElapsedTime(&ms, kernels_begin_, kernels_end_), "kernel time");
  last_device_ms_ = ms;
  device_ms_pending_ = false;
}

std::vector<Tensor> CudaExecutable::run(const std::vector<Tensor>& inputs, const RunOptions& options) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  set_routes(std::vector<const void*>(graph_.inputs.size(), nullptr), std::vector<char>(graph_.outputs.size(), 0));
  return run_locked(inputs, options);
}

std::vector<RunValue> CudaExecutable::run_resident(const std::vector<RunValue>& inputs, const std::vector<char>& to_host,
                                                   const RunOptions& options) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  check_cuda(cudaSetDevice(device_), "select device");
  if (inputs.size() != graph_.inputs.size())
    throw Error(ErrorCode::MissingInput, "cuda: the model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " +
                                             std::to_string(inputs.size()));
  std::vector<Tensor> host(inputs.size());
  std::vector<const void*> sources(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].resident) {
      host[i] = inputs[i].host;
      continue;
    }
    const ir::Value& value = graph_.value(graph_.inputs[i]);
    const auto* r = dynamic_cast<const CudaResident*>(inputs[i].resident.get());
    if (!r || r->device() != device_)
      throw Error(ErrorCode::InvalidArgument, "cuda: input '" + value.name + "' is a device value of another backend or device");
    const size_t bytes = value_bytes_[static_cast<size_t>(graph_.inputs[i])];
    if (r->nbytes() != bytes)
      throw Error(ErrorCode::ShapeMismatch, "cuda: input '" + value.name + "' must be " + std::to_string(bytes) +
                                                " bytes on the device, the value given holds " + std::to_string(r->nbytes()));
    sources[i] = r->ptr();
  }
  std::vector<char> keep(graph_.outputs.size(), 0);
  for (size_t o = 0; o < keep.size() && o < to_host.size(); ++o)
    keep[o] = !to_host[o] && value_bytes_[static_cast<size_t>(graph_.outputs[o])] > 0;
  if (!synced_) check_cuda(cudaStreamSynchronize(stream_), "the previous run");  // its staging buffer is reused
  synced_ = true;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (sources[i]) {
      const auto* r = static_cast<const CudaResident*>(inputs[i].resident.get());
      check_cuda(cudaStreamWaitEvent(stream_, r->ready(), 0), "wait for an input's producer");
    }
  set_routes(std::move(sources), std::move(keep));
  std::vector<Tensor> outputs = run_locked(host, options);
  std::vector<RunValue> result;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!keeps(o)) {
      result.push_back({std::move(outputs[o]), nullptr});
      continue;
    }
    const ir::ValueId id = graph_.outputs[o];
    const ir::Value& value = graph_.value(id);
    result.push_back({Tensor{}, std::make_shared<CudaResident>(ctx_->ptr(id), value_bytes_[static_cast<size_t>(id)],
                                                               device_dtype(value.dtype), value.shape, done_, device_)});
  }
  return result;
}

std::optional<std::vector<DeviceTensor>> CudaExecutable::run_on_device(const std::vector<Tensor>& inputs,
                                                                       const RunOptions& options) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  set_routes(std::vector<const void*>(graph_.inputs.size(), nullptr), std::vector<char>(graph_.outputs.size(), 0));
  run_locked(inputs, options);  // the same run, bit for bit (its host copies are dropped)
  // The arena belongs to the next run: each output gets a buffer of its own.
  std::vector<DeviceTensor> out;
  for (ir::ValueId id : graph_.outputs) {
    const ir::Value& value = graph_.value(id);
    DeviceTensor t;
    t.dtype = device_dtype(value.dtype);
    t.shape = value.shape;
    t.device = device_;
    const size_t bytes = static_cast<size_t>(num_elements(value.shape)) * dtype_size(t.dtype);
    void* p = nullptr;
    {
      DeviceSetupLock setup(device_setup_mutex());
      check_cuda(cudaMalloc(&p, bytes > 0 ? bytes : 1), "allocate a device output");
    }
    t.data = std::shared_ptr<void>(p, [](void* q) {
      DeviceSetupLock setup(device_setup_mutex());
      cudaFree(q);
    });
    check_cuda(cudaMemcpyAsync(p, ctx_->ptr(id), bytes, cudaMemcpyDeviceToDevice, stream_), "copy a device output");
    out.push_back(std::move(t));
  }
  check_cuda(cudaStreamSynchronize(stream_), "device outputs");
  return out;
}

std::vector<Tensor> CudaExecutable::run_locked(const std::vector<Tensor>& inputs, const RunOptions& options) {
  check_cuda(cudaSetDevice(device_), "select device");
  if (!synced_) check_cuda(cudaStreamSynchronize(stream_), "the previous run");
  synced_ = true;
  if (!done_) check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "run event");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  stage_inputs(inputs);  // the previous run synchronized, so the staging buffer is free
  if (ctx_->needs_run_seed()) std::memcpy(static_cast<std::byte*>(in_stage_) + seed_stage_offset_, &options.seed, sizeof(uint64_t));
  const auto t1 = clock::now();
  // A shape's first run launches eagerly (the graph's launches, uncaptured: run_eager): a length
  // met once never pays the graph's capture and instantiation (1-7 ms a voice segment).
  const bool first = !graph_exec_ && !ran_ && !capture_first_;
  const bool eager = options.tap || options.fault_for_testing || options_.safe || first;
  const bool graph = !eager && !profile_;
  {
    HandleLoan loan(*this, eager || profile_ || !graph_exec_);  // a replayed graph needs no handles
    if (eager) run_eager(options);
    else if (profile_) run_profiled();
    else run_graph();
  }
  ran_ = true;
  if (fault_bytes_) check_index_faults();
  const auto t2 = clock::now();
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const ir::Value& value = graph_.value(graph_.outputs[i]);
    if (keeps(i)) {  // left in the arena (run_resident)
      outputs.emplace_back();
      continue;
    }
    if (i < pinned_out_.size() && pinned_out_[i]) {  // filled by this run's run_graph() only
      outputs.push_back(Tensor::over(device_dtype(value.dtype), value.shape, std::move(pinned_out_[i])));
      continue;
    }
    Tensor t(device_dtype(value.dtype), value.shape);
    std::memcpy(t.raw(), static_cast<std::byte*>(out_stage_) + out_offsets_[i], t.nbytes());
    outputs.push_back(std::move(t));
  }
  pinned_out_.clear();
  if (host_times_ && graph && !host_samples_.empty()) {
    const auto ms_of = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    host_samples_.back()[0] = ms_of(t1 - t0);
    host_samples_.back()[6] = ms_of(clock::now() - t2);
  }
  return outputs;
}

}  // namespace lockstep::cuda
