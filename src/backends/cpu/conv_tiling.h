// 1-D channels-last convolution split along the time axis into tiles of a fixed output
// length (conv_tiling.cpp). oneDNN 2.6's brgconv primitives grow with the time axis (memory
// and JIT time ~linear in W: 1 GB for one [1,8,262144] conv); tiles bound both by the tile
// length, and identical tile primitives are shared through oneDNN's primitive cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace lockstep::cpu {

// A 1-D convolution on dense channels-last (nwc) buffers. dilation counts from 0 (oneDNN).
struct Conv1dShape {
  int64_t n = 1, ci = 1, co = 1, groups = 1, w_in = 1, w_out = 1;
  int64_t k = 1, stride = 1, dilation = 0, pad_begin = 0;
};

// Outputs per tile for a conv of max(C_in, C_out) = `channels` run on `threads` threads: 2048 at
// >= 64 channels, up to 8192 for narrow ones, times threads/2 (capped at 16384) so that many
// threads keep enough work per call (LOCKSTEP_CPU_CONV_TILE fixes it, for measurements).
int64_t conv_tile_outputs(int64_t channels, int threads = 1);

class TiledConv1d {
 public:
  // Tiles for `shape`, or an empty object (tiled() false) when the time axis fits one tile or
  // a tile's input window would be empty. Throws dnnl::error when oneDNN cannot build a tile.
  TiledConv1d(dnnl::engine& engine, const Conv1dShape& shape, bool bias, int threads = 1);
  TiledConv1d() = default;

  bool tiled() const { return !tiles_.empty(); }
  // oneDNN's implementation of the tiles (for kernel reports).
  const std::string& implementation() const { return impl_; }
  // The weights layout every tile primitive reads (reorder the weights into it once).
  const dnnl::memory::desc& weights_desc() const { return wei_d_; }
  // Scratchpad bytes (one tile runs at a time, so the largest one).
  size_t scratch_bytes() const { return scratch_bytes_; }
  // Binds the scratchpad, the weights (in weights_desc()) and the bias (null for none).
  void bind(std::byte* scratch, const dnnl::memory& weights, const dnnl::memory* bias);
  // src [n][w_in][ci], dst [n][w_out][co]; tiles run one after the other, batch-major.
  void run(dnnl::stream& stream, const float* src, float* dst);

 private:
  struct Geometry {  // one distinct tile shape: outputs, input window, pads
    int64_t len = 0, win = 0, pad_l = 0, pad_r = 0;
    dnnl::primitive primitive{};
    dnnl::memory::desc scratch_d{};
    dnnl::memory src{}, dst{};
    std::unordered_map<int, dnnl::memory> args{};
  };
  struct Tile {
    int64_t out0 = 0, in0 = 0;
    size_t geometry = 0;
  };
  Conv1dShape s_;
  dnnl::engine* engine_ = nullptr;
  std::vector<Geometry> geometries_;
  std::vector<Tile> tiles_;
  dnnl::memory::desc wei_d_;
  size_t scratch_bytes_ = 0;
  std::string impl_;
};

}  // namespace lockstep::cpu
