// Time-axis tiles of a 1-D channels-last convolution. Tile t computes outputs
// [t*L, t*L + len); its input window is the part of [o0*s - pb, (o0+len-1)*s + span - pb)
// inside the signal, the rest is the tile's own zero padding (only the first and last tiles
// have any). Channels-last windows are contiguous, so a tile is a pointer offset.
#include "backends/cpu/conv_tiling.h"

#include "backends/cpu/isa.h"
#include "backends/cpu/onednn_impl.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace lockstep::cpu {

namespace {

using dnnl::memory;
using Dims = memory::dims;

// Tile values (outputs x channels) of ~128K: primitive creation stays ~10 ms and ~10 MB per
// tile shape, while narrow convs still get enough work per call (A/B at 1024..8192 outputs on
// the seed decoder: 2048 everywhere cost 8% on its 8-channel convs; 8192 there is even).
constexpr int64_t kTileValues = 2048 * 64;
constexpr int64_t kMinTileOutputs = 2048, kMaxTileOutputs = 8192;
// Many threads split each call finer: on the GPU machine's 16 cores the seed decoder took 17.4-18.1
// ms with the 2-thread tiles, 14.8-14.9 ms at 16384 outputs, 12.9-13.0 ms untiled (bench/RESULTS.md).
constexpr int64_t kMaxScaledTileOutputs = 16384;
// The first and last tiles (the padded ones): short, as long as the padding allows.
constexpr int64_t kEdgeOutputs = 256;

}  // namespace

int64_t conv_tile_outputs(int64_t channels, int threads) {
  static const int64_t fixed = [] {
    const char* env = std::getenv("LOCKSTEP_CPU_CONV_TILE");
    const int64_t v = env ? std::atoll(env) : 0;
    return v >= 16 ? v : 0;
  }();
  if (fixed) return fixed;
  const int64_t base = std::clamp(kTileValues / std::max<int64_t>(channels, 1), kMinTileOutputs, kMaxTileOutputs);
  const int64_t scale = std::max(1, threads / 2);
  return scale == 1 ? base : std::min(base * scale, std::max(base, kMaxScaledTileOutputs));
}

