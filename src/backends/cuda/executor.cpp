#include "backends/cuda/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "api/f64_default.h"
#include "backends/cuda/families.h"
#include "backends/cuda/handle_pool.h"
#include "core/phase_clock.h"
#include "core/shared_by_key.h"
#include "backends/cuda/testing.h"

namespace lockstep::cuda {
namespace {

constexpr size_t kAlign = kArenaAlign;
constexpr size_t kGuardBytes = 256;
constexpr size_t kMinWorkspace = size_t{4} << 20;  // cuBLAS's own needs on Hopper

size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

void record_node(Context& ctx, int index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(index)];
  switch (node.op) {
    case ir::Op::Conv: case ir::Op::ConvTranspose:
      record_conv(ctx, index, program); break;
    case ir::Op::MatMul: case ir::Op::Gemm: case ir::Op::Softmax:
      record_matmul(ctx, index, program); break;
    case ir::Op::Shape: case ir::Op::ConstantOfShape: case ir::Op::Range:
      record_shape_op(ctx, index, program); break;
    case ir::Op::Slice: case ir::Op::Split: case ir::Op::Concat: case ir::Op::Reshape: case ir::Op::Flatten:
    case ir::Op::Transpose: case ir::Op::Unsqueeze: case ir::Op::Squeeze: case ir::Op::Pad: case ir::Op::Gather:
    case ir::Op::Expand:
      record_data_movement(ctx, index, program); break;
    case ir::Op::Less: case ir::Op::LessOrEqual: case ir::Op::Greater: case ir::Op::GreaterOrEqual:
    case ir::Op::And: case ir::Op::Or: case ir::Op::Xor: case ir::Op::Not:
      record_logical(ctx, index, program); break;
    case ir::Op::ReduceMean: case ir::Op::ReduceSum: case ir::Op::ReduceMax: case ir::Op::ReduceMin:
    case ir::Op::CumSum:
      record_reduce(ctx, index, program); break;
    case ir::Op::ScatterND: case ir::Op::GatherND: case ir::Op::GatherElements:
      record_indexing(ctx, index, program); break;
    case ir::Op::RandomNormal: case ir::Op::RandomNormalLike: case ir::Op::RandomUniform:
    case ir::Op::RandomUniformLike:
      record_random(ctx, index, program); break;
    default:
      record_elementwise(ctx, index, program); break;
  }
}

// Constants from this size on have one device copy per host storage, shared by every executable
// whose graph holds that storage (a voice's segments at other lengths share the model's weights):
// a new length uploads no weights, and the segment cache holds no copy of them per entry. Keyed
// by address, not content: hashing the constants folded at each new length (the relative-position
// tables, ~1 MB each) cost more than uploading them. The address is safe as a key: every executable
// holding the device copy holds the host storage in its graph, so the address cannot be reused
// while the copy lives. Safe mode keeps its own guarded slots.
constexpr size_t kSharedConstantBytes = size_t{64} << 10;

std::shared_ptr<const DeviceFloats> shared_constant(const Tensor& constant, size_t bytes, int device,
                                                    const std::string& name) {
  const std::string key = "constant" + storage_key(constant) + "|" + std::to_string(bytes) + "|dev" + std::to_string(device);
  return shared_by_key<DeviceFloats>(key, [&] {
    const Tensor t = to_device_repr(constant);
    if (t.nbytes() != bytes)
      throw Error(ErrorCode::Internal, "cuda: constant '" + name + "' has " + std::to_string(t.nbytes()) +
                                           " bytes, its value type needs " + std::to_string(bytes));
    auto d = std::make_shared<DeviceFloats>();
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&d->ptr), bytes), "shared constant '" + name + "'");
    check_cuda(cudaMemcpy(d->ptr, t.raw(), bytes, cudaMemcpyHostToDevice), "upload constant '" + name + "'");
    return d;
  });
}

}  // namespace

