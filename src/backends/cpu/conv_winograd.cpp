// Winograd 1-D convolution. Outputs are taken in tiles of m (t, t + d, ..., t + (m-1)d for
// dilation d). The taps are split into groups of three (the last may have one or two) and each
// group of r taps is F(m,r) over the first m+r-2 of the points {0, 1, -1, 2, -2} and inf
// (Toom-Cook: y = A^T [(G g) * (B^T d)]). The output transform A^T depends only on m and the
// point, so all groups share it and each point is one product over channels x groups: a GEMM
// [tiles x K_p] x [K_p x co]. B^T rows are scaled to integers and G rows take the inverse
// scale (computed in double, rounded once), so the input transform multiplies by small
// integers and the output transform by powers of two.
#include "backends/cpu/conv_winograd.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

#include "backends/cpu/conv1d_geometry.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/shared_weights.h"
#include "backends/cpu/conv_winograd_isa.h"
#include "backends/cpu/conv_winograd_transforms.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/transpose.h"
#include "core/hash.h"

namespace lockstep::cpu {

using namespace winograd;

namespace {

constexpr int64_t kMaxBlocksPerChunk = 8;
// A chunk's transformed input stays within L2 next to the weights it meets.
constexpr int64_t kMaxChunkFloats = 64 * 1024;
// Below this many input and output channels the transforms cost more than the products save:
// against oneDNN's AVX-512 brgconv from 32 (48 for m = 2); on AVX2 and NEON oneDNN 2.6 has no
// fast channels-last kernel (SSE4.1 JIT or im2col at 1.5-9 GFLOP/s for 8-32 channels, where the
// AVX2 kernels run 30-85), so from 8 there (docs/cpu.md). LOCKSTEP_CPU_WINOGRAD=all lifts it.
int64_t min_channels(int tile, Isa isa) {
  if (isa == Isa::Avx512) return tile == 2 ? 48 : 32;
  return 8;
}

// LOCKSTEP_CPU_WINOGRAD: 0 turns the kernel off; 2, 3 or 4 picks m; "all" (m = 4) also lifts
// the channel minimum. Unset: m = 4 with the minimum.
struct Setting {
  bool on = true, all_sizes = false;
  int tile = 4;
};
Setting setting() {
  static const Setting parsed = [] {
    Setting s;
    const char* env = std::getenv("LOCKSTEP_CPU_WINOGRAD");
    const std::string v = env ? env : "";
    if (v == "0") s.on = false;
    if (v == "all") s.all_sizes = true;
    if (v == "2" || v == "3" || v == "4") s.tile = v[0] - '0';
    return s;
  }();
  return parsed;
}

}  // namespace

bool Winograd1d::available() { return isa_has_fma_vectors(active_isa()); }

Winograd1d::Winograd1d(const Winograd1dShape& shape, const float* weights, const float* bias, int threads, Isa isa)
    : Winograd1d(shape, [weights] { return weights; }, bias,
                 sha256_of_constant(weights, static_cast<size_t>(shape.co * shape.ci * shape.k) * sizeof(float)) +
                     (bias ? sha256_of_constant(bias, static_cast<size_t>(shape.co) * sizeof(float)) : std::string("-")),
                 threads, isa) {}

Winograd1d::Winograd1d(const Winograd1dShape& shape, const std::function<const float*()>& weights_of, const float* bias,
                       const std::string& weights_key, int threads, Isa isa)
    : s_(shape), threads_(std::max(1, threads)), kernels_(&winograd_kernels(isa)) {
  const int64_t ci = s_.ci, co = s_.co, m = s_.tile;
  if (m < 2 || m > 4) throw std::invalid_argument("Winograd1d: tile must be 2, 3 or 4");
  const int64_t lanes = kernels_->lanes;
  vectors_ = co % (3 * lanes) == 0 ? 3 : co % (2 * lanes) == 0 ? 2 : 1;
  rows_ = kernels_->rows[vectors_ - 1];
  const int64_t width = vectors_ * lanes;
  panels_ = (co + width - 1) / width;
  points_ = static_cast<int>(m) + 2;

  // Groups of three taps and each one's place along every point's K.
  for (int64_t first = 0; first < s_.k; first += 3) {
    Group g;
    g.first_tap = first;
    g.taps = std::min<int64_t>(3, s_.k - first);
    const GroupTransform t = group_transform(static_cast<int>(m), static_cast<int>(g.taps));
    g.inputs = t.inputs;
    for (int i = 0; i < t.inputs; ++i) {
      g.offset[t.point[i]] = k_[t.point[i]];
      k_[t.point[i]] += ci;
    }
    groups_.push_back(g);
  }
  // Weights: u_q = (G g)_q for every group, in double, rounded once. Shared across compiles
  // through a cache keyed by the weights' SHA-256 and everything the layout depends on.
  std::string key = weights_key + "/" + std::to_string(ci) + "/" + std::to_string(co) + "/" + std::to_string(s_.k) + "/" + std::to_string(m) +
         "/" + std::to_string(width) + "/" + isa_name();
  w_ = shared_by_key<Transformed>(key, [&] {
    const float* weights = weights_of();
    auto t = std::make_shared<Transformed>();
    for (int q = 0; q < points_; ++q) t->u[q].assign(static_cast<size_t>(panels_ * k_[q] * width), 0.0f);
    const int inf = points_ - 1;
    for (const Group& g : groups_) {
      const GroupTransform tr = group_transform(static_cast<int>(m), static_cast<int>(g.taps));
      for (int64_t o = 0; o < co; ++o) {
        const int64_t panel = o / width, lane = o % width;
        for (int64_t c = 0; c < ci; ++c) {
          const float* w = weights + (o * ci + c) * s_.k + g.first_tap;
          for (int i = 0; i < tr.inputs; ++i) {
            const int q = tr.point[i];
            double u = 0.0;  // (G g)_q: the taps' polynomial at the point, its leading one at inf
            if (q == inf) u = w[g.taps - 1];
            else
              for (int64_t e = 0; e < g.taps; ++e) u += ipow(kFinitePoints[q], static_cast<int>(e)) * w[e];
            u *= tr.g_scale[i];
            t->u[q][static_cast<size_t>((panel * k_[q] + g.offset[q] + c) * width + lane)] = static_cast<float>(u);
          }
        }
      }
    }
    t->bias.assign(static_cast<size_t>(panels_ * width), 0.0f);
    if (bias) std::copy(bias, bias + co, t->bias.begin());
    return t;
  });
  zeros_.assign(static_cast<size_t>(ci), 0.0f);

  // Tiles, and chunks of whole register blocks: enough chunks for every thread, each small
  // enough that its transformed input stays in L2.
  const int64_t dil = s_.dilation;
  tiles_ = (s_.w_out + m * dil - 1) / (m * dil) * dil;
  int64_t k_total = 0;
  for (int q = 0; q < points_; ++q) k_total += k_[q];
  const int64_t blocks = (tiles_ + rows_ - 1) / rows_;
  const int64_t per_thread = (s_.n * blocks + threads_ - 1) / threads_;
  const int64_t fit = std::max<int64_t>(1, kMaxChunkFloats / (rows_ * k_total));
  const int64_t chunk_blocks = std::clamp<int64_t>(std::min(per_thread, fit), 1, kMaxBlocksPerChunk);
  chunk_ = chunk_blocks * rows_;
  chunks_ = (tiles_ + chunk_ - 1) / chunk_;
  if (s_.n * chunks_ < threads_) panel_parts_ = std::min<int64_t>(panels_, threads_ / (s_.n * chunks_));
  int64_t at = 0;
  for (int q = 0; q < points_; ++q) v_offset_[q] = at, at += chunk_ * k_[q];
  v_floats_ = at;
}

const char* Winograd1d::isa_name() const { return kernels_->name; }

int64_t Winograd1d::tile_time(int64_t tile) const { return tile_start(tile, s_.tile, s_.dilation); }

void Winograd1d::transform_chunk(const float* x, int64_t tile0, float* v) const {
  const int64_t ci = s_.ci, dil = s_.dilation;
  for (int64_t i = 0; i < chunk_; ++i) {
    const int64_t tile = tile0 + i;
    if (tile >= tiles_) {
      for (int q = 0; q < points_; ++q) std::fill_n(v + v_offset_[q] + i * k_[q], k_[q], 0.0f);
      continue;
    }
    const int64_t t = tile_time(tile);
    for (const Group& g : groups_) {
      const int64_t base = t - s_.pad_begin + g.first_tap * dil;
      const float* d[kMaxPoints];
      for (int64_t j = 0; j < g.inputs; ++j) {
        const int64_t pos = base + j * dil;
        d[j] = pos >= 0 && pos < s_.w_in ? x + pos * ci : zeros_.data();
      }
      float* o[kMaxPoints] = {};
      for (int q = 0; q < points_; ++q)
        if (g.offset[q] >= 0) o[q] = v + v_offset_[q] + i * k_[q] + g.offset[q];
      kernels_->transform[s_.tile - 2][g.taps - 1](d, o, ci);
    }
  }
}

void Winograd1d::multiply_chunk(const float* v, int64_t tile0, float* y, int64_t panel0, int64_t panel1) const {
  const int64_t width = vectors_ * kernels_->lanes;
  const BlockFn fn = kernels_->block[vectors_ - 1];
  const StoreFn store = kernels_->store[s_.tile - 2];
  const OutputMap map{.tile = s_.tile, .dilation = s_.dilation, .w_out = s_.w_out, .co = s_.co};
  alignas(64) float m[kMaxPoints][kBlockFloats];
  for (int q = 0; q < points_; ++q)  // a point no group uses (k = 2: one group of two taps)
    if (k_[q] == 0) std::fill_n(m[q], kBlockFloats, 0.0f);
  for (int64_t panel = panel0; panel < panel1; ++panel) {
    const int64_t lanes = std::min(width, s_.co - panel * width);
    for (int64_t b = 0; b * rows_ < chunk_ && tile0 + b * rows_ < tiles_; ++b) {
      for (int q = 0; q < points_; ++q)
        if (k_[q] > 0) fn(v + v_offset_[q] + b * rows_ * k_[q], k_[q], w_->u[q].data() + panel * k_[q] * width, k_[q], m[q]);
      const int64_t first = tile0 + b * rows_;
      const float* bias = w_->bias.data() + panel * width;
      float* out = y + panel * width;
      store(m, rows_, vectors_, first, tiles_, map, bias, lanes, out);
    }
  }
}

void Winograd1d::run(const float* x, float* y, std::byte* scratch) const {
  float* buffers = reinterpret_cast<float*>(scratch);
  // Each output element's arithmetic is the same however chunks and panels are split: the bits
  // do not depend on the thread count. A chunk split into panel parts is transformed once per part.
  const int64_t items = s_.n * chunks_ * panel_parts_;
  parallel_for(items, threads_, [&](int64_t item, int slot) {
    const int64_t part = item % panel_parts_, chunk = item / panel_parts_;
    const int64_t n = chunk / chunks_, tile0 = chunk % chunks_ * chunk_;
    float* v = buffers + slot * v_floats_;
    transform_chunk(x + n * s_.w_in * s_.ci, tile0, v);
    multiply_chunk(v, tile0, y + n * s_.w_out * s_.co, panels_ * part / panel_parts_, panels_ * (part + 1) / panel_parts_);
  });
}

namespace {

// A planar (NCW) input or output goes through a channels-last copy in the workspace (our
// transposes: data movement only), so graph inputs and outputs take the kernel too.
class WinogradConvKernel final : public Kernel {
 public:
  WinogradConvKernel(CompileContext& ctx, const ir::Node& node, const Winograd1dShape& shape)
      : conv_(shape, ctx.fptr(node.inputs[1]),
              node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue ? ctx.fptr(node.inputs[2]) : nullptr,
              ctx.threads),
        epilogue_(ctx, node),
        x_(ctx.fptr(node.inputs[0])),
        y_(ctx.fptr(node.outputs[0])),
        x_nwc_(ctx.is_nwc(node.inputs[0])),
        y_nwc_(ctx.is_nwc(node.outputs[0])) {
    const Winograd1dShape& s = conv_.shape();
    auto bytes = [](int64_t floats) { return static_cast<size_t>((floats * 4 + 63) / 64 * 64); };
    y_off_ = x_nwc_ ? 0 : bytes(s.n * s.w_in * s.ci);
    scratch_off_ = y_off_ + (y_nwc_ ? 0 : bytes(s.n * s.w_out * s.co));
    ctx.workspace_bytes = std::max(ctx.workspace_bytes, scratch_off_ + conv_.scratch_bytes());
  }
  void bind_workspace(std::byte* base) override {
    x_nwc_data_ = x_nwc_ ? x_ : reinterpret_cast<float*>(base);
    y_nwc_data_ = y_nwc_ ? y_ : reinterpret_cast<float*>(base + y_off_);
    scratch_ = base + scratch_off_;
  }
  std::string implementation() const override { return std::string("lockstep:winograd:") + conv_.isa_name(); }
  void run() override {
    const Winograd1dShape& s = conv_.shape();
    if (!x_nwc_) ncw_to_nwc(x_, const_cast<float*>(x_nwc_data_), s.n, s.ci, s.w_in);
    conv_.run(x_nwc_data_, y_nwc_data_, scratch_);
    if (!y_nwc_) nwc_to_ncw(y_nwc_data_, y_, s.n, s.co, s.w_out, nullptr);
    epilogue_.apply_all(y_);
  }

