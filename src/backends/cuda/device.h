// The CUDA backend's compile/run context: one stream, library handles, value pointers into the
// device arena, and the per-node launch lists the executor replays (or captures as a CUDA graph).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/channel_consumers.h"
#include "backends/in_place_plan.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::cuda {

// Throws Error(Internal, or OutOfMemory / DeviceUnavailable where the code says so).
void check_cuda(cudaError_t status, const std::string& what, const std::string& node = {});
void check_cublas(cublasStatus_t status, const std::string& what, const std::string& node = {});
void check_cudnn(cudnnStatus_t status, const std::string& what, const std::string& node = {});

// Held by everything that allocates or frees device or pinned memory, creates or destroys a
// stream or library handle, or synchronises the device (compiling and destroying executables), and
// by every graph capture: such a call from another thread invalidates a capture in progress, so
// the two never overlap (a batch's lanes run executables on several threads). Recursive: a
// compile creates handles and uploads weights under it.
std::recursive_mutex& device_setup_mutex();
using DeviceSetupLock = std::lock_guard<std::recursive_mutex>;

// The device returns: false with the reason when no usable CUDA device is present.
bool device_available(std::string* why_not);

// Bytes per element of a value on the device: floating values are float32, bool is one byte.
size_t device_elem_size(DType dtype);
size_t value_device_bytes(const ir::Value& value);  // numel x device_elem_size
DType device_dtype(DType dtype);  // Float64 -> Float32, others unchanged
// A host tensor in the device representation of its value (float64 -> float32).
inline Tensor to_device_repr(const Tensor& t) { return t.dtype() == DType::Float64 ? t.to(DType::Float32) : t; }

// One kernel (or library call) of a node, in execution order.
struct Launch {
  std::string kernel;                        // named in safe-mode reports
  std::function<void(cudaStream_t)> fn;      // enqueues work on the stream; never synchronizes
  // Node-by-node runs (taps, faults, safe mode) and graph replay can run different launches of a
  // node: a fused prologue replaces its producer's kernel in the graph only (same bits either
  // way). A plain first run streams the graph's launches without capturing them.
  enum class When : unsigned char { kAlways, kEagerOnly, kGraphOnly } when = When::kAlways;
  bool in_graph() const { return when != When::kEagerOnly; }
  bool in_eager() const { return when != When::kGraphOnly; }
};

// A node that can read its unary producer's input and apply the producer itself (graph replay
// only): a Conv and its LeakyRelu (opt-in), an element-wise kernel and the producer of an operand.
// Recorded with both launches; the executor keeps the fused one only where no node from the
// producer to the consumer writes over `source` (known once the arena is laid out).
struct PrologueFusion {
  int producer = -1, consumer = -1;  // node indices
  ir::ValueId source = ir::kNoValue;   // the producer's input
  size_t plain = 0, fused = 0;         // launch indices in the consumer's program
  bool disabled = false;               // set by the executor when an Absorption took either node
};

// A producer whose graph-replay launch also computes readers of its output (consumers absorbed:
// the WN gate in the split conv's merge, the residual and skip Adds in the 1x1 conv's store).
// Recorded with both launches; the executor keeps the fused one only where writing `writes` at
// the producer's time is safe (known once the arena is laid out): no other launch up to the last
// absorbed node touches their bytes, and they overlap nothing the fused launch reads except an
// element-wise in-place pair. The absorbed nodes then run in eager runs only.
struct Absorption : backends::EarlyAccess {  // producer, absorbed, writes, reads, in-place pairs
  size_t plain = 0, fused = 0;        // launch indices in the producer's program
};

struct NodeProgram {
  int node = -1;
  std::vector<Launch> launches;
};

// The first out-of-range index a node's kernel met in this run (GatherND, ScatterND,
// GatherElements): position ~0 when none. Kernels skip the bad element (no wild access) and
// atomicMin the position (the first in index order, whatever the schedule); a one-thread kernel
// then records the index and its dim. The executor reads the records back with the outputs and
// throws the cpu's error for the first node that has one (ir::checked_index).
struct IndexFault {
  unsigned long long position;
  long long index;
  long long dim;
};

// Options.precision: kFp32 is strict IEEE float32 (FMA math, pedantic cuBLAS); the others are the
// fast modes (tf32 tensor cores; fp16/bf16 convolution inputs and weights, float accumulation).
enum class Precision { kFp32, kTf32, kFp16, kBf16 };
Precision parse_precision(const std::string& name);  // throws InvalidArgument for an unknown name