CudaExecutable::CudaExecutable(const ir::Graph& graph, const Options& options) : graph_(graph), options_(options) {
  DeviceSetupLock setup(device_setup_mutex());
  try {
    // LOCKSTEP_CUDA_COMPILE_TIMES=1: one stderr line per executable with each compile phase's ms
    // (and the first run's graph capture), to see what a new shape costs (docs/cuda.md).
    compile_times_ = env_is("LOCKSTEP_CUDA_COMPILE_TIMES", "1");
    PhaseClock phases(compile_times_);
    std::string why;
    if (!device_available(&why)) throw Error(ErrorCode::DeviceUnavailable, "cuda: " + why);
    check_cuda(cudaSetDevice(device_), "select device 0");
    ctx_ = std::make_unique<Context>(graph_);
    ctx_->safe = options.safe;
    ctx_->precision = parse_precision(options.precision);
    // conv_f64.cu, measured on a GPU (CudaF64Accumulate; the joe voice, bench/RESULTS.md 2026-12-06).
    // LOCKSTEP_CUDA_F64=0 turns it off (float32 everywhere) for comparisons.
    if (!env_is("LOCKSTEP_CUDA_F64", "0")) ctx_->f64_prefixes = resolve_f64_accumulate_for(graph_, options, "cuda");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "create stream");
    HandleLoan loan(*this);  // cuBLAS and cuDNN for the compile only (handle_pool.h)
    const char* prof = std::getenv("LOCKSTEP_CUDA_PROFILE");
    profile_ = prof && *prof && *prof != '0';
    host_times_ = env_is("LOCKSTEP_CUDA_HOST_TIMES", "1");
    pinned_outputs_ = !env_is("LOCKSTEP_CUDA_PINNED_OUTPUTS", "0");
    capture_first_ = env_is("LOCKSTEP_CUDA_CAPTURE_FIRST", "1");
    eager_nodes_ = env_is("LOCKSTEP_CUDA_EAGER_NODES", "1");
    phases.mark("handles");
    record_programs();
    phases.mark("programs");
    replan();
    phases.mark("replan");
    lay_out();
    phases.mark("layout");
    take_views();
    absorb_consumers();
    fuse_prologues();
    phases.mark("views+fusions");
    upload_constants();
    phases.mark("constants");
    if (compile_times_)
      std::fprintf(stderr, "lockstep cuda compile: %zu nodes, %s, arena %zu bytes (cudaMalloc %.2f ms, pinned staging %.2f ms)\n",
                   graph_.nodes.size(), phases.str().c_str(), arena_bytes_, alloc_ms_, pinned_ms_);
  } catch (...) {
    free_all();
    throw;
  }
}

CudaExecutable::~CudaExecutable() {
  print_profile();
  print_host_times();
  free_all();
}

void CudaExecutable::free_all() noexcept {
  DeviceSetupLock setup(device_setup_mutex());
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  events_.clear();
  if (kernels_begin_) cudaEventDestroy(kernels_begin_);
  if (kernels_end_) cudaEventDestroy(kernels_end_);
  kernels_begin_ = kernels_end_ = nullptr;
  if (done_) cudaEventDestroy(done_);
  done_ = nullptr;
  if (graph_begin_) cudaEventDestroy(graph_begin_);
  if (graph_end_) cudaEventDestroy(graph_end_);
  graph_begin_ = graph_end_ = nullptr;
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (cuda_graph_) cudaGraphDestroy(cuda_graph_);
  graph_exec_ = nullptr;
  cuda_graph_ = nullptr;
  if (profile_exec_) cudaGraphExecDestroy(profile_exec_);
  if (profile_graph_) cudaGraphDestroy(profile_graph_);
  profile_exec_ = nullptr;
  profile_graph_ = nullptr;
  if (stream_) cudaStreamSynchronize(stream_);
  return_handles();
  programs_.clear();  // drops cuDNN descriptors held by the launches
  if (arena_) cudaFree(arena_);
  if (in_stage_) cudaFreeHost(in_stage_);
  if (out_stage_) cudaFreeHost(out_stage_);
  if (broken_host_) cudaFreeHost(broken_host_);
  if (faults_host_) cudaFreeHost(faults_host_);
  faults_host_ = nullptr;
  if (stream_) cudaStreamDestroy(stream_);
  arena_ = in_stage_ = out_stage_ = nullptr;
  broken_host_ = nullptr;
  stream_ = nullptr;
}

