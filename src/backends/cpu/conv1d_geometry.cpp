#include "backends/cpu/conv1d_geometry.h"

#include <string>
#include <vector>

namespace lockstep::cpu {

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
