// The op families of the Vulkan backend, one .cpp each (mirroring cpu/ and cuda/), each a set of
// compute shaders in shaders/. A record_* function appends a node's dispatches to `program`; an
// *_unsupported function says why the family cannot run a node (nullopt when it can).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/vulkan/program.h"

namespace lockstep::vulkan {

// elementwise.cpp (ew_program.comp): Add, Sub, Mul, Div with broadcasting; Tanh, Sigmoid, Relu,
// LeakyRelu, Exp, Neg, Sqrt, Abs, Reciprocal, Floor, Ceil, Clip; fused epilogues of those.
std::optional<std::string> elementwise_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_elementwise(Context& ctx, int node_index, NodeProgram& program);
// The node's epilogue in place on outputs[0] (nothing when it has none).
void record_epilogue(Context& ctx, int node_index, NodeProgram& program);
// Whether `op` can be an epilogue step here; the reason when not.
std::optional<std::string> epilogue_step_unsupported(ir::Op op);
// Pow's exponent must be a constant of integral values |n| <= 64 or 0.5 (float32).
std::optional<std::string> pow_exponent_unsupported(const ir::Graph& graph, ir::ValueId exponent);

// conv.cpp (conv.comp, conv_transpose.comp): Conv and ConvTranspose, 1-D and 2-D, any strides,
// dilations, pads and groups.
std::optional<std::string> conv_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_conv(Context& ctx, int node_index, NodeProgram& program);

// matmul.cpp (matmul.comp, softmax.comp): MatMul, Gemm, Softmax.
std::optional<std::string> matmul_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_matmul(Context& ctx, int node_index, NodeProgram& program);

// data_movement.cpp (copy.comp, pad.comp, fill.comp): Slice, Split, Concat, Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Transpose, Expand, Pad, ConstantOfShape.
std::optional<std::string> data_movement_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_data_movement(Context& ctx, int node_index, NodeProgram& program);
bool is_data_movement(ir::Op op);
// out = src, element for element (both contiguous, the same shape).
void record_dense_copy(Context& ctx, NodeProgram& program, const ir::Node& node, ir::ValueId src, ir::ValueId dst);

// logical.cpp (typed_ew.comp, pow.comp): Cast, comparisons, And/Or/Xor/Not, Where, the int32/int64
// forms of Add/Sub/Mul/Div/Neg/Abs/Relu, and the Pow ew_program cannot take; any element type
// (integers in int64: shaderInt64; pow.comp in double: shaderFloat64).
bool is_typed_elementwise(const ir::Graph& graph, const ir::Node& node);
// Nodes whose kernels report bad input values (out-of-range indices, integer division by zero)
// through an error word: indexing, integer Div.
bool checks_values(const ir::Graph& graph, const ir::Node& node);
std::optional<std::string> typed_elementwise_unsupported(const ir::Graph& graph, const ir::Node& node, bool int64, bool float64);
void record_typed_elementwise(Context& ctx, int node_index, NodeProgram& program);
// The element type code (TY_* of params.h) the typed kernels specialize on.
int32_t type_code(DType t);

// reduce.cpp (reduce.comp, cumsum.comp): ReduceSum/Mean/Max/Min and CumSum, in index order.
bool is_reduce(ir::Op op);
// Scratch bytes a node's kernels need in the arena (a split reduction's partials); 0 for most.
size_t workspace_bytes(const ir::Graph& graph, const ir::Node& node);
std::optional<std::string> reduce_unsupported(const ir::Graph& graph, const ir::Node& node, bool int64);
void record_reduce_family(Context& ctx, int node_index, NodeProgram& program);

// indexing.cpp (gather.comp, gather_elements.comp, gather_nd.comp, scatter_nd.comp).
bool is_indexing(ir::Op op);
std::optional<std::string> indexing_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_indexing(Context& ctx, int node_index, NodeProgram& program);

// random.cpp (random.comp): RandomNormal(Like), RandomUniform(Like), the cpu's bits (shaderFloat64).
std::optional<std::string> random_unsupported(const ir::Graph& graph, const ir::Node& node, bool float64);
void record_random(Context& ctx, int node_index, NodeProgram& program);

}  // namespace lockstep::vulkan