class Context {
 public:
  explicit Context(const ir::Graph& graph) : graph_(graph) {}
  const ir::Graph& graph() const { return graph_; }
  // The graph's readers and producers for the channel-consumer searches, made at the first ask.
  const backends::ChannelFacts& channel_facts() const {
    if (!channel_facts_) channel_facts_ = std::make_unique<backends::ChannelFacts>(graph_);
    return *channel_facts_;
  }

  // Device pointer of a value (valid once the executor has laid out the arena).
  void* ptr(ir::ValueId v) const { return value_ptr_.at(static_cast<size_t>(v)); }
  float* fptr(ir::ValueId v) const { return static_cast<float*>(ptr(v)); }

  // Record-time requests, resolved when the arena is laid out.
  void need_workspace(size_t bytes) { workspace_bytes_ = std::max(workspace_bytes_, bytes); }
  void need_scratch(size_t bytes) { scratch_bytes_ = std::max(scratch_bytes_, bytes); }
  // A tensor computed on the host at compile time (shape ops); returns its index.
  int add_host_constant(Tensor t) {
    host_constants_.push_back(std::move(t));
    return static_cast<int>(host_constants_.size() - 1);
  }
  void* host_constant_ptr(int index) const { return host_constant_ptr_.at(static_cast<size_t>(index)); }

  // Run-time state in the arena, written by the executor before the kernels of every run: the
  // run's RunOptions::seed (the random ops read it on the device, so that a captured graph draws
  // each run's noise), and one IndexFault per indexing node that reads run-time indices.
  void need_run_seed() { needs_run_seed_ = true; }
  bool needs_run_seed() const { return needs_run_seed_; }
  const unsigned long long* run_seed() const { return run_seed_; }
  int add_index_fault(int node_index) {
    index_fault_nodes_.push_back(node_index);
    return static_cast<int>(index_fault_nodes_.size() - 1);
  }
  const std::vector<int>& index_fault_nodes() const { return index_fault_nodes_; }
  IndexFault* index_fault(int slot) const { return index_faults_ + slot; }

  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  void* scratch() const { return scratch_; }
  size_t scratch_bytes() const { return scratch_bytes_; }

  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  bool safe = false;
  Precision precision = Precision::kFp32;
  std::vector<std::string> f64_prefixes;  // Options::f64_accumulate, resolved (conv_f64.cu)
  // Whether `node` (a Conv or MatMul) is to accumulate in float64: its name starts with a prefix.
  bool accumulates_f64(const ir::Node& node) const { return f64_accumulates(f64_prefixes, node.name); }

  std::vector<PrologueFusion> prologues;  // recorded by the Conv and element-wise paths
  std::vector<Absorption> absorptions;    // recorded by the tensor-core and FFMA conv paths

  // Set by the executor's layout.
  std::vector<void*> value_ptr_;
  std::vector<Tensor> host_constants_;
  std::vector<void*> host_constant_ptr_;
  void* workspace_ = nullptr;
  void* scratch_ = nullptr;
  unsigned long long* run_seed_ = nullptr;
  IndexFault* index_faults_ = nullptr;

 private:
  bool needs_run_seed_ = false;
  std::vector<int> index_fault_nodes_;
  const ir::Graph& graph_;
  mutable std::unique_ptr<backends::ChannelFacts> channel_facts_;
  size_t workspace_bytes_ = 0;
  size_t scratch_bytes_ = 0;
};

// Whether environment variable `name` is set to exactly `value` (the backend's A/B switches,
// read when a graph is compiled).
inline bool env_is(const char* name, const char* value) {
  const char* env = std::getenv(name);
  return env && std::strcmp(env, value) == 0;
}

// Threads per block for the element-wise style kernels, and a grid size for n elements.
inline constexpr int kBlock = 256;
inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;  // grid-stride loops cover the rest
  return static_cast<unsigned>(blocks);
}

// Contiguous row-major strides (in elements).
std::vector<int64_t> contiguous_strides(const Shape& shape);

// A device copy of floats prepared on the host at compile time (a kernel's weight layout); freed
// with the last launch that holds it.
struct DeviceFloats {
  float* ptr = nullptr;
  DeviceFloats() = default;
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  ~DeviceFloats();
};
std::shared_ptr<DeviceFloats> upload_floats(const std::vector<float>& host, const std::string& what, const std::string& node);

// A host constant's identity in the keys of process-wide device copies (shared_by_key): its
// storage's address, bytes and dtype; no hashing (SHA-256 of a voice's weights cost ~1 ms a conv
// at every new length). Safe as a key: an executable holding such a copy holds the storage in its
// graph, which outlives its programs, so the address is not reused while the copy lives.
std::string storage_key(const Tensor& constant);

}  // namespace lockstep::cuda
