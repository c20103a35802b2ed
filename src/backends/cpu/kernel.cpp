#include "backends/cpu/kernel.h"

#include "lockstep/lockstep.h"

#include "backends/cpu/epilogue.h"
#include "backends/cpu/layout.h"

namespace lockstep::cpu {

DType storage_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float32 : dtype; }
size_t storage_size(DType dtype) { return dtype_size(storage_dtype(dtype)); }

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<int64_t> broadcast_strides(const Shape& operand, const Shape& out) {
  std::vector<int64_t> own = contiguous_strides(operand);
  std::vector<int64_t> result(out.size(), 0);
  if (operand.size() > out.size())
    throw Error(ErrorCode::ShapeMismatch, "cannot broadcast " + shape_str(operand) + " to " + shape_str(out));
  size_t shift = out.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i) {
    if (operand[i] == out[i + shift]) result[i + shift] = operand[i] == 1 ? 0 : own[i];
    else if (operand[i] == 1) result[i + shift] = 0;
    else throw Error(ErrorCode::ShapeMismatch, "cannot broadcast " + shape_str(operand) + " to " + shape_str(out));
  }
  return result;
}

bool CompileContext::accumulates_f64(const ir::Node& node) const { return f64_accumulates(f64_prefixes, node.name); }

Shape CompileContext::view_shape(const ir::Node& node, ir::ValueId id) const {
  const bool channels_last = !node.outputs.empty() && is_nwc(node.outputs[0]);
  return channels_last ? nwc_view(value(id).shape) : value(id).shape;
}

std::vector<int64_t> CompileContext::const_ints(const ir::Node& node, size_t input) const {
  if (input >= node.inputs.size() || node.inputs[input] == ir::kNoValue) return {};
  const ir::Value& v = value(node.inputs[input]);
  if (!v.constant.defined())
    throw Error(ErrorCode::UnsupportedAttribute,
                "cpu: input " + std::to_string(input) + " ('" + v.name + "') must be a constant after folding",
                node.name, ir::op_name(node.op));
  std::vector<int64_t> out(static_cast<size_t>(v.constant.numel()));
  for (int64_t i = 0; i < v.constant.numel(); ++i) out[static_cast<size_t>(i)] = v.constant.element_as_int(i);
  return out;
}

namespace {

class EpilogueKernel final : public Kernel {
 public:
  EpilogueKernel(KernelPtr inner, Epilogue epilogue, float* out)
      : inner_(std::move(inner)), epilogue_(std::move(epilogue)), out_(out) {}
  void run() override {
    inner_->run();
    epilogue_.apply_all(out_);
  }
  void bind_workspace(std::byte* base) override { inner_->bind_workspace(base); }

 private:
  KernelPtr inner_;
  Epilogue epilogue_;
  float* out_;
};

}  // namespace

KernelPtr with_epilogue(CompileContext& ctx, const ir::Node& node, KernelPtr inner) {
  if (node.epilogue.empty()) return inner;
  return std::make_unique<EpilogueKernel>(std::move(inner), Epilogue(ctx, node), ctx.fptr(node.outputs.at(0)));
}

KernelPtr make_kernel(CompileContext& ctx, const ir::Node& node) {
  using ir::Op;
  switch (node.op) {
    case Op::Conv: case Op::ConvTranspose:
      return make_conv_kernel(ctx, node);
    case Op::MatMul: case Op::Gemm: case Op::Softmax:
      return make_matmul_kernel(ctx, node);
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::Where:
    case Op::Tanh: case Op::Sigmoid: case Op::Relu: case Op::LeakyRelu: case Op::Exp: case Op::Neg:
    case Op::Sqrt: case Op::Cast:
      return make_elementwise_kernel(ctx, node);
    case Op::Equal: case Op::Less: case Op::LessOrEqual: case Op::Greater: case Op::GreaterOrEqual:
    case Op::And: case Op::Or: case Op::Xor: case Op::Not:
      return make_logical_kernel(ctx, node);
    case Op::Erf: case Op::Softplus: case Op::Ceil: case Op::Floor: case Op::Abs: case Op::Reciprocal:
      return make_elementwise_kernel(ctx, node);
    case Op::Clip:
      return make_clip_kernel(ctx, node);
    case Op::Identity: case Op::Slice: case Op::Split: case Op::Concat: case Op::Reshape: case Op::Flatten:
    case Op::Transpose: case Op::Unsqueeze: case Op::Squeeze: case Op::Pad: case Op::Gather: case Op::Expand:
      return make_data_movement_kernel(ctx, node);
    case Op::Shape: case Op::ConstantOfShape: case Op::Range:
      return make_shape_kernel(ctx, node);
    // Reductions (reduce.cpp)
    case Op::ReduceMean: case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::CumSum:
      return make_reduce_kernel(ctx, node);
    // Indexing (indexing.cpp; NonZero there only to say why it does not run here)
    case Op::NonZero: case Op::ScatterND: case Op::GatherND: case Op::GatherElements:
      return make_indexing_kernel(ctx, node);
    // Random (random.cpp)
    case Op::RandomNormal: case Op::RandomNormalLike: case Op::RandomUniform: case Op::RandomUniformLike:
      return make_random_kernel(ctx, node);
  }
  throw Error(ErrorCode::UnsupportedOp, "cpu: no kernel", node.name, ir::op_name(node.op));
}

}  // namespace lockstep::cpu
