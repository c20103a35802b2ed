#include "backends/cpu/executor.h"

#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/profile.h"
#include "backends/cpu/transpose.h"
#include "backends/cpu/views.h"
#include "core/hash.h"
#include "core/host_scratch.h"

namespace lockstep::cpu {

namespace {

constexpr int64_t kAlign = 64;
int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Buffers from this size on come straight from mmap (zero pages on first touch).
constexpr size_t kMapBytes = size_t{1} << 20;

// A zeroed, 64-byte aligned buffer. Big ones are mapped rather than memset: compile then touches
// none of the arena (a memset faulted in every page, ~0.4 s per GiB, before any run needed it).
struct AlignedBuffer {
  std::byte* data = nullptr;
  size_t mapped = 0;  // bytes mapped; 0 when from aligned_alloc
  explicit AlignedBuffer(size_t bytes) {
    size_t padded = static_cast<size_t>(align_up(static_cast<int64_t>(bytes == 0 ? 1 : bytes)));
    if (padded >= kMapBytes) {
      void* p = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        throw Error(ErrorCode::OutOfMemory, "cpu: cannot map " + std::to_string(bytes) + " bytes");
      data = static_cast<std::byte*>(p);
      mapped = padded;
      return;
    }
    data = static_cast<std::byte*>(std::aligned_alloc(kAlign, padded));
    if (!data) throw Error(ErrorCode::OutOfMemory, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    std::memset(data, 0, padded);
  }
  ~AlignedBuffer() {
    if (mapped)
      munmap(data, mapped);
    else
      std::free(data);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

int64_t value_bytes(const ir::Value& v) {
  return num_elements(v.shape) * static_cast<int64_t>(storage_size(v.dtype));
}

// Values a kernel can see: graph inputs and outputs, node inputs, outputs and epilogue operands.
// Fusion and folding leave the others behind in graph.values (146 of them, 589 MiB, in the seed
// decoder at 1024 frames); they get no buffer.
std::vector<char> referenced_values(const ir::Graph& graph) {
  std::vector<char> used(graph.values.size(), 0);
  auto mark = [&](ir::ValueId id) {
    if (id != ir::kNoValue) used[static_cast<size_t>(id)] = 1;
  };
  for (ir::ValueId id : graph.inputs) mark(id);
  for (ir::ValueId id : graph.outputs) mark(id);
  for (const auto& node : graph.nodes) {
    for (ir::ValueId id : node.inputs) mark(id);
    for (ir::ValueId id : node.outputs) mark(id);
    for (const auto& step : node.epilogue) mark(step.operand);
  }
  return used;
}

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const ir::Graph& graph, const Options& options)
      : graph_(graph), threads_(resolve_threads(options.threads)), isa_(active_isa()), engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_) {
    const auto compile_start = std::chrono::steady_clock::now();
    ThreadsScope scope(threads_);
    const size_t nvalues = graph_.values.size();
    // Place every non-constant value: the plan's offsets, else one slot each.
    std::vector<int64_t> offsets(nvalues, -1);
    int64_t arena = 0;
    if (graph_.plan) {
      if (graph_.plan->offsets.size() != nvalues)
        throw Error(ErrorCode::Internal, "cpu: memory plan does not cover every value");
      offsets = graph_.plan->offsets;
      arena = align_up(graph_.plan->arena_bytes);
      for (size_t v = 0; v < nvalues; ++v)
        if (offsets[v] >= 0 && offsets[v] + value_bytes(graph_.values[v]) > graph_.plan->arena_bytes)
          throw Error(ErrorCode::Internal, "cpu: memory plan puts '" + graph_.values[v].name + "' outside the arena");
    }
    const std::vector<char> used = referenced_values(graph_);
    for (size_t v = 0; v < nvalues; ++v) {
      const ir::Value& value = graph_.values[v];
      if (value.constant.defined() || offsets[v] >= 0 || !used[v]) continue;
      if (!value.shape_known())
        throw Error(ErrorCode::ShapeMismatch, "cpu: value '" + value.name + "' has no static shape");
      offsets[v] = arena;
      arena += align_up(value_bytes(value));
    }
    // The run-time shape stage's segments share one scratch (they run one after another).
    scratch_ = options.host_scratch;
    if (scratch_) {
      arena_data_ = scratch_->arena(arena);
    } else {
      arena_ = std::make_unique<AlignedBuffer>(static_cast<size_t>(arena));
      arena_data_ = arena_->data;
    }
    arena_bytes_ = arena;

    CompileContext ctx{.graph = graph_, .pointers = std::vector<void*>(nvalues, nullptr), .threads = threads_,
                       .engine = &engine_, .stream = &stream_, .workspace = &workspace_};
    ctx.profile = profile_.enabled() ? &profile_ : nullptr;
    ctx.run_seed = &run_seed_;
    ctx.f64_prefixes = resolve_f64_accumulate(graph_, options);
    ctx.nwc = choose_nwc(graph_);
    nwc_ = ctx.nwc;
    for (size_t v = 0; v < nvalues; ++v) {
      const ir::Value& value = graph_.values[v];
      if (!used[v]) continue;  // folded or fused away: no kernel reads it
      if (value.constant.defined()) {
        // Constants converted once: floating ones to float32.
        constants_.push_back(value.constant.dtype() == DType::Float64 ? value.constant.to(DType::Float32)
                                                                      : value.constant);
        ctx.pointers[v] = constants_.back().raw();
        remember_constant(constants_.back());  // weight caches hash it once (core/hash.h)
      } else if (offsets[v] >= 0) {
        ctx.pointers[v] = arena_data_ + offsets[v];
      }
    }
    ctx.pitch = choose_views(ctx);
    pitch_ = ctx.pitch;
    pointers_ = ctx.pointers;
    for (const auto& node : graph_.nodes) kernels_.push_back(make_kernel(ctx, node));
    if (scratch_) {
      workspace_.data = scratch_->workspace(static_cast<int64_t>(ctx.workspace_bytes));
    } else {
      workspace_buffer_ = std::make_unique<AlignedBuffer>(ctx.workspace_bytes);
      workspace_.data = workspace_buffer_->data;
    }
    workspace_.bytes = ctx.workspace_bytes;
    for (auto& kernel : kernels_) kernel->bind_workspace(workspace_.data);
    profile_.set_compile_ms(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count());
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) override {
    check_inputs(inputs);
    std::lock_guard<std::mutex> lock(run_mutex_);  // runs share the arena: serialize (docs/security.md)
    ThreadsScope scope(threads_);
    run_seed_ = options.seed;  // random kernels read it
    for (size_t i = 0; i < inputs.size(); ++i) {
      ir::ValueId id = graph_.inputs[i];
      const Tensor& in = inputs[i];
      std::memcpy(pointers_[static_cast<size_t>(id)], in.raw(), in.nbytes());
    }
    const bool profiling = profile_.begin_run();
    for (size_t n = 0; n < kernels_.size(); ++n) {
      if (profiling) {
        const auto t0 = std::chrono::steady_clock::now();
        kernels_[n]->run();
        const ir::Node& node = graph_.nodes[n];
        std::string key = std::string(ir::op_name(node.op)) + (node.epilogue.empty() ? "" : "+epilogue");
        if (profile_.by_shape() && !node.outputs.empty() && node.outputs[0] != ir::kNoValue)
          key += " " + shape_str(graph_.value(node.outputs[0]).shape) + (is_nwc(node.outputs[0]) ? " nwc" : "");
        profile_.add(key, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      } else {
        kernels_[n]->run();
      }
      if (options.fault_for_testing) plant_fault(graph_.nodes[n], options.fault_for_testing);
      if (options.tap) {
        const ir::Node& node = graph_.nodes[n];
        for (size_t o = 0; o < node.outputs.size(); ++o)
          if (node.outputs[o] != ir::kNoValue) options.tap(node, static_cast<int>(o), copy_out(node.outputs[o]));
      }
    }
    profile_.end_run();
    std::vector<Tensor> outputs;
    outputs.reserve(graph_.outputs.size());
    for (ir::ValueId id : graph_.outputs) outputs.push_back(copy_out(id));
    return outputs;
  }

  const ir::Graph& graph() const override { return graph_; }
  std::string backend_name() const override { return "cpu"; }
  std::vector<std::string> kernel_implementations() const override {
    std::vector<std::string> names;
    for (const auto& kernel : kernels_) names.push_back(kernel->implementation());
    return names;
  }
  const void* arena_data() const { return arena_data_; }
  int64_t arena_size() const { return arena_bytes_; }

 private:
  // Test-only: the fault sees a copy of each output and its result is written back to the arena.
  void plant_fault(const ir::Node& node, const FaultFn& fault) {
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] == ir::kNoValue) continue;
      Tensor t = copy_out(node.outputs[o]);
      fault(node, static_cast<int>(o), t);
      void* dst = pointers_[static_cast<size_t>(node.outputs[o])];
      if (const int64_t pitch = pitch_[static_cast<size_t>(node.outputs[o])]) {  // strided view: rows back in place
        const Shape& s = t.shape();
        std::vector<float> dense(static_cast<size_t>(t.numel()));
        ncw_to_nwc(static_cast<const float*>(t.raw()), dense.data(), s[0], s[1], s[2]);
        scatter_rows(dense.data(), static_cast<float*>(dst), pitch, s[0] * s[2], s[1]);
      } else if (is_nwc(node.outputs[o])) {
        const Shape& s = t.shape();
        ncw_to_nwc(static_cast<const float*>(t.raw()), static_cast<float*>(dst), s[0], s[1], s[2]);
      } else {
        std::memcpy(dst, t.raw(), t.nbytes());
      }
    }
  }

