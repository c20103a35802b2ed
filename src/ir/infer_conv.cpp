// Conv and ConvTranspose geometry: kernel, strides, dilations, pads (auto_pad resolved), output
// shape.
#include <algorithm>

#include "ir/infer_rules.h"

namespace lockstep::ir {

namespace {
std::string ints_str(const std::vector<int64_t>& v) {
  return shape_str(v);
}

std::vector<int64_t> ints_attr(const Node& node, const char* name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = node.attrs.get_ints(name, std::vector<int64_t>(n, fallback));
  if (v.size() != n)
    fail(node, ErrorCode::UnsupportedAttribute,
         std::string("attribute '") + name + "' has " + std::to_string(v.size()) +
             " values, expected " + std::to_string(n));
  return v;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
}  // namespace

static ConvGeometry conv_common(const Node& node, const Shape& x, const Shape& w, bool transpose) {
  ConvGeometry g;
  if (x.size() < 3 || w.size() != x.size())
    fail(node, ErrorCode::ShapeMismatch,
         "input " + shape_str(x) + " and weight " + shape_str(w) + " must have the same rank >= 3");
  size_t nsp = x.size() - 2;
  g.group = node.attrs.get_int("group", 1);
  if (g.group < 1) fail(node, ErrorCode::UnsupportedAttribute, "group must be >= 1");
  g.kernel.assign(w.begin() + 2, w.end());
  if (node.attrs.has("kernel_shape")) {
    auto ks = node.attrs.get_ints("kernel_shape");
    if (ks != g.kernel)
      fail(node, ErrorCode::ShapeMismatch,
           "kernel_shape " + ints_str(ks) + " does not match weight " + shape_str(w));
  }
  g.strides = ints_attr(node, "strides", nsp, 1);
  g.dilations = ints_attr(node, "dilations", nsp, 1);
  for (size_t i = 0; i < nsp; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1)
      fail(node, ErrorCode::UnsupportedAttribute, "strides and dilations must be >= 1");
  auto pads = ints_attr(node, "pads", 2 * nsp, 0);
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<long>(nsp));
  g.pad_end.assign(pads.begin() + static_cast<long>(nsp), pads.end());
  std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    fail(node, ErrorCode::UnsupportedAttribute, "auto_pad '" + auto_pad + "' is not supported");

  int64_t c = x[1];
  if (!transpose) {
    if (c != w[1] * g.group)
      fail(node, ErrorCode::ShapeMismatch,
           "Conv input has " + std::to_string(c) + " channels but weight expects " +
               std::to_string(w[1] * g.group) + " (group " + std::to_string(g.group) + ")");
    if (w[0] % g.group != 0)
      fail(node, ErrorCode::ShapeMismatch,
           "weight has " + std::to_string(w[0]) + " output channels, not divisible by group " +
               std::to_string(g.group));
    g.out_shape = {x[0], w[0]};
    for (size_t i = 0; i < nsp; ++i) {
      int64_t in = x[i + 2], ext = (g.kernel[i] - 1) * g.dilations[i] + 1, s = g.strides[i];
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        int64_t out = ceil_div(in, s);
        int64_t total = std::max<int64_t>(0, (out - 1) * s + ext - in);
        g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        g.pad_end[i] = total - g.pad_begin[i];
      } else if (auto_pad == "VALID") {
        g.pad_begin[i] = g.pad_end[i] = 0;
      }
      int64_t span = in + g.pad_begin[i] + g.pad_end[i] - ext;
      if (span < 0)
        fail(node, ErrorCode::ShapeMismatch,
             "kernel extent " + std::to_string(ext) + " exceeds padded input " +
                 std::to_string(in + g.pad_begin[i] + g.pad_end[i]) + " on spatial axis " +
                 std::to_string(i));
      g.out_shape.push_back(span / s + 1);
    }
  } else {
    if (c != w[0])
      fail(node, ErrorCode::ShapeMismatch,
           "ConvTranspose input has " + std::to_string(c) + " channels but weight expects " +
               std::to_string(w[0]));
    if (c % g.group != 0)
      fail(node, ErrorCode::ShapeMismatch,
           "input channels " + std::to_string(c) + " not divisible by group " +
               std::to_string(g.group));
    auto output_padding = ints_attr(node, "output_padding", nsp, 0);
    std::vector<int64_t> output_shape = node.attrs.get_ints("output_shape");
    if (output_shape.size() == nsp + 2)
      output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (!output_shape.empty() && output_shape.size() != nsp)
      fail(node, ErrorCode::UnsupportedAttribute,
           "output_shape " + ints_str(output_shape) + " has the wrong length");
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (output_shape.empty() && same)
      for (size_t i = 0; i < nsp; ++i) output_shape.push_back(x[i + 2] * g.strides[i]);
    g.out_shape = {x[0], w[1] * g.group};
    for (size_t i = 0; i < nsp; ++i) {
      int64_t ext = (g.kernel[i] - 1) * g.dilations[i] + 1;
      int64_t natural = g.strides[i] * (x[i + 2] - 1) + output_padding[i] + ext;
      if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
      if (!output_shape.empty()) {
        // Floor halves (as the ONNX reference): a negative total grows the end first.
        int64_t total = natural - output_shape[i];
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        g.pad_begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
        g.pad_end[i] = total - g.pad_begin[i];
      }
      int64_t out = natural - g.pad_begin[i] - g.pad_end[i];
      if (out < 0)
        fail(node, ErrorCode::ShapeMismatch,
             "negative output size on spatial axis " + std::to_string(i));
      g.out_shape.push_back(out);
    }
  }
  return g;
}

ConvGeometry conv_geometry(const Node& node, const Shape& x, const Shape& w) {
  return conv_common(node, x, w, false);
}
ConvGeometry conv_transpose_geometry(const Node& node, const Shape& x, const Shape& w) {
  return conv_common(node, x, w, true);
}

}  // namespace lockstep::ir
