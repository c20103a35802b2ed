// The op enum and its tables, generated from ops.inc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::ir {

enum class Op : uint16_t {
#define LOCKSTEP_OP(name, onnx, attrs) name,
#include "ir/ops.inc"
#undef LOCKSTEP_OP
};

inline constexpr int kOpCount = 0
#define LOCKSTEP_OP(name, onnx, attrs) +1
#include "ir/ops.inc"
#undef LOCKSTEP_OP
    ;

const char* op_name(Op op);  // the ONNX op type, e.g. "ConvTranspose"
std::optional<Op> op_from_onnx(std::string_view onnx_name);
const std::vector<std::string>& op_attribute_names(Op op);  // the attributes the op accepts
bool op_accepts_attribute(Op op, std::string_view attribute);

// Unary and binary elementwise ops that may sit in a fused epilogue.
bool is_unary_elementwise(Op op);
bool is_binary_elementwise(Op op);

// Inputs whose values decide output shapes (Reshape's shape, Slice's starts, Range's bounds, a
// reduction's axes, ...): compiled programs need them constant. The run-time shape stage
// (src/dynamic) makes such a value a constant of the segment that reads it.
bool is_parameter_input(Op op, size_t index);

// Ops whose output shape depends on input values (NonZero): no static shape unless folded.
bool has_data_dependent_shape(Op op);
// Random ops: never folded, seeded per run (src/core/random.h).
bool is_random(Op op);

}  // namespace lockstep::ir
