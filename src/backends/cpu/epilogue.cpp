#include "backends/cpu/epilogue.h"

#include <cmath>

#include "backends/cpu/parallel.h"
#include "backends/cpu/simd/target.h"
#include "backends/cpu/vector_math.h"

namespace lockstep::cpu {

using ir::Op;

RowView row_view(const Shape& shape) {
  RowView v;
  v.out_shape = shape;
  v.inner = shape.empty() ? 1 : shape.back();
  v.rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) v.rows *= shape[i];
  if (v.inner == 0) v.rows = 0;
  return v;
}

RowOperand row_operand(const Shape& operand, const Shape& out) {
  RowOperand r;
  std::vector<int64_t> s = broadcast_strides(operand, out);
  if (!out.empty()) {
    r.inner_stride = s.back();
    r.outer_strides.assign(s.begin(), s.end() - 1);
  }
  return r;
}

int64_t RowOperand::row_offset(int64_t row, const Shape& out_shape) const {
  int64_t offset = 0;
  for (size_t d = outer_strides.size(); d-- > 0;) {
    int64_t dim = out_shape[d];
    offset += (row % dim) * outer_strides[d];
    row /= dim;
  }
  return offset;
}

RowChunks row_chunks(const RowView& view, int64_t chunk) {
  RowChunks c{view.rows, view.inner, chunk, 1};
  if (view.inner > chunk) c.per_row = (view.inner + chunk - 1) / chunk;
  else c.chunk = view.inner;
  return c;
}

float apply_unary(Op op, float x, float alpha) {
  switch (op) {
    case Op::Tanh: return fast_tanh(x);
    case Op::Sigmoid: return fast_sigmoid(x);
    case Op::Relu: return x > 0 ? x : 0.0f;
    case Op::LeakyRelu: return x >= 0 ? x : x * alpha;
    case Op::Exp: return fast_exp(x);
    case Op::Neg: return -x;
    case Op::Sqrt: return std::sqrt(x);
    case Op::Identity: return x;
    case Op::Erf: return fast_erf(x);
    case Op::Softplus: return fast_softplus(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Floor: return std::floor(x);
    case Op::Abs: return std::fabs(x);
    case Op::Reciprocal: return 1.0f / x;
    default: throw Error(ErrorCode::Internal, std::string("cpu: not a unary op: ") + ir::op_name(op));
  }
}

float apply_binary(Op op, float a, float b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Pow: return b == 2.0f ? a * a : std::pow(a, b);  // as binary_loop's x^2 below
    default: throw Error(ErrorCode::Internal, std::string("cpu: not a binary op: ") + ir::op_name(op));
  }
}

// The loops below are written once per op so that each inner loop is a plain vectorizable body.
#define LOCKSTEP_UNARY_LOOP(EXPR)          \
  _Pragma("omp simd") for (int64_t j = 0; j < n; ++j) { \
    float x = in[j * xs];                    \
    out[j] = (EXPR);                         \
  }

[[gnu::always_inline]] static inline void unary_loop(Op op, float alpha, const float* in, int64_t xs, float* out, int64_t n) {
  switch (op) {
    case Op::Tanh: LOCKSTEP_UNARY_LOOP(fast_tanh(x)); return;
    case Op::Sigmoid: LOCKSTEP_UNARY_LOOP(fast_sigmoid(x)); return;
    case Op::Relu: LOCKSTEP_UNARY_LOOP(x > 0 ? x : 0.0f); return;
    case Op::LeakyRelu: LOCKSTEP_UNARY_LOOP(x >= 0 ? x : x * alpha); return;
    case Op::Exp: LOCKSTEP_UNARY_LOOP(fast_exp(x)); return;
    case Op::Neg: LOCKSTEP_UNARY_LOOP(-x); return;
    case Op::Sqrt: LOCKSTEP_UNARY_LOOP(std::sqrt(x)); return;
    case Op::Identity: LOCKSTEP_UNARY_LOOP(x); return;
    case Op::Erf: LOCKSTEP_UNARY_LOOP(fast_erf(x)); return;
    case Op::Softplus: LOCKSTEP_UNARY_LOOP(fast_softplus(x)); return;
    case Op::Ceil: LOCKSTEP_UNARY_LOOP(std::ceil(x)); return;
    case Op::Floor: LOCKSTEP_UNARY_LOOP(std::floor(x)); return;
    case Op::Abs: LOCKSTEP_UNARY_LOOP(std::fabs(x)); return;
    case Op::Reciprocal: LOCKSTEP_UNARY_LOOP(1.0f / x); return;
    default: apply_unary(op, 0, alpha);  // throws
  }
}
#undef LOCKSTEP_UNARY_LOOP