bool CudaExecutable::borrow_handles() {
  if (ctx_->cublas) return false;
  const Handles h = acquire_handles(stream_);
  ctx_->cublas = h.cublas;
  ctx_->cudnn = h.cudnn;
  // Pedantic: IEEE float32 everywhere, no TF32 or reduced-precision reductions. The fast modes
  // run every SGEMM (MatMul, Gemm, the ConvTranspose GEMM) on TF32 tensor cores.
  check_cublas(cublasSetMathMode(ctx_->cublas, ctx_->precision == Precision::kFp32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_TF32_TENSOR_OP_MATH),
               "set math mode");
  check_cublas(cublasSetAtomicsMode(ctx_->cublas, CUBLAS_ATOMICS_NOT_ALLOWED), "forbid atomics");
  if (ctx_->workspace_) check_cublas(cublasSetWorkspace(ctx_->cublas, ctx_->workspace_, ctx_->workspace_bytes()), "set workspace");
  return true;
}

void CudaExecutable::return_handles() noexcept {
  if (!ctx_ || (!ctx_->cublas && !ctx_->cudnn)) return;
  release_handles({ctx_->cublas, ctx_->cudnn}, stream_);
  ctx_->cublas = nullptr;
  ctx_->cudnn = nullptr;
}

void CudaExecutable::record_programs() {
  std::map<std::string, std::pair<double, int>> by_op;  // LOCKSTEP_CUDA_COMPILE_TIMES: ms and count per op
  for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
    NodeProgram program;
    program.node = i;
    const auto t0 = std::chrono::steady_clock::now();
    record_node(*ctx_, i, program);
    if (compile_times_) {
      std::string key = ir::op_name(graph_.nodes[static_cast<size_t>(i)].op);
      if (!program.launches.empty()) key += ":" + program.launches.front().kernel.substr(0, 24);
      auto& [ms, count] = by_op[key];
      ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++count;
    }
    programs_.push_back(std::move(program));
  }
  std::string line;
  for (const auto& [op, cost] : by_op)
    if (cost.first >= 0.5) line += " " + op + " " + std::to_string(cost.first).substr(0, 5) + " ms/" + std::to_string(cost.second);
  if (!line.empty()) std::fprintf(stderr, "lockstep cuda programs by op:%s\n", line.c_str());
}