  Tensor copy_out(ir::ValueId id) const {
    const ir::Value& v = graph_.value(id);
    Tensor t(storage_dtype(v.dtype), v.shape);
    const void* src = pointers_[static_cast<size_t>(id)];
    std::vector<float> dense;
    if (const int64_t pitch = pitch_[static_cast<size_t>(id)]) {  // a strided view (views.h): its rows first
      dense.resize(static_cast<size_t>(t.numel()));
      gather_rows(static_cast<const float*>(src), pitch, dense.data(), v.shape[0] * v.shape[2], v.shape[1]);
      src = dense.data();
    }
    if (is_nwc(id))  // channels-last in the arena: hand out the declared NCW layout
      nwc_to_ncw(static_cast<const float*>(src), static_cast<float*>(t.raw()), v.shape[0], v.shape[1], v.shape[2],
                 nullptr);
    else
      std::memcpy(t.raw(), src, t.nbytes());
    return t;
  }

  bool is_nwc(ir::ValueId id) const { return nwc_[static_cast<size_t>(id)] != 0; }

  void check_inputs(const std::vector<Tensor>& inputs) const {
    if (inputs.size() < graph_.inputs.size())
      throw Error(ErrorCode::MissingInput, "input '" + graph_.value(graph_.inputs[inputs.size()]).name +
                                               "' was not provided (" + std::to_string(inputs.size()) + " of " +
                                               std::to_string(graph_.inputs.size()) + " inputs given)");
    if (inputs.size() > graph_.inputs.size())
      throw Error(ErrorCode::InvalidArgument, std::to_string(inputs.size()) + " inputs given, the graph takes " +
                                                  std::to_string(graph_.inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Value& v = graph_.value(graph_.inputs[i]);
      const Tensor& t = inputs[i];
      if (!t.defined()) throw Error(ErrorCode::MissingInput, "input '" + v.name + "' is an empty tensor");
      DType expected = storage_dtype(v.dtype);
      if (t.dtype() != expected)
        throw Error(ErrorCode::DTypeMismatch, "input '" + v.name + "': expected " + dtype_name(expected) + ", got " +
                                                  dtype_name(t.dtype()) + " (the cpu backend computes in float32)");
      if (t.shape() != v.shape)
        throw Error(ErrorCode::ShapeMismatch, "input '" + v.name + "': expected shape " + shape_str(v.shape) +
                                                  ", got " + shape_str(t.shape()));
    }
  }

  ir::Graph graph_;
  int threads_;
  Isa isa_;  // read (and oneDNN capped) before the engine exists: oneDNN takes its cap once
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::shared_ptr<HostScratch> scratch_;  // the arena and workspace's home when shared, else null
  std::unique_ptr<AlignedBuffer> arena_;   // own arena when not shared
  std::byte* arena_data_ = nullptr;
  std::mutex run_mutex_;
  uint64_t run_seed_ = 0;  // RunOptions::seed of the run in progress
  int64_t arena_bytes_ = 0;
  std::vector<Tensor> constants_;
  std::vector<void*> pointers_;
  std::vector<char> nwc_;  // per ValueId: stored channels-last (layout.h)
  std::vector<int64_t> pitch_;  // per ValueId: a strided view's row pitch (views.h), 0 otherwise
  Workspace workspace_;
  std::unique_ptr<AlignedBuffer> workspace_buffer_;
  Profile profile_;  // before the kernels, which keep a pointer to it
  std::vector<KernelPtr> kernels_;
};

}  // namespace

int resolve_threads(int threads) { return threads > 0 ? threads : usable_cpus(); }

const void* arena_address(const Executable& executable) {
  auto* cpu = dynamic_cast<const CpuExecutable*>(&executable);
  return cpu ? cpu->arena_data() : nullptr;
}

int64_t arena_bytes(const Executable& executable) {
  auto* cpu = dynamic_cast<const CpuExecutable*>(&executable);
  return cpu ? cpu->arena_size() : -1;
}

std::unique_ptr<Executable> make_executable(const ir::Graph& graph, const Options& options) {
  return std::make_unique<CpuExecutable>(graph, options);
}

}  // namespace lockstep::cpu
