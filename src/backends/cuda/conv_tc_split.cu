// The split weights on the device (conv_tc_split.h): one thread per weight, each writing the
// words (hi, lo) or fp16 halves that weight owns, so no two threads write the same bytes.
#include "backends/cuda/conv_tc_split.h"

#include <cuda_fp16.h>

#include "backends/cuda/conv_tc_weights.h"
#include "backends/cuda/conv_wgmma.h"

namespace lockstep::cuda {
namespace {

// tc::split_weights_host's layout: the TF32 hi word, then in the fp16 block of the same lane the
// hi (rows g, g+8) and scaled lo halves, channel q in each pair's low half and q+4 in its high one.
__global__ void split_tc(const float* __restrict__ w, int cout, int cin, int ks, float* __restrict__ out) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(cout) * cin * ks) return;
  const int k = static_cast<int>(i % ks), ci = static_cast<int>(i / ks % cin), co = static_cast<int>(i / ks / cin);
  const float v = w[i];
  float h, l;
  tc::split_tf32_host(v, h, l);
  const size_t at = tc::split_index(co, ci, k, cin, ks), lane0 = at - at % 4, half = static_cast<size_t>(ks) * 128;
  out[at] = h;
  const bool lower_row = co % 16 >= 8, high = ci % tc::kChunk >= 4;
  __half* halves = reinterpret_cast<__half*>(out);  // little-endian: a word's low half first
  halves[(lane0 + half + (lower_row ? 1 : 0)) * 2 + (high ? 1 : 0)] = __float2half_rn(h);
  halves[(lane0 + half + (lower_row ? 3 : 2)) * 2 + (high ? 1 : 0)] = __float2half_rn((v - h) * tc::kLoScale);
}

// wg::split_weights_host's layout: hi and lo 512 floats apart in the tile's K-major image.
__global__ void split_wg(const float* __restrict__ w, int cout, int cin, int ks, float* __restrict__ out) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(cout) * cin * ks) return;
  const int k = static_cast<int>(i % ks), ci = static_cast<int>(i / ks % cin), co = static_cast<int>(i / ks / cin);
  const int chunks = cin / tc::kChunk, tile = co / wg::kBlockCout, row = co % wg::kBlockCout;
  const int chunk = ci / tc::kChunk, half = (ci % 8) / 4, j = ci % 4;
  const size_t unit = (static_cast<size_t>(tile) * chunks + chunk) * ks * 1024;
  const size_t hi_at = unit + (static_cast<size_t>(k) * 2 * 2 + half) * 256 + row * 4 + j;
  tc::split_tf32_host(w[i], out[hi_at], out[hi_at + 512]);
}

}  // namespace

std::shared_ptr<DeviceFloats> split_weights_on_device(const std::vector<float>& w, int cout, int cin, int ks, bool hopper,
                                                      const std::string& node) {
  const size_t floats = hopper ? wg::weight_floats(cin, cout, ks) : tc::split_weight_floats(cin, cout, ks);
  auto d = std::make_shared<DeviceFloats>();
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&d->ptr), floats * sizeof(float)), "split conv weights", node);
  DeviceFloats staged;  // the float32 weights, freed on return
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&staged.ptr), w.size() * sizeof(float)), "conv weights to split", node);
  // Its own stream's order (the per-thread default stream), then one wait: compile time, not a run.
  const cudaStream_t s = cudaStreamPerThread;
  check_cuda(cudaMemsetAsync(d->ptr, 0, floats * sizeof(float), s), "zero split conv weights", node);
  check_cuda(cudaMemcpyAsync(staged.ptr, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, s), "upload conv weights", node);
  const long long n = static_cast<long long>(cout) * cin * ks;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  if (hopper) split_wg<<<blocks, threads, 0, s>>>(staged.ptr, cout, cin, ks, d->ptr);
  else split_tc<<<blocks, threads, 0, s>>>(staged.ptr, cout, cin, ks, d->ptr);
  check_cuda(cudaGetLastError(), "weight split launch", node);
  check_cuda(cudaStreamSynchronize(s), "weight split", node);
  return d;
}

}  // namespace lockstep::cuda
