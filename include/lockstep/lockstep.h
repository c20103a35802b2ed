// lockstep's public API: load a model, compile it for a backend, run it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/error.h"
#include "lockstep/tensor.h"

namespace lockstep {

namespace ir {
class Graph;
struct Node;
}  // namespace ir

class HostScratch;

struct Options {
  int threads = 0;                            // CPU threads; 0 = all hardware threads
  std::map<std::string, Shape> input_shapes;  // binds symbolic or overrides input dims
  int opt_bisect_limit = -1;                  // stop after N pass applications; -1 = all
  bool print_after_all = false;               // dump the IR to stderr after each pass application
  bool fuse = true;                           // elementwise epilogue fusion
  std::vector<std::string> observe;           // ONNX node names whose values stay kernel boundaries
  bool safe = false;                          // GPU safe mode: sync, NaN fill, canaries
  int64_t max_memory_bytes = 0;               // cap on the planned arena; 0 = none
  // Convolution/matmul arithmetic on cuda: "fp32" (strict IEEE float32), "tf32", "fp16", "bf16"
  // (reduced precision, fast modes; docs/cuda.md). The cpu and reference backends ignore it.
  std::string precision = "fp32";
  // ONNX node-name prefixes whose Conv and MatMul nodes accumulate in float64 and round once
  // (cpu; docs/accuracy.md). nullopt: the model's default (default_f64_accumulate: a Piper
  // voice's text encoder, else none); an empty list: none.
  std::optional<std::vector<std::string>> f64_accumulate;
  // Internal, set by the run-time shape stage (src/dynamic): host memory that the cpu executables
  // of one dynamic executable's segments share for their arena and workspace, since they run one
  // after another (src/core/host_scratch.h). Null: each executable has its own.
  std::shared_ptr<HostScratch> host_scratch;
};

class Model {
 public:
  static Model load(const std::string& path);  // ONNX file; throws Error
  static Model from_graph(ir::Graph graph);
  const ir::Graph& graph() const { return *graph_; }

 private:
  std::shared_ptr<const ir::Graph> graph_;
};

// Receives the value of every kernel boundary (each node's outputs, after its epilogue).
using TapFn = std::function<void(const ir::Node& node, int output_index, const Tensor& value)>;

// Test-only fault injection (never set by the CLI or a normal run): after each node the backend
// hands `fault_for_testing` a host copy of each output and writes the (possibly altered) copy back.
using FaultFn = std::function<void(const ir::Node& node, int output_index, Tensor& value)>;

struct RunOptions {
  TapFn tap;                  // empty: no taps
  FaultFn fault_for_testing;  // empty: no faults (the only case outside tests)
  // Seeds the random ops (RandomNormal, ...) that have no `seed` attribute; the same seed gives
  // the same bits on every backend (src/core/random.h, docs/ops.md "Random numbers").
  uint64_t seed = 0;
};

// An output left in device memory by Executable::run_on_device: `data` is a pointer on the
// backend's device `device`, freed when the last reference goes.
struct DeviceTensor {
  DType dtype = DType::Float32;
  Shape shape;
  int device = 0;
  std::shared_ptr<void> data;
};

// A value that one run left in its backend's device memory for a later executable of the same
// backend to read without a trip through the host (the run-time shape stage's segments,
// docs/dynamic-shapes.md). It stays valid while the executable that made it lives and until that
// executable runs again.
class ResidentValue {
 public:
  virtual ~ResidentValue() = default;
  // A host copy, as run() would have returned it (waits for the producing run).
  virtual Tensor download() const = 0;
  virtual size_t nbytes() const = 0;
};

// An input or output of Executable::run_resident: on the host (`host`) or on the device (`resident`).
struct RunValue {
  Tensor host;
  std::shared_ptr<const ResidentValue> resident;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Inputs in graph-input order; checked for count, dtype and shape.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options = {}) = 0;
  // run() whose inputs may be values this backend left on its device, and whose output i may stay
  // there when to_host[i] is 0: no copy, and on cuda no host synchronisation unless some output
  // goes to the host. A backend without a device runs run(): every output comes back on the host.
  virtual std::vector<RunValue> run_resident(const std::vector<RunValue>& inputs, const std::vector<char>& to_host,
                                             const RunOptions& options = {}) {
    (void)to_host;
    std::vector<Tensor> host;
    for (const RunValue& v : inputs) host.push_back(v.resident ? v.resident->download() : v.host);
    std::vector<RunValue> out;
    for (Tensor& t : run(host, options)) out.push_back({std::move(t), nullptr});
    return out;
  }
  // The same run, its outputs also copied into device buffers of their own (ready: the run has
  // synchronized) for a consumer on the GPU (DLPack); nullopt where the backend has no device.
  virtual std::optional<std::vector<DeviceTensor>> run_on_device(const std::vector<Tensor>& inputs,
                                                                 const RunOptions& options = {}) {
    return std::nullopt;
  }
  virtual const ir::Graph& graph() const = 0;  // the compiled (simplified, fused, planned) graph
  virtual std::string backend_name() const = 0;
  // Device time of the last run's kernels, without its host<->device copies, where the backend
  // measures it (cuda, graph replay); nullopt elsewhere. For comparing with peers timed on-device.
  virtual std::optional<double> last_device_ms() const { return std::nullopt; }
  // What computes each node of graph(), in node order (`lockstep info --kernels`): e.g.
  // "onednn:jit:avx2", "lockstep:winograd:avx2", "onednn:sgemm". Empty where a backend does not
  // say.
  virtual std::vector<std::string> kernel_implementations() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // False with a reason when the backend cannot run here (no GPU, no driver).
  virtual bool available(std::string* why_not = nullptr) const = 0;
  // A reason when the backend cannot run this node, nullopt when it can.
  virtual std::optional<std::string> unsupported_reason(const ir::Graph& graph, const ir::Node& node) const = 0;
  // `graph` has been through passes::run_pipeline (shapes known, planned, unless plans_memory()
  // and the caller left the plan out).
  virtual std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const = 0;
  // True when compile() makes its own memory plan from the graph (the CUDA executor's in-place
  // plan): a run-time shape segment then skips the pipeline's plan, which would be redone.
  virtual bool plans_memory() const { return false; }
};

// "reference", "cpu", "cuda"; nullptr for an unknown name.
const Backend* find_backend(std::string_view name);
std::vector<const Backend*> all_backends();  // in that order, available or not

// Binds input shapes and runs the pass pipeline (shape inference, folding, fusion, planning).
ir::Graph prepare(const Model& model, const Options& options);
// The node-name prefixes Options::f64_accumulate stands for on `graph` (its default when unset).
std::vector<std::string> default_f64_accumulate(const ir::Graph& graph);
std::vector<std::string> resolve_f64_accumulate(const ir::Graph& graph, const Options& options);
// Whether a node of this name is one of the prefixes' (the backends ask it of Conv and MatMul nodes).
bool f64_accumulates(const std::vector<std::string>& prefixes, std::string_view node_name);
// The CLI flag --f64-accumulate's values as the option: none given -> nullopt (the model's
// default), "none" -> no node, else the prefixes.
std::optional<std::vector<std::string>> f64_accumulate_from_flag(const std::vector<std::string>& values);
// prepare + backend compile. Throws Error naming the node when the backend cannot run it.
std::unique_ptr<Executable> compile(const Model& model, std::string_view backend, const Options& options = {});

}  // namespace lockstep