void CudaExecutable::lay_out() {
  const size_t nvalues = graph_.values.size();
  value_bytes_.assign(nvalues, 0);
  std::vector<bool> used(nvalues, false);
  auto use = [&](ir::ValueId v) { if (v != ir::kNoValue) used[static_cast<size_t>(v)] = true; };
  for (const auto& node : graph_.nodes) {
    for (auto v : node.inputs) use(v);
    for (auto v : node.outputs) use(v);
    for (const auto& s : node.epilogue) use(s.operand);
  }
  for (auto v : graph_.inputs) use(v);
  for (auto v : graph_.outputs) use(v);

  const bool safe = options_.safe;
  const auto& plan = graph_.plan;
  size_t cursor = 0;
  std::vector<std::pair<size_t, size_t>> guard_spans;  // (offset, bytes) from the arena base
  // Appends a slot; in safe mode with a canary guard before and right after its bytes, named by
  // what_of() (called only then: a voice segment lays out ~1,500 values at every new length).
  auto add_slot = [&](auto&& what_of, size_t bytes) {
    cursor = align_up(cursor, kAlign);
    std::string what;
    if (safe) {
      what = what_of();
      guard_spans.push_back({cursor, kGuardBytes});
      guard_owner_.push_back("before " + what);
      cursor += kGuardBytes;
    }
    const size_t at = cursor;
    cursor += bytes;
    if (safe) {
      const size_t end = align_up(cursor, kAlign) + kGuardBytes;
      guard_spans.push_back({cursor, end - cursor});
      guard_owner_.push_back("after " + what);
      cursor = end;
    }
    return at;
  };
  auto named = [](const char* what) { return [what] { return std::string(what); }; };

  std::vector<int64_t> value_offset(nvalues, -1);
  std::vector<bool> value_fresh(nvalues, false);
  for (size_t v = 0; v < nvalues; ++v) {
    if (!used[v]) continue;
    const ir::Value& value = graph_.values[v];
    value_bytes_[v] = value_device_bytes(value);
    if (!value.constant.defined()) continue;
    if (!safe && value_bytes_[v] >= kSharedConstantBytes) {
      shared_constants_.emplace_back(v, shared_constant(value.constant, value_bytes_[v], device_, value.name));
      continue;
    }
    value_offset[v] = static_cast<int64_t>(add_slot([&] { return "constant '" + value.name + "'"; }, value_bytes_[v]));
  }
  std::vector<size_t> host_const_offset;
  for (const Tensor& t : ctx_->host_constants_) host_const_offset.push_back(add_slot(named("compile-time constant"), t.nbytes()));

  size_t plan_base = 0;
  if (plan && !safe) {
    cursor = align_up(cursor, kAlign);
    plan_base = cursor;
    cursor += static_cast<size_t>(plan->arena_bytes);
  }
  for (size_t v = 0; v < nvalues; ++v) {
    if (!used[v] || graph_.values[v].constant.defined()) continue;
    auto what = [&] { return "value '" + graph_.values[v].name + "'"; };
    const bool planned = plan && v < plan->offsets.size() && plan->offsets[v] >= 0;
    if (planned && !safe) {
      if (static_cast<size_t>(plan->sizes[v]) < value_bytes_[v])
        throw Error(ErrorCode::Internal, "cuda: the memory plan gives " + what() + " " + std::to_string(plan->sizes[v]) +
                                             " bytes, it needs " + std::to_string(value_bytes_[v]));
      value_offset[v] = static_cast<int64_t>(plan_base + static_cast<size_t>(plan->offsets[v]));
    } else {
      value_offset[v] = static_cast<int64_t>(add_slot(what, value_bytes_[v]));
      value_fresh[v] = true;
    }
  }
  if (!safe && plan) value_fresh.assign(nvalues, false);
  ctx_->need_workspace(kMinWorkspace);
  const size_t workspace_at = add_slot(named("workspace"), ctx_->workspace_bytes());
  const size_t scratch_at = add_slot(named("scratch"), std::max<size_t>(ctx_->scratch_bytes(), 4));
  // Run-time state (device.h): the run's seed, then one IndexFault per indexing node.
  fault_bytes_ = ctx_->index_fault_nodes().size() * sizeof(IndexFault);
  const bool has_state = ctx_->needs_run_seed() || fault_bytes_ > 0;
  const size_t state_at = has_state ? add_slot(named("run-time state"), sizeof(uint64_t) + fault_bytes_) : 0;
  size_t guard_table_at = 0, broken_at = 0;
  if (safe) {
    cursor = align_up(cursor, kAlign);
    guard_table_at = cursor;
    cursor += guard_spans.size() * sizeof(GuardRange);
    cursor = align_up(cursor, kAlign);
    broken_at = cursor;
    cursor += sizeof(uint32_t);
  }
  arena_bytes_ = align_up(cursor, kAlign);
  if (options_.max_memory_bytes > 0 && arena_bytes_ > static_cast<size_t>(options_.max_memory_bytes))
    throw Error(ErrorCode::LimitExceeded, "cuda: the device arena needs " + std::to_string(arena_bytes_) +
                                              " bytes, over the cap of " + std::to_string(options_.max_memory_bytes));
  const auto t_alloc = std::chrono::steady_clock::now();
  const cudaError_t status = cudaMalloc(&arena_, arena_bytes_);
  alloc_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_alloc).count();
  if (status != cudaSuccess) {
    cudaGetLastError();
    arena_ = nullptr;
    throw Error(status == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::DeviceUnavailable,
                "cuda: cannot allocate the device arena of " + std::to_string(arena_bytes_) + " bytes: " + cudaGetErrorString(status));
  }
  auto* base = static_cast<std::byte*>(arena_);
  ctx_->value_ptr_.assign(nvalues, nullptr);
  for (size_t v = 0; v < nvalues; ++v)
    if (value_offset[v] >= 0) ctx_->value_ptr_[v] = base + value_offset[v];
  for (const auto& [v, copy] : shared_constants_) ctx_->value_ptr_[static_cast<size_t>(v)] = copy->ptr;
  for (size_t i = 0; i < host_const_offset.size(); ++i) ctx_->host_constant_ptr_.push_back(base + host_const_offset[i]);
  ctx_->workspace_ = base + workspace_at;
  ctx_->scratch_ = base + scratch_at;
  if (has_state) {
    ctx_->run_seed_ = reinterpret_cast<unsigned long long*>(base + state_at);
    ctx_->index_faults_ = reinterpret_cast<IndexFault*>(base + state_at + sizeof(uint64_t));
  }

  if (safe) {
    for (const auto& [at, bytes] : guard_spans) guards_.push_back({reinterpret_cast<uint64_t>(base + at), bytes});
    guard_table_ = reinterpret_cast<GuardRange*>(base + guard_table_at);
    broken_ = reinterpret_cast<uint32_t*>(base + broken_at);
    // Canaries everywhere first; data regions get their NaN fill at the start of every run.
    check_cuda(cudaMemset(arena_, kCanaryByte, arena_bytes_), "canary fill");
    check_cuda(cudaMemcpy(guard_table_, guards_.data(), guards_.size() * sizeof(GuardRange), cudaMemcpyHostToDevice), "guard table");
    for (size_t v = 0; v < nvalues; ++v)
      if (value_fresh[v]) fresh_.push_back({ctx_->value_ptr_[v], value_bytes_[v]});
    fresh_.push_back({ctx_->workspace_, ctx_->workspace_bytes()});
    fresh_.push_back({ctx_->scratch_, std::max<size_t>(ctx_->scratch_bytes(), 4)});
    check_cuda(cudaMallocHost(reinterpret_cast<void**>(&broken_host_), sizeof(uint32_t)), "pinned canary word");
  }

  // Pinned staging buffers for graph inputs and outputs.
  for (auto v : graph_.inputs) {
    in_offsets_.push_back(in_bytes_);
    in_bytes_ = align_up(in_bytes_ + value_bytes_[static_cast<size_t>(v)], kAlign);
  }
  if (ctx_->needs_run_seed()) {  // the seed travels with the inputs
    seed_stage_offset_ = in_bytes_;
    in_bytes_ = align_up(in_bytes_ + sizeof(uint64_t), kAlign);
  }
  if (fault_bytes_) check_cuda(cudaMallocHost(reinterpret_cast<void**>(&faults_host_), fault_bytes_), "pinned index fault records");
  for (auto v : graph_.outputs) {
    out_offsets_.push_back(out_bytes_);
    out_bytes_ = align_up(out_bytes_ + value_bytes_[static_cast<size_t>(v)], kAlign);
  }
  const auto t_pinned = std::chrono::steady_clock::now();
  check_cuda(cudaMallocHost(&in_stage_, std::max<size_t>(in_bytes_, kAlign)), "pinned input staging (" + std::to_string(in_bytes_) + " bytes)");
  check_cuda(cudaMallocHost(&out_stage_, std::max<size_t>(out_bytes_, kAlign)), "pinned output staging (" + std::to_string(out_bytes_) + " bytes)");
  pinned_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_pinned).count();
}

