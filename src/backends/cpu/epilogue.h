// Fused elementwise steps applied to a float32 output while it is hot in cache.
// The output is viewed as rows of its last dim; each operand is addressed per row by a base
// offset and an inner stride of 0 (broadcast) or 1, which covers per-channel, mask, residual.
#pragma once

#include <vector>

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

// Row view of a shape: rows = product of all dims but the last, inner = last dim (1 for scalars).
struct RowView {
  Shape out_shape;
  int64_t rows = 1;
  int64_t inner = 1;
};
RowView row_view(const Shape& shape);

// Addressing of one (broadcast) operand over a row view.
struct RowOperand {
  std::vector<int64_t> outer_strides;  // per outer dim of out (all but last)
  int64_t inner_stride = 0;            // 0 or 1 (or any, for generic inputs)
  int64_t row_offset(int64_t row, const Shape& out_shape) const;
};
RowOperand row_operand(const Shape& operand, const Shape& out);

// Scalar float ops shared by the elementwise kernels and the epilogue.
float apply_unary(ir::Op op, float x, float alpha);
float apply_binary(ir::Op op, float a, float b);
// In-place vector forms: acc[j] = op(acc[j]); acc[j] = op(acc[j], b[j*stride]) (or swapped).
void unary_inplace(ir::Op op, float alpha, float* acc, int64_t n);
void binary_inplace(ir::Op op, float* acc, const float* b, int64_t b_stride, bool b_is_lhs, int64_t n);
void unary_to(ir::Op op, float alpha, const float* x, int64_t x_stride, float* out, int64_t n);
// Row blocks (strided views, views.h): `rows` rows of `n` elements; x rows `x_pitch` apart,
// out rows dense. One call per block instead of one per short row.
void unary_rows(ir::Op op, float alpha, const float* x, int64_t x_pitch, float* out, int64_t rows, int64_t n);
void binary_rows(ir::Op op, const float* a, int64_t a_pitch, int64_t a_stride, const float* b, int64_t b_pitch,
                 int64_t b_stride, float* out, int64_t rows, int64_t n);
void binary_to(ir::Op op, const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* out,
               int64_t n);

class Epilogue {
 public:
  Epilogue() = default;
  Epilogue(const CompileContext& ctx, const ir::Node& node);
  bool empty() const { return steps_.empty(); }
  // Applies every step to columns [begin, end) of row `row` of `out` (already holding acc).
  void apply_row(float* out, int64_t row, int64_t begin, int64_t end) const;
  // Applies every step to the whole output, in parallel (static schedule).
  void apply_all(float* out) const;
  const RowView& view() const { return view_; }
  // Flat epilogues (full-size or scalar operands) can run on any element range.
  bool flat() const { return flat_; }
  void apply_flat(float* out, int64_t begin, int64_t end) const;

 private:
  struct Step {
    ir::Op op;
    float alpha = 0;
    const float* operand = nullptr;
    RowOperand addressing;
    bool operand_is_lhs = false;
    bool scalar = false;  // one-element operand
  };
  RowView view_;
  std::vector<Step> steps_;
  // Every operand full-size or a scalar: apply_all works on one flat row (channels-last views
  // have rows of only C elements).
  bool flat_ = false;
  int64_t total_ = 0;
};

// Work items for a row view: (row, column chunk) pairs so that few long rows still spread over
// threads. `chunk` columns per item.
struct RowChunks {
  int64_t rows, inner, chunk, per_row;
  int64_t count() const { return rows * per_row; }
};
RowChunks row_chunks(const RowView& view, int64_t chunk = 4096);

}  // namespace lockstep::cpu
