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

// conv.cpp (conv.comp, conv_transpose.comp): Conv and ConvTranspose, 1-D and 2-D, any strides,
// dilations, pads and groups.
std::optional<std::string> conv_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_conv(Context& ctx, int node_index, NodeProgram& program);

// matmul.cpp (matmul.comp, softmax.comp): MatMul, Gemm, Softmax.
std::optional<std::string> matmul_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_matmul(Context& ctx, int node_index, NodeProgram& program);

// data_movement.cpp (copy.comp, pad.comp): Slice, Split, Concat, Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Transpose, Expand, Pad.
std::optional<std::string> data_movement_unsupported(const ir::Graph& graph, const ir::Node& node);
void record_data_movement(Context& ctx, int node_index, NodeProgram& program);
bool is_data_movement(ir::Op op);

}  // namespace lockstep::vulkan
