// The padded input widened once per run to a float64 channels-last copy (zeros for the padding);
// then work items of up to kBlock output positions x a panel of output channels, each either
//  - direct: one dgemm per tap, [positions x ci] x [ci x co], summed onto the bias; or
//  - k = 3, undilated: Winograd F(4,3) in float64 (points 0, 1, -1, 2, -2, inf): the input
//    transform, six dgemms [tiles x ci] x [ci x co] against the transformed weights, the output
//    transform — half the direct products; float64 carries the transforms' rounding (the
//    float32 kernel's 3x, conv_winograd.h) far below the one rounding to float32 at the end.
//    At any length: the direct sum is ~20% faster under 64 steps, but a second float64 copy of
//    the weights (42 MB on a Piper voice) and its preparation on the first short call cost more.
// Items are fixed by the shape, so an output's arithmetic never depends on the thread count.
#include "backends/cpu/conv_f64.h"

#include <algorithm>
#include <vector>

#include "backends/cpu/conv1d_geometry.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd/target.h"
#include "core/hash.h"
#include "core/shared_by_key.h"

namespace lockstep::cpu {

namespace {

constexpr int64_t kBlock = 256, kPanel = 256;
// Narrower panels below 512 channels and on inputs of one position block: more items for the
// threads (a function of the shape alone, like every block boundary).
int64_t panel_for(int64_t co, int64_t w_out) {
  if (w_out <= kBlock) return kPanel / 4;
  return co >= 512 ? kPanel : kPanel / 2;
}
constexpr int64_t kTile = 4, kPoints = 6, kTiles = kBlock / kTile;

// F(4,3): y = A^T [(G g) . (B^T d)] over a 6-sample window d of each 4-output tile.
constexpr double kBT[kPoints][kPoints] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                          {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kG[kPoints][3] = {{1.0 / 4, 0, 0},          {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
constexpr double kAT[kTile][kPoints] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// y += f x, vectorised for the host's widest ISA (the transforms were scalar at -O2).
LOCKSTEP_X86_CLONES
void axpy(double f, const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += f * x[i];
}

LOCKSTEP_X86_CLONES
void widen(const float* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

struct F64Weights {
  std::vector<double> taps;  // direct: [t][ci][co]; Winograd: [point][ci][co]
  std::vector<double> bias;  // [co], zeros without one
  // Where dgemm packs B (gemm.h: AVX-512): each plane of taps packed once, taps then dropped.
  // Packing per call read and wrote the weights once more than the products did.
  std::vector<double> packed;
  int64_t plane_stride = 0;  // doubles between the packed planes
};

class F64ConvKernel final : public Kernel {
 public:
  F64ConvKernel(CompileContext& ctx, const ir::Node& node, const PlainConv1d& c)
      : c_(c), winograd_(c.k == 3 && c.dilation == 1), threads_(std::max(1, ctx.threads)), epilogue_(ctx, node),
        x_(ctx.fptr(node.inputs[0])), y_(ctx.fptr(node.outputs[0])), x_nwc_(ctx.is_nwc(node.inputs[0])),
        y_nwc_(ctx.is_nwc(node.outputs[0])) {
    const float* w = ctx.fptr(node.inputs[1]);
    const float* b = node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue ? ctx.fptr(node.inputs[2]) : nullptr;
    const size_t w_bytes = static_cast<size_t>(c.co * c.ci * c.k) * sizeof(float);
    const std::string key = sha256_of_constant(w, w_bytes) + "/" +
                            (b ? sha256_of_constant(b, static_cast<size_t>(c.co) * sizeof(float)) : std::string("-")) +
                            "/" + std::to_string(c.co) + "x" + std::to_string(c.ci) + "x" + std::to_string(c.k) +
                            (winograd_ ? "/f43" : "/direct") + (dgemm_packs_b() ? "/packed16" : "");
    weights_ = shared_by_key<F64Weights>(key, [&] {
      auto out = std::make_shared<F64Weights>();
      const int64_t planes = winograd_ ? kPoints : c.k;
      out->taps.assign(static_cast<size_t>(planes * c.ci * c.co), 0.0);
      // In blocks of 64 output channels: their weight rows stay in cache while each (i, q) row
      // of the result is written contiguously (a first call of a length pays this).
      for (int64_t o0 = 0; o0 < c.co; o0 += 64)
        for (int64_t i = 0; i < c.ci; ++i)
          for (int64_t q = 0; q < planes; ++q) {
            double* row = out->taps.data() + (q * c.ci + i) * c.co;
            for (int64_t o = o0; o < std::min(c.co, o0 + 64); ++o) {
              const float* g = w + (o * c.ci + i) * c.k;
              row[o] = winograd_ ? kG[q][0] * g[0] + kG[q][1] * g[1] + kG[q][2] * g[2] : static_cast<double>(g[q]);
            }
          }
      out->bias.assign(static_cast<size_t>(c.co), 0.0);
      if (b) std::copy(b, b + c.co, out->bias.begin());
      if (dgemm_packs_b()) {
        out->plane_stride = packed_b_doubles(c.ci, c.co);
        out->packed.resize(static_cast<size_t>(planes * out->plane_stride));
        for (int64_t q = 0; q < planes; ++q)
          pack_b_16(out->taps.data() + q * c.ci * c.co, c.co, c.ci, c.co, out->packed.data() + q * out->plane_stride);
        std::vector<double>().swap(out->taps);
      }
      return out;
    });
    // The padded input in float64, channels last, once per run: every window is a view of it
    // (rows past the end cover the last tile's overhang).
    padded_rows_ = c.w_out + (c.k - 1) * c.dilation + kTile;
    // Position blocks of equal length (whole tiles, at most kBlock): 263 steps are two of 132,
    // not 256 and 7, which left one thread waiting.
    const int64_t parts = (c.w_out + kBlock - 1) / kBlock;
    block_ = ((c.w_out + parts - 1) / parts + kTile - 1) / kTile * kTile;
    padded_ = static_cast<size_t>(c.n * padded_rows_ * c.ci);
    per_thread_ = static_cast<size_t>(kBlock * kPanel);
    if (winograd_) per_thread_ += static_cast<size_t>(kPoints * kTiles * (c.ci + kPanel));
    ctx.workspace_bytes =
        std::max(ctx.workspace_bytes, (padded_ + per_thread_ * static_cast<size_t>(threads_)) * sizeof(double));
  }
  void bind_workspace(std::byte* base) override {
    xd_ = reinterpret_cast<double*>(base);
    scratch_ = xd_ + padded_;
  }
  std::string implementation() const override { return winograd_ ? "lockstep:f64-conv:winograd" : "lockstep:f64-conv"; }

  void run() override {
    const int64_t panel = panel_for(c_.co, c_.w_out), panels = (c_.co + panel - 1) / panel;
    const int64_t blocks = (c_.w_out + block_ - 1) / block_;
    const int64_t items = c_.n * blocks * panels;
    parallel_for(c_.n * padded_rows_, threads_, [&](int64_t r, int) { fill_row(r / padded_rows_, r % padded_rows_); });
    parallel_for(items, threads_, [&](int64_t item, int slot) {
      block(item / (blocks * panels), item / panels % blocks * block_, item % panels * panel,
            scratch_ + static_cast<size_t>(slot) * per_thread_);
    });
    epilogue_.apply_all(y_);
  }

 private:
  // Outputs [p0, p0 + block_) x channels [o0, o0 + panel_for(co, w_out)) of batch item n.
  void block(int64_t n, int64_t p0, int64_t o0, double* scratch) const {
    const int64_t o1 = std::min(c_.co, o0 + panel_for(c_.co, c_.w_out)), width = o1 - o0;
    const int64_t p1 = std::min(c_.w_out, p0 + block_), count = p1 - p0;
    const int64_t tiles = (count + kTile - 1) / kTile;
    const double* window = xd_ + (n * padded_rows_ + p0) * c_.ci;  // input rows from p0 - pad_begin
    double* acc = scratch;                                          // [positions][width]
    const F64Weights& w = *weights_;
    if (winograd_) {
      double* v = acc + kBlock * kPanel;       // [point][tile][ci]
      double* m = v + kPoints * kTiles * c_.ci;  // [point][tile][width]
      for (int64_t t = 0; t < tiles; ++t)
        for (int q = 0; q < kPoints; ++q) {
          double* out = v + (q * kTiles + t) * c_.ci;
          std::fill(out, out + c_.ci, 0.0);
          for (int r = 0; r < kPoints; ++r) {
            const double f = kBT[q][r];
            if (f == 0) continue;
            axpy(f, window + (t * kTile + r) * c_.ci, out, c_.ci);
          }
        }
      for (int q = 0; q < kPoints; ++q) product(w, q, tiles, width, o0, v + q * kTiles * c_.ci, false, m + q * kTiles * width);
      for (int64_t t = 0; t < tiles; ++t)
        for (int j = 0; j < kTile && t * kTile + j < count; ++j) {
          double* out = acc + (t * kTile + j) * width;
          std::copy(w.bias.begin() + o0, w.bias.begin() + o1, out);
          for (int q = 0; q < kPoints; ++q) {
            const double f = kAT[j][q];
            if (f == 0) continue;
            axpy(f, m + (q * kTiles + t) * width, out, width);
          }
        }
    } else {
      for (int64_t p = 0; p < count; ++p) std::copy(w.bias.begin() + o0, w.bias.begin() + o1, acc + p * width);
      for (int64_t t = 0; t < c_.k; ++t) product(w, t, count, width, o0, window + t * c_.dilation * c_.ci, true, acc);
    }
    float* yn = y_ + n * c_.co * c_.w_out;
    if (y_nwc_) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t o = o0; o < o1; ++o) yn[p * c_.co + o] = static_cast<float>(acc[(p - p0) * width + o - o0]);
    } else {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t p = p0; p < p1; ++p) yn[o * c_.w_out + p] = static_cast<float>(acc[(p - p0) * width + o - o0]);
    }
  }

  // c (+)= a [rows x ci] * plane q's columns [o0, o0 + width) (o0 a multiple of 16).
  void product(const F64Weights& w, int64_t q, int64_t rows, int64_t width, int64_t o0, const double* a, bool add,
               double* c) const {
    if (!w.packed.empty())
      dgemm_packed(rows, width, c_.ci, a, c_.ci, w.packed.data() + q * w.plane_stride + o0 * c_.ci, add, c, width);
    else
      dgemm(rows, width, c_.ci, a, c_.ci, w.taps.data() + q * c_.ci * c_.co + o0, c_.co, add ? 1.0 : 0.0, c, width);
  }

  // Row `r` of batch item n's padded input: position r - pad_begin, zeros outside the input.
  void fill_row(int64_t n, int64_t r) const {
    double* row = xd_ + (n * padded_rows_ + r) * c_.ci;
    const int64_t at = r - c_.pad_begin;
    const float* xn = x_ + n * c_.ci * c_.w_in;
    if (at < 0 || at >= c_.w_in) std::fill(row, row + c_.ci, 0.0);
    else if (x_nwc_) widen(xn + at * c_.ci, row, c_.ci);
    else
      for (int64_t i = 0; i < c_.ci; ++i) row[i] = xn[i * c_.w_in + at];
  }

  PlainConv1d c_;
  bool winograd_;
  int threads_;
  Epilogue epilogue_;
  std::shared_ptr<const F64Weights> weights_;
  const float* x_;
  float* y_;
  bool x_nwc_, y_nwc_;
  int64_t padded_rows_ = 0, block_ = kBlock;  // positions per work item
  size_t padded_ = 0, per_thread_ = 0;  // doubles: the padded input, scratch per thread
  double* xd_ = nullptr;
  double* scratch_ = nullptr;
};

}  // namespace

KernelPtr make_f64_conv(CompileContext& ctx, const ir::Node& node) {
  if (!ctx.accumulates_f64(node)) return nullptr;
  const std::optional<PlainConv1d> conv = plain_conv1d(ctx, node);
  if (!conv || conv->pad_end < 0 || conv->w_out < 1) return nullptr;
  return std::make_unique<F64ConvKernel>(ctx, node, *conv);
}

}  // namespace lockstep::cpu