LOCKSTEP_X86_CLONES
void unary_to(Op op, float alpha, const float* x, int64_t x_stride, float* out, int64_t n) {
  unary_loop(op, alpha, x, x_stride, out, n);
}

void unary_inplace(Op op, float alpha, float* acc, int64_t n) { unary_to(op, alpha, acc, 1, acc, n); }

#define LOCKSTEP_BINARY_LOOP(EXPR)                              \
  _Pragma("omp simd") for (int64_t j = 0; j < n; ++j) {         \
    float x = a[j * as], y = b[j * bs];                           \
    out[j] = (EXPR);                                              \
  }

[[gnu::always_inline]] static inline void binary_loop(Op op, const float* a, int64_t as, const float* b, int64_t bs, float* out, int64_t n) {
  switch (op) {
    case Op::Add: LOCKSTEP_BINARY_LOOP(x + y); return;
    case Op::Sub: LOCKSTEP_BINARY_LOOP(x - y); return;
    case Op::Mul: LOCKSTEP_BINARY_LOOP(x * y); return;
    case Op::Div: LOCKSTEP_BINARY_LOOP(x / y); return;
    case Op::Pow:
      // x^2 (layer norms' variance): x * x is the correctly rounded square, as the reference's
      // double pow rounded once; powf is a call per element and only within an ulp.
      if (bs == 0 && b[0] == 2.0f) {
        _Pragma("omp simd") for (int64_t j = 0; j < n; ++j) out[j] = a[j * as] * a[j * as];
        return;
      }
      for (int64_t j = 0; j < n; ++j) out[j] = std::pow(a[j * as], b[j * bs]);
      return;
    default: apply_binary(op, 0, 0);  // throws
  }
}
#undef LOCKSTEP_BINARY_LOOP

LOCKSTEP_X86_CLONES
void binary_to(Op op, const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* out, int64_t n) {
  // Specialise the common strides so the vectorizer sees unit or zero strides.
  if (a_stride == 1 && b_stride == 1) binary_loop(op, a, 1, b, 1, out, n);
  else if (a_stride == 1 && b_stride == 0) binary_loop(op, a, 1, b, 0, out, n);
  else if (a_stride == 0 && b_stride == 1) binary_loop(op, a, 0, b, 1, out, n);
  else binary_loop(op, a, a_stride, b, b_stride, out, n);
}

LOCKSTEP_X86_CLONES
void unary_rows(Op op, float alpha, const float* x, int64_t x_pitch, float* out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) unary_loop(op, alpha, x + r * x_pitch, 1, out + r * n, n);
}

LOCKSTEP_X86_CLONES
void binary_rows(Op op, const float* a, int64_t a_pitch, int64_t a_stride, const float* b, int64_t b_pitch,
                 int64_t b_stride, float* out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *ar = a + r * a_pitch, *br = b + r * b_pitch;
    float* o = out + r * n;
    if (a_stride == 1 && b_stride == 1) binary_loop(op, ar, 1, br, 1, o, n);
    else if (a_stride == 1 && b_stride == 0) binary_loop(op, ar, 1, br, 0, o, n);
    else if (a_stride == 0 && b_stride == 1) binary_loop(op, ar, 0, br, 1, o, n);
    else binary_loop(op, ar, a_stride, br, b_stride, o, n);
  }
}

