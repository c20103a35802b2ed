// CPU kernels: one object per IR node, prepared at compile time (shapes, strides, library
// primitives, raw pointers into the arena and the converted constants); run() only computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dnnl {
struct engine;
struct stream;
}  // namespace dnnl

namespace lockstep::cpu {

class Profile;

// Bytes one element of a value occupies in the CPU backend: floating values are float32.
size_t storage_size(DType dtype);
// The dtype the CPU backend stores a value as (Float64 -> Float32).
DType storage_dtype(DType dtype);
// Row-major element strides of a shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);
// Strides of `operand` broadcast (numpy rules) to `out`: 0 on broadcast dims, out's rank.
std::vector<int64_t> broadcast_strides(const Shape& operand, const Shape& out);

// Scratch shared by all kernels of one executable (kernels run one after the other).
struct Workspace {
  std::byte* data = nullptr;
  size_t bytes = 0;
};

// What a kernel factory sees: the graph, where every value lives, the library handles.
struct CompileContext {
  const ir::Graph& graph;
  std::vector<void*> pointers;  // per ValueId: arena slot or converted constant; null for none
  int threads = 1;
  dnnl::engine* engine = nullptr;
  dnnl::stream* stream = nullptr;
  Workspace* workspace = nullptr;  // filled after every kernel reported its need
  size_t workspace_bytes = 0;      // kernels raise this to what they need
  Profile* profile = nullptr;  // set when LOCKSTEP_CPU_PROFILE asks for per-part timing
  std::vector<char> nwc{};     // per ValueId: stored channels-last (layout.h); empty = none
  std::vector<char> view{};    // per ValueId: a Slice output addressed inside its input (views.h)
  std::vector<int64_t> pitch{};  // per ValueId: elements between a strided view's stored rows; 0 dense
  const uint64_t* run_seed = nullptr;  // the current run's RunOptions::seed (random kernels read it in run())
  std::vector<std::string> f64_prefixes{};  // Options::f64_accumulate, resolved

  // Whether `node` (a Conv or MatMul) accumulates in float64: its name starts with one of the prefixes.
  bool accumulates_f64(const ir::Node& node) const;

  bool is_nwc(ir::ValueId id) const { return id != ir::kNoValue && static_cast<size_t>(id) < nwc.size() && nwc[static_cast<size_t>(id)]; }
  // The shape `node` addresses value `id` by: the channels-last view when the node's output is
  // stored channels-last (all its operands are then channels-last or layout-invariant).
  Shape view_shape(const ir::Node& node, ir::ValueId id) const;

  bool is_view(ir::ValueId id) const { return id != ir::kNoValue && static_cast<size_t>(id) < view.size() && view[static_cast<size_t>(id)]; }
  int64_t pitch_of(ir::ValueId id) const {
    return id != ir::kNoValue && static_cast<size_t>(id) < pitch.size() ? pitch[static_cast<size_t>(id)] : 0;
  }

  void* ptr(ir::ValueId id) const { return id == ir::kNoValue ? nullptr : pointers.at(static_cast<size_t>(id)); }
  float* fptr(ir::ValueId id) const { return static_cast<float*>(ptr(id)); }
  const ir::Value& value(ir::ValueId id) const { return graph.value(id); }
  // Constant values of parameter inputs (shapes, axes, pads...) as int64; throws naming the node.
  std::vector<int64_t> const_ints(const ir::Node& node, size_t input) const;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run() = 0;
  // Called once after the shared workspace is allocated (kernels that use it bind views here).
  virtual void bind_workspace(std::byte* base) {}
  // What computes this node (`lockstep info --kernels`, the no-reference-implementation test):
  // "lockstep" for the plain loops, else e.g. "onednn:jit:avx2", "lockstep:winograd:avx2".
  virtual std::string implementation() const { return "lockstep"; }
};

using KernelPtr = std::unique_ptr<Kernel>;

// Family factories (conv.cpp, matmul.cpp, elementwise.cpp, data_movement.cpp, shape_ops.cpp).
KernelPtr make_conv_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_matmul_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_elementwise_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_data_movement_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_shape_kernel(CompileContext& ctx, const ir::Node& node);
// Reductions and CumSum (reduce.cpp), NonZero-free indexing (indexing.cpp), random ops (random.cpp).
KernelPtr make_reduce_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_indexing_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_random_kernel(CompileContext& ctx, const ir::Node& node);
// Comparisons and logical ops (logical.cpp); Clip and integer Abs/Neg/Relu (math.cpp).
KernelPtr make_logical_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_clip_kernel(CompileContext& ctx, const ir::Node& node);
KernelPtr make_int_unary_kernel(CompileContext& ctx, const ir::Node& node);
// Wraps a kernel so that the node's epilogue runs after it (for families that do not fuse it).
KernelPtr with_epilogue(CompileContext& ctx, const ir::Node& node, KernelPtr inner);

KernelPtr make_kernel(CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