 private:
  Winograd1d conv_;
  Epilogue epilogue_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  bool x_nwc_ = true, y_nwc_ = true;
  const float* x_nwc_data_ = nullptr;
  float* y_nwc_data_ = nullptr;
  size_t y_off_ = 0, scratch_off_ = 0;
  std::byte* scratch_ = nullptr;
};

}  // namespace

int winograd_tile(int64_t ci, int64_t co, int64_t k) {
  const Setting use = setting();
  if (!use.on || !Winograd1d::available() || k < 2) return 0;
  if (!use.all_sizes && std::min(ci, co) < min_channels(use.tile, active_isa())) return 0;
  return use.tile;
}

KernelPtr make_winograd_conv(CompileContext& ctx, const ir::Node& node) {
  const std::optional<PlainConv1d> conv = plain_conv1d(ctx, node);
  if (!conv || conv->pad_end < 0 || conv->w_out < 1) return nullptr;
  const int tile = winograd_tile(conv->ci, conv->co, conv->k);
  if (tile == 0) return nullptr;
  const Winograd1dShape shape{.n = conv->n, .ci = conv->ci, .co = conv->co, .w_in = conv->w_in, .w_out = conv->w_out,
                              .k = conv->k, .dilation = conv->dilation, .pad_begin = conv->pad_begin, .tile = tile};
  return std::make_unique<WinogradConvKernel>(ctx, node, shape);
}

}  // namespace lockstep::cpu