// The constants lie close together in the arena: they go up as a few host images of the runs
// they form (gaps under kGap bytes copied too: nothing else is in the arena yet), not one
// synchronous copy each (~40 a voice segment).
void CudaExecutable::upload_constants() {
  struct Piece {
    std::byte* dst;
    const Tensor* src;
  };
  std::vector<Tensor> converted;  // to_device_repr copies (float64 constants), alive until copied
  converted.reserve(graph_.values.size() + ctx_->host_constants_.size());
  std::vector<Piece> pieces;
  for (size_t v = 0; v < graph_.values.size(); ++v) {
    const ir::Value& value = graph_.values[v];
    if (!value.constant.defined() || !ctx_->value_ptr_[v] || is_shared_constant(static_cast<ir::ValueId>(v))) continue;
    converted.push_back(to_device_repr(value.constant));
    const Tensor& t = converted.back();
    if (t.nbytes() != value_bytes_[v])
      throw Error(ErrorCode::Internal, "cuda: constant '" + value.name + "' has " + std::to_string(t.nbytes()) +
                                           " bytes, its value type needs " + std::to_string(value_bytes_[v]));
    if (t.nbytes()) pieces.push_back({static_cast<std::byte*>(ctx_->value_ptr_[v]), &t});
  }
  for (size_t i = 0; i < ctx_->host_constants_.size(); ++i) {
    const Tensor& t = ctx_->host_constants_[i];
    if (t.nbytes()) pieces.push_back({static_cast<std::byte*>(ctx_->host_constant_ptr_[i]), &t});
  }
  std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.dst < b.dst; });
  // Safe mode's gaps hold canaries (lay_out filled them): there only touching constants merge.
  const size_t kGap = options_.safe ? 0 : size_t{64} << 10;
  std::vector<std::byte> image;
  for (size_t first = 0; first < pieces.size();) {
    size_t last = first;
    std::byte* end = pieces[first].dst + pieces[first].src->nbytes();
    while (last + 1 < pieces.size() && pieces[last + 1].dst >= end && pieces[last + 1].dst <= end + kGap) {
      ++last;
      end = std::max(end, pieces[last].dst + pieces[last].src->nbytes());
    }
    std::byte* base = pieces[first].dst;
    image.assign(static_cast<size_t>(end - base), std::byte{0});
    for (size_t k = first; k <= last; ++k)
      std::memcpy(image.data() + (pieces[k].dst - base), pieces[k].src->raw(), pieces[k].src->nbytes());
    check_cuda(cudaMemcpy(base, image.data(), image.size(), cudaMemcpyHostToDevice), "upload constants");
    first = last + 1;
  }
  check_cuda(cudaDeviceSynchronize(), "constant upload");
}

