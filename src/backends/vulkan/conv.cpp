// Conv and ConvTranspose, 1-D and 2-D (conv.comp, conv_transpose.comp): direct kernels, 4 output
// positions x 4 output channels (1 where a group's output channels are not a multiple of 4) per
// invocation, bias added after the sum, then the epilogue in place (ew_program.comp).
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

namespace {

constexpr int64_t kLocal = 64;  // the shaders' local_size_x

struct Geometry {
  int64_t n = 1, cin = 1, hin = 1, win = 1, cout = 1, hout = 1, wout = 1, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, group = 1;
  int co_tile = 1;   // output channels per invocation
  int pos_tile = 4;  // output positions per invocation
  bool tiled = false;  // conv1d_tiled.comp (shared memory)
  int64_t xtiles = 0;
};

Geometry geometry(const ir::Graph& graph, const ir::Node& node) {
  const Shape& x = graph.value(node.inputs[0]).shape;
  const Shape& w = graph.value(node.inputs[1]).shape;
  const Shape& y = graph.value(node.outputs[0]).shape;
  const bool transposed = node.op == ir::Op::ConvTranspose;
  const ir::ConvGeometry cg = transposed ? ir::conv_transpose_geometry(node, x, w) : ir::conv_geometry(node, x, w);
  Geometry g;
  const size_t sp = x.size() - 2;  // 1 or 2 spatial dims
  g.n = x[0];
  g.cin = x[1];
  g.cout = y[1];
  g.group = cg.group;
  g.win = x.back();
  g.wout = y.back();
  g.kw = cg.kernel.back();
  g.sw = cg.strides.back();
  g.dw = cg.dilations.back();
  g.pw = cg.pad_begin.back();
  if (sp == 2) {
    g.hin = x[2];
    g.hout = y[2];
    g.kh = cg.kernel[0];
    g.sh = cg.strides[0];
    g.dh = cg.dilations[0];
    g.ph = cg.pad_begin[0];
  }
  const int64_t per_group = g.cout / g.group;
  g.co_tile = per_group % 4 == 0 ? 4 : 1;
  // LOCKSTEP_VULKAN_CONV_TILED=1: 1-D convs whose workgroup input span fits conv1d_tiled.comp's
  // shared memory (SPAN_MAX) stage it there. Opt-in: on lavapipe it took the seed decoder's convs
  // from 4.4 to 7.7 s (llvmpipe's shared memory and barriers are slow); GPUs are untested.
  const char* tiled = std::getenv("LOCKSTEP_VULKAN_CONV_TILED");
  g.tiled = tiled && std::strcmp(tiled, "1") == 0 && !transposed && sp == 1 &&
            (64 * g.pos_tile - 1) * g.sw + (g.kw - 1) * g.dw + 1 <= 1024;
  g.xtiles = transposed ? g.sw * (((g.wout + g.sw - 1) / g.sw + 3) / 4) : (g.wout + g.pos_tile - 1) / g.pos_tile;
  return g;
}

}  // namespace

std::optional<std::string> conv_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.size() < 2 || node.inputs[0] == ir::kNoValue || node.inputs[1] == ir::kNoValue)
    return std::string("a Conv needs its data and weight inputs");
  const Shape& x = graph.value(node.inputs[0]).shape;
  if (x.size() != 3 && x.size() != 4)
    return std::to_string(x.size() - 2) + "-D convolutions are not implemented on vulkan (1-D and 2-D are)";
  for (size_t i = 0; i < node.inputs.size() && i < 3; ++i)
    if (node.inputs[i] != ir::kNoValue && graph.value(node.inputs[i]).dtype != DType::Float32)
      return std::string("non-float32 convolution inputs");
  Geometry g;
  try {
    g = geometry(graph, node);
  } catch (const Error& e) {
    return std::string(e.message());
  }
  if (g.cout / g.co_tile > 65535 || g.n * g.hout > 65535 || (g.xtiles + kLocal - 1) / kLocal > 65535)
    return std::string("the convolution's dispatch grid exceeds 65535 workgroups in one dimension");
  if (g.pw < -65536 || g.ph < -65536) return std::string("pads beyond 65536");
  if ((g.cin / g.group) * g.kh * g.kw > kMaxSerialLoop)
    return std::to_string((g.cin / g.group) * g.kh * g.kw) + " taps per output: vulkan sums serially up to " +
           std::to_string(kMaxSerialLoop) + " (llvmpipe's loop limit; a split sum is not implemented yet)";
  return std::nullopt;
}

void record_conv(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& graph = ctx.graph();
  const ir::Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const Geometry g = geometry(graph, node);
  const ir::ValueId y = node.outputs[0];
  if (num_elements(graph.value(y).shape) == 0) return;
  std::vector<uint32_t> p(CV_WORDS, 0);
  const int64_t fields[] = {g.n, g.cin, g.hin, g.win, g.cout, g.hout, g.wout, g.kh, g.kw,
                            g.sh, g.sw, g.dh, g.dw, g.ph, g.pw, g.group};
  for (size_t i = 0; i < std::size(fields); ++i) p[i] = word(fields[i], node);
  p[CV_X] = ctx.at(node.inputs[0]);
  p[CV_W] = ctx.at(node.inputs[1]);
  const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue;
  p[CV_BIAS] = has_bias ? ctx.at(node.inputs[2]) : CV_NO_BIAS;
  p[CV_Y] = ctx.at(y);
  p[CV_XTILES] = word(g.xtiles, node);
  p[CV_KSTEP_H] = word(g.sh / std::gcd(g.sh, g.dh), node);
  p[CV_KSTEP_W] = word(g.sw / std::gcd(g.sw, g.dw), node);
  Dispatch dispatch;
  dispatch.shader = node.op == ir::Op::ConvTranspose ? "conv_transpose" : g.tiled ? "conv1d_tiled" : "conv";
  dispatch.spec[0] = g.co_tile;
  dispatch.spec[1] = g.pos_tile;
  dispatch.base = ctx.add_params(p);
  dispatch.groups[0] = static_cast<uint32_t>((g.xtiles + kLocal - 1) / kLocal);  // 64 x pos_tile outputs each when tiled
  dispatch.groups[1] = static_cast<uint32_t>(g.cout / g.co_tile);
  dispatch.groups[2] = static_cast<uint32_t>(g.n * g.hout);
  program.dispatches.push_back(dispatch);
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