void binary_inplace(Op op, float* acc, const float* b, int64_t b_stride, bool b_is_lhs, int64_t n) {
  if (b_is_lhs) binary_to(op, b, b_stride, acc, 1, acc, n);
  else binary_to(op, acc, 1, b, b_stride, acc, n);
}

Epilogue::Epilogue(const CompileContext& ctx, const ir::Node& node) {
  if (node.epilogue.empty()) return;
  const ir::Value& out = ctx.value(node.outputs.at(0));
  if (!is_floating(out.dtype))
    throw Error(ErrorCode::UnsupportedAttribute, "cpu: epilogue on a non-floating output", node.name,
                ir::op_name(node.op));
  const Shape out_shape = ctx.view_shape(node, node.outputs[0]);
  view_ = row_view(out_shape);
  for (const auto& s : node.epilogue) {
    Step step;
    step.op = s.op;
    step.alpha = s.alpha;
    step.operand_is_lhs = s.operand_is_lhs;
    if (ir::is_binary_elementwise(s.op)) {
      if (s.operand == ir::kNoValue)
        throw Error(ErrorCode::InvalidModel, "epilogue step " + s.onnx_name + " has no operand", node.name);
      const ir::Value& operand = ctx.value(s.operand);
      if (!is_floating(operand.dtype))
        throw Error(ErrorCode::UnsupportedAttribute, "cpu: epilogue operand of " + s.onnx_name + " is not floating",
                    node.name);
      step.operand = ctx.fptr(s.operand);
      step.addressing = row_operand(ctx.view_shape(node, s.operand), out_shape);
    } else if (!ir::is_unary_elementwise(s.op)) {
      throw Error(ErrorCode::UnsupportedOp, std::string("cpu: epilogue step op ") + ir::op_name(s.op), node.name);
    }
    steps_.push_back(step);
  }
  total_ = num_elements(out_shape);
  flat_ = true;
  for (size_t i = 0, k = 0; i < node.epilogue.size(); ++i, ++k) {
    const ir::ValueId id = node.epilogue[i].operand;
    if (!steps_[k].operand) continue;
    const int64_t n = num_elements(ctx.value(id).shape);
    steps_[k].scalar = n == 1;
    flat_ = flat_ && (n == 1 || n == total_);
  }
}

void Epilogue::apply_row(float* out, int64_t row, int64_t begin, int64_t end) const {
  float* acc = out + row * view_.inner + begin;
  int64_t n = end - begin;
  for (const Step& s : steps_) {
    if (!s.operand) {
      unary_inplace(s.op, s.alpha, acc, n);
    } else {
      const int64_t stride = s.addressing.inner_stride;
      const float* b = s.operand + s.addressing.row_offset(row, view_.out_shape) + begin * stride;
      binary_inplace(s.op, acc, b, stride, s.operand_is_lhs, n);
    }
  }
}

void Epilogue::apply_flat(float* out, int64_t begin, int64_t end) const {
  float* acc = out + begin;
  const int64_t n = end - begin;
  for (const Step& s : steps_) {
    if (!s.operand) unary_inplace(s.op, s.alpha, acc, n);
    else if (s.scalar) binary_inplace(s.op, acc, s.operand, 0, s.operand_is_lhs, n);
    else binary_inplace(s.op, acc, s.operand + begin, 1, s.operand_is_lhs, n);
  }
}

void Epilogue::apply_all(float* out) const {
  if (steps_.empty()) return;
  if (flat_) {
    constexpr int64_t kChunk = 4096;
    const int64_t count = (total_ + kChunk - 1) / kChunk;
    parallel_for(count, [&](int64_t item, int) {
      const int64_t begin = item * kChunk;
      apply_flat(out, begin, std::min(begin + kChunk, total_));
    });
    return;
  }
  RowChunks c = row_chunks(view_);
  const int64_t count = c.count();
  parallel_for(count, [&](int64_t item, int) {
    int64_t row = item / c.per_row, begin = (item % c.per_row) * c.chunk;
    int64_t end = std::min(begin + c.chunk, c.inner);
    apply_row(out, row, begin, end);
  });
}

}  // namespace lockstep::cpu