TiledConv1d::TiledConv1d(dnnl::engine& engine, const Conv1dShape& shape, bool bias, int threads)
    : s_(shape), engine_(&engine) {
  const int64_t L = conv_tile_outputs(std::max(s_.ci, s_.co), threads);
  if (s_.w_out <= L) return;
  const int64_t span = (s_.k - 1) * (s_.dilation + 1) + 1;
  // Short edge tiles take all the padding (primitive cost grows with the tile length), full
  // tiles fill the interior, one shorter unpadded tile the rest.
  const int64_t pad_end = (s_.w_out - 1) * s_.stride + span - s_.pad_begin - s_.w_in;
  const int64_t edge =
      std::min(L, std::max({kEdgeOutputs, (s_.pad_begin + s_.stride - 1) / s_.stride,
                            (pad_end + s_.stride - 1) / s_.stride}));
  std::vector<std::pair<int64_t, int64_t>> spans{{0, edge}};  // (first output, length)
  int64_t o = edge;
  for (; o + L <= s_.w_out - edge; o += L) spans.emplace_back(o, L);
  if (o < s_.w_out - edge) spans.emplace_back(o, s_.w_out - edge - o);
  spans.emplace_back(std::max(o, s_.w_out - edge), s_.w_out - std::max(o, s_.w_out - edge));
  std::vector<Tile> tiles;
  for (const auto& [o0, len] : spans) {
    if (len <= 0) continue;
    const int64_t a = o0 * s_.stride - s_.pad_begin,
                  b = (o0 + len - 1) * s_.stride + span - s_.pad_begin;
    const int64_t in0 = std::max<int64_t>(a, 0), win = std::min(b, s_.w_in) - in0;
    if (win <= 0) return;  // a tile entirely in the padding: leave it to the whole-axis primitive
    const int64_t pad_l = in0 - a, pad_r = b - (in0 + win);
    size_t g = 0;
    while (g < geometries_.size() &&
           !(geometries_[g].len == len && geometries_[g].win == win &&
             geometries_[g].pad_l == pad_l && geometries_[g].pad_r == pad_r))
      ++g;
    if (g == geometries_.size())
      geometries_.push_back(Geometry{.len = len, .win = win, .pad_l = pad_l, .pad_r = pad_r});
    tiles.push_back(Tile{.out0 = o0, .in0 = in0, .geometry = g});
  }
  // The unpadded full-length tile (the common one) picks the weights layout; the others follow it.
  std::vector<size_t> order(geometries_.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    auto rank = [&](size_t g) {
      return geometries_[g].pad_l + geometries_[g].pad_r == 0 && geometries_[g].len == L ? 0 : 1;
    };
    return rank(x) < rank(y);
  });
  const int64_t O = s_.co / s_.groups, I = s_.ci / s_.groups;
  const Dims w_dims = s_.groups == 1 ? Dims{O, I, s_.k} : Dims{s_.groups, O, I, s_.k};
  const memory::desc b_d =
      bias ? memory::desc({s_.co}, memory::data_type::f32, memory::format_tag::a) : memory::desc();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  for (size_t g : order) {
    Geometry& geo = geometries_[g];
    const memory::desc src_d({1, s_.ci, geo.win}, memory::data_type::f32, memory::format_tag::nwc);
    const memory::desc dst_d({1, s_.co, geo.len}, memory::data_type::f32, memory::format_tag::nwc);
    const memory::desc w_d =
        wei_d_ ? wei_d_ : memory::desc(w_dims, memory::data_type::f32, memory::format_tag::any);
    auto d = bias
                 ? dnnl::convolution_forward::desc(
                       dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                       src_d, w_d, b_d, dst_d, {s_.stride}, {s_.dilation}, {geo.pad_l}, {geo.pad_r})
                 : dnnl::convolution_forward::desc(
                       dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                       src_d, w_d, dst_d, {s_.stride}, {s_.dilation}, {geo.pad_l}, {geo.pad_r});
    dnnl::convolution_forward::primitive_desc pd(d, attr, engine);
    // A reference loop (or a slow pick, onednn_impl.h) would be far slower than the whole-axis
    // primitive or lockstep's GEMM convolution, which then runs instead.
    impl_ = pd.impl_info_str();
    if (is_slow_conv1d_impl(impl_, host_has_avx2())) {
      geometries_.clear();
      return;
    }
    if (!wei_d_) wei_d_ = pd.weights_desc();
    geo.primitive = dnnl::convolution_forward(pd);
    geo.scratch_d = pd.scratchpad_desc();
    geo.src = memory(src_d, engine, nullptr);
    geo.dst = memory(dst_d, engine, nullptr);
    scratch_bytes_ = std::max(scratch_bytes_, geo.scratch_d.get_size());
  }
  tiles_ = std::move(tiles);
}

void TiledConv1d::bind(std::byte* scratch, const memory& weights, const memory* bias) {
  for (Geometry& geo : geometries_) {
    geo.args = {{DNNL_ARG_SRC, geo.src},
                {DNNL_ARG_WEIGHTS, weights},
                {DNNL_ARG_DST, geo.dst},
                {DNNL_ARG_SCRATCHPAD, memory(geo.scratch_d, *engine_, scratch)}};
    if (bias) geo.args[DNNL_ARG_BIAS] = *bias;
  }
}

void TiledConv1d::run(dnnl::stream& stream, const float* src, float* dst) {
  for (int64_t n = 0; n < s_.n; ++n) {
    const float* x = src + n * s_.w_in * s_.ci;
    float* y = dst + n * s_.w_out * s_.co;
    for (const Tile& t : tiles_) {
      Geometry& geo = geometries_[t.geometry];
      geo.src.set_data_handle(const_cast<float*>(x + t.in0 * s_.ci));
      geo.dst.set_data_handle(y + t.out0 * s_.co);
      geo.primitive.execute(stream, geo.args);
    }
  }
  stream.wait();
}

}  // namespace lockstep::cpu
