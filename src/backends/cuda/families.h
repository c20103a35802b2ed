// The op families of the CUDA backend, one .cu file each (mirroring the CPU backend), and the
// device helpers they share (the host ones defined in helpers.cpp). A record_* function appends a
// node's launches to `program`.
#pragma once

#include <optional>
#include <string>

#include "backends/cuda/device.h"

namespace lockstep::cuda {

inline constexpr int kMaxRank = 8;

// elementwise.cu: unary/binary float and int64/int32 math (Erf, Softplus, Ceil, Floor, Abs,
// Reciprocal among them, also as epilogue steps), Clip, Cast, Equal, Where, and epilogues.
void record_elementwise(Context& ctx, int node_index, NodeProgram& program);
// Applies `bias` (per output channel, axis 1; kNoValue for none) and the node's epilogue in place
// on outputs[0] in one kernel. Appends nothing when both are empty.
// `skip_steps` leading epilogue steps were already applied (e.g. a residual Add fused into cuDNN).
void record_epilogue(Context& ctx, int node_index, NodeProgram& program, ir::ValueId bias = ir::kNoValue,
                     size_t skip_steps = 0);
// Like record_epilogue, but reads the node's raw result from a half (src_kind 1) or bfloat16 (2)
// tensor at scratch + src_scratch_offset (contiguous, the output's shape); always appends a launch.
void record_epilogue_from_reduced(Context& ctx, int node_index, NodeProgram& program, ir::ValueId bias, int src_kind,
                                  size_t src_scratch_offset);
std::optional<std::string> elementwise_unsupported(const ir::Graph& graph, const ir::Node& node);

// logical.cu: Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not (bool results).
void record_logical(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> logical_unsupported(const ir::Graph& graph, const ir::Node& node);

// reduce.cu: ReduceMean/Sum/Max/Min and CumSum, in a fixed order (no atomics).
void record_reduce(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> reduce_unsupported(const ir::Graph& graph, const ir::Node& node);

// indexing.cu: GatherND, ScatterND, GatherElements; bad run-time indices become IndexFaults.
void record_indexing(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> indexing_unsupported(const ir::Graph& graph, const ir::Node& node);

// random.cu: RandomNormal(Like), RandomUniform(Like), the host generator's bits on the device.
void record_random(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> random_unsupported(const ir::Graph& graph, const ir::Node& node);

// data_movement.cu: Slice, Split, Concat, Reshape, Flatten, Transpose, Unsqueeze, Squeeze, Pad,
// Gather, Expand.
void record_data_movement(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> data_movement_unsupported(const ir::Graph& graph, const ir::Node& node);

// shape_ops.cu: Shape, ConstantOfShape, Range (computed at compile time).
void record_shape_op(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> shape_op_unsupported(const ir::Graph& graph, const ir::Node& node);

// conv.cu: Conv, ConvTranspose through cuDNN (deterministic algorithms, FMA math only).
void record_conv(Context& ctx, int node_index, NodeProgram& program);
std::optional<std::string> conv_unsupported(const ir::Graph& graph, const ir::Node& node);
// Whether a Conv runs as one pedantic SGEMM per batch item (1x1, group 1, stride 1, no pads,
// strict fp32; LOCKSTEP_CUDA_CONV1X1_GEMM=0 keeps cuDNN).
bool conv1x1_by_gemm(const ir::Graph& graph, const ir::Node& node, Precision precision);

// conv_narrow.cu: a 1-D Conv with at most 4 output channels (group 1, stride 1, float32; strict
// fp32 or tf32, computed in fp32 either way) as a direct FMA kernel, bias fused, then the epilogue.
// LOCKSTEP_CUDA_CONV_NARROW=0 leaves such convs to the tensor-core path and cuDNN.
bool conv_narrow_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision);
void record_conv_narrow(Context& ctx, int node_index, NodeProgram& program);

// conv_depthwise.cu: a depthwise 1-D Conv (group = C_in, C_out a multiple of C_in; strict fp32 or
// tf32, computed in fp32) as a direct FMA kernel, bias fused, then the epilogue.
// LOCKSTEP_CUDA_CONV_DEPTHWISE=0 leaves such convs to cuDNN.
bool conv_depthwise_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision);
void record_conv_depthwise(Context& ctx, int node_index, NodeProgram& program);

// conv_ffma.cu: a 1-D Conv (strict fp32, group 1, stride 1, constant weights) as an FFMA implicit
// GEMM with the bias and up to four epilogue steps in its store. Kernel 1 (the flows' 1x1 convs,
// which took a cuBLAS SGEMM and a bias kernel; not with LOCKSTEP_CUDA_CONV_TC_K1=1); more taps
// with LOCKSTEP_CUDA_CONV_FFMA=all, or up to LOCKSTEP_CUDA_CONV_FFMA_MAX_OUT outputs (N*C_out*T_out),
// ahead of the tensor-core path (A/B timing); LOCKSTEP_CUDA_CONV_FFMA=0 turns it off.
bool conv_ffma_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision);
void record_conv_ffma(Context& ctx, int node_index, NodeProgram& program);
int conv_ffma_recorded_count();  // test hook: Conv nodes this process recorded on this path

// matmul.cu: MatMul, Gemm (cuBLAS, pedantic math) and Softmax.
void record_matmul(Context& ctx, int node_index, NodeProgram& program);

// conv_f64.cu: Options::f64_accumulate's nodes in strict fp32 mode — a group-1 1-D Conv, a group-1
// 1-D ConvTranspose (a direct kernel) and a MatMul of uniform batch strides, computed in float64
// (cuBLAS DGEMM) and rounded once.
bool conv_f64_eligible(const Context& ctx, const ir::Node& node);
void record_conv_f64(Context& ctx, int node_index, NodeProgram& program);
bool convt_f64_eligible(const Context& ctx, const ir::Node& node);
void record_convt_f64(Context& ctx, int node_index, NodeProgram& program);
void record_matmul_f64(Context& ctx, const ir::Node& node, NodeProgram& program, int64_t m, int64_t n, int64_t k,
                       int64_t count, int64_t stride_a, int64_t stride_b);
std::optional<std::string> matmul_unsupported(const ir::Graph& graph, const ir::Node& node);

// A strided copy of `rank` dims: dst[base + sum(c*dst_strides)] = src[base + sum(c*src_strides)].
struct CopyParams {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t src_strides[kMaxRank] = {};
  int64_t dst_strides[kMaxRank] = {};
  const void* src = nullptr;  // already offset to the first element read
  void* dst = nullptr;        // already offset to the first element written
};
void launch_copy(const CopyParams& params, size_t elem_size, cudaStream_t stream);

// Constant / reflect / edge padding of a float or integer tensor (rank ≤ kMaxRank).
struct PadParams {
  int rank = 0;
  int mode = 0;  // 0 constant, 1 reflect, 2 edge
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t pad_begin[kMaxRank] = {};
  double value = 0.0;
  bool int32 = false;  // 4-byte elements are int32 (else float32): how `value` is stored
  const void* src = nullptr;
  void* dst = nullptr;
};
void launch_pad(const PadParams& params, size_t elem_size, cudaStream_t stream);

// Broadcast strides (elements) of `shape` read at every index of `out` (numpy rules).
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out);
// Drops size-1 dims and merges adjacent dims that every stride set walks contiguously.
void collapse_dims(std::vector<int64_t>& dims, std::vector<std::vector<int64_t>*> strides);
// The node's constant int64 input `index` as a vector (empty when omitted).
std::vector<int64_t> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t index);
// These three read the graph's readers and producers from `facts` (Context::channel_facts()).
// The node whose outputs[0] is `v` when `v` is no graph output and is read exactly once in the
// graph (node inputs and epilogue operands, each reference counted): a producer whose kernel a
// reader can absorb (PrologueFusion). -1 otherwise.
int sole_reader_producer(const ir::Graph& graph, const backends::ChannelFacts& facts, ir::ValueId v);
// How many times the graph reads `v` (node inputs and epilogue operands, each reference counted);
// -1 when `v` is a graph output.
int reader_count(const backends::ChannelFacts& facts, ir::ValueId v);
// The node whose outputs[0] is `v` when `v` is no graph output and every read of it is as input 0
// of a Conv (several Convs may read it, each once): a producer all its readers can absorb. -1 otherwise.
int conv_input_producer(const ir::Graph& graph, const backends::ChannelFacts& facts, ir::ValueId v);

}  // namespace lockstep::cuda