void CudaExecutable::plant_out_of_bounds_write(const std::string& node_name) {
  const int index = graph_.find_node(node_name);
  if (index < 0) throw Error(ErrorCode::InvalidArgument, "cuda: no node '" + node_name + "' to plant a write in");
  const ir::ValueId out = graph_.nodes[static_cast<size_t>(index)].outputs[0];
  const size_t bytes = value_bytes_[static_cast<size_t>(out)];
  Context* c = ctx_.get();
  programs_[static_cast<size_t>(index)].launches.push_back({"test_planted_out_of_bounds_write", [c, out, bytes](cudaStream_t s) {
    launch_planted_write(static_cast<std::byte*>(c->ptr(out)) + bytes, s);
  }});
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (cuda_graph_) cudaGraphDestroy(cuda_graph_);
  graph_exec_ = nullptr;
  cuda_graph_ = nullptr;
}

int views_taken(const Executable& executable) {
  const auto* cuda = dynamic_cast<const CudaExecutable*>(&executable);
  if (!cuda) throw Error(ErrorCode::InvalidArgument, "views_taken needs a CUDA executable");
  return cuda->views_taken();
}

int consumers_absorbed(const Executable& executable) {
  const auto* cuda = dynamic_cast<const CudaExecutable*>(&executable);
  if (!cuda) throw Error(ErrorCode::InvalidArgument, "consumers_absorbed needs a CUDA executable");
  return cuda->consumers_absorbed();
}

int64_t planned_arena_bytes(const Executable& executable) {
  const auto* cuda = dynamic_cast<const CudaExecutable*>(&executable);
  if (!cuda) throw Error(ErrorCode::InvalidArgument, "planned_arena_bytes needs a CUDA executable");
  return cuda->planned_arena_bytes();
}

int prologues_fused(const Executable& executable) {
  const auto* cuda = dynamic_cast<const CudaExecutable*>(&executable);
  if (!cuda) throw Error(ErrorCode::InvalidArgument, "prologues_fused needs a CUDA executable");
  return cuda->prologues_fused();
}

void plant_out_of_bounds_write(Executable& executable, const std::string& node_name) {
  auto* cuda = dynamic_cast<CudaExecutable*>(&executable);
  if (!cuda) throw Error(ErrorCode::InvalidArgument, "plant_out_of_bounds_write needs a CUDA executable");
  cuda->plant_out_of_bounds_write(node_name);
}

}  // namespace lockstep::cuda
