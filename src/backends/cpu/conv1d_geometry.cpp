#include "backends/cpu/conv1d_geometry.h"

#include <algorithm>
#include <string>
#include <vector>

namespace lockstep::cpu {

namespace {
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace


ConvGeometry conv_geometry(const ir::Graph& graph, const ir::Node& node, bool transposed) {
  const Shape& x = graph.value(node.inputs.at(0)).shape;
  const Shape& w = graph.value(node.inputs.at(1)).shape;
  const Shape& y = graph.value(node.outputs.at(0)).shape;
  ConvGeometry g;
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size() || y.size() != x.size())
    throw Error(ErrorCode::UnsupportedAttribute,
                "cpu: Conv needs 1-D to 3-D spatial data with matching weight rank, got input " + shape_str(x) +
                    " and weights " + shape_str(w),
                node.name, ir::op_name(node.op));
  g.spatial = static_cast<int64_t>(x.size()) - 2;
  const auto sp = static_cast<size_t>(g.spatial);
  g.group = node.attrs.get_int("group", 1);
  g.kernel.assign(w.begin() + 2, w.end());
  g.strides = node.attrs.get_ints("strides", Dims(sp, 1));
  g.dilations = node.attrs.get_ints("dilations", Dims(sp, 1));
  Dims pads = node.attrs.get_ints("pads", Dims(2 * sp, 0));
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (g.strides.size() != sp || g.dilations.size() != sp || pads.size() != 2 * sp)
    throw Error(ErrorCode::UnsupportedAttribute, "cpu: strides/dilations/pads do not match the spatial rank",
                node.name, ir::op_name(node.op));
  g.pad_begin.assign(pads.begin(), pads.begin() + g.spatial);
  g.pad_end.assign(pads.begin() + g.spatial, pads.end());
  g.extra.assign(sp, 0);
  for (size_t i = 0; i < sp; ++i) {
    const int64_t in = x[i + 2], out = y[i + 2], s = g.strides[i], span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (!transposed) {
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
        g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else if (auto_pad == "VALID") {
        g.pad_begin[i] = 0;
      }
      // The end pad that gives exactly `out` positions (oneDNN checks this identity).
      g.pad_end[i] = (out - 1) * s + span - in - g.pad_begin[i];
      if (g.pad_end[i] < 0) g.pad_end[i] = 0;  // floor in the output size formula: trailing rows unused
    } else {
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        Dims op = node.attrs.get_ints("output_padding", Dims(sp, 0));
        int64_t total = s * (in - 1) + (op.size() == sp ? op[i] : 0) + span - out;
        g.pad_begin[i] = auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
      } else if (!node.attrs.has("pads")) {
        g.pad_begin[i] = 0;
      }
      if (g.pad_begin[i] < 0)
        throw Error(ErrorCode::UnsupportedAttribute, "cpu: negative ConvTranspose begin padding", node.name,
                    ir::op_name(node.op));
      const int64_t full = (in - 1) * s + span;
      g.pad_end[i] = full - g.pad_begin[i] - out;
      if (g.pad_end[i] < 0) {
        g.extra[i] = -g.pad_end[i];
        g.pad_end[i] = 0;
      }
    }
  }
  for (auto& d : g.dilations) d -= 1;  // oneDNN counts dilation from 0
  return g;
}


std::optional<PlainConv1d> plain_conv1d(const CompileContext& ctx, const ir::Node& node) {
  if (node.op != ir::Op::Conv || node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue) return std::nullopt;
  const Shape& x = ctx.value(node.inputs[0]).shape;
  const Shape& w = ctx.value(node.inputs[1]).shape;
  const Shape& y = ctx.value(node.outputs.at(0)).shape;
  if (x.size() != 3 || w.size() != 3 || y.size() != 3) return std::nullopt;
  if (w[0] != y[1] || w[1] != x[1] || x[0] != y[0]) return std::nullopt;
  if (!ctx.graph.is_constant(node.inputs[1])) return std::nullopt;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue && !ctx.graph.is_constant(node.inputs[2]))
    return std::nullopt;
  if (node.attrs.get_int("group", 1) != 1 || node.attrs.get_string("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  const std::vector<int64_t> strides = node.attrs.get_ints("strides", {1}), dil = node.attrs.get_ints("dilations", {1});
  const std::vector<int64_t> pads = node.attrs.get_ints("pads", {0, 0});
  if (strides != std::vector<int64_t>{1} || dil.size() != 1 || dil[0] < 1 || pads.size() != 2 || pads[0] < 0)
    return std::nullopt;
  if (y[2] != x[2] + pads[0] + pads[1] - (w[2] - 1) * dil[0]) return std::nullopt;
  return PlainConv1d{.n = x[0], .ci = x[1], .co = y[1], .w_in = x[2], .w_out = y[2], .k = w[2], .dilation = dil[0],
                     .pad_begin = pads[0], .pad_end = pads[1]};
}

}  // namespace lockstep::cpu
