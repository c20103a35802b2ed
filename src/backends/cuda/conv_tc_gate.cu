// The WN gate in a split tensor-core conv's merge (conv_tc_gate.h): the merge kernel over the
// partial sums, and the cluster kernel that merges the ranges in distributed shared memory.
#include "backends/cuda/conv_tc_gate.h"

#include <cooperative_groups.h>

#include <algorithm>

#include "backends/cuda/device.h"

namespace lockstep::cuda {
namespace {

__global__ void split_reduce_gate(tc::Params p, GateParams gp, int n) {
  const size_t gplane = static_cast<size_t>(gp.len) * p.t_out, total = static_cast<size_t>(n) * gplane;
  for (size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; idx < total; idx += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t b = idx / gplane, i = idx % gplane;
    const int c = static_cast<int>(i / p.t_out), t = static_cast<int>(i % p.t_out);
    const int ra = gp.a + c, rb = gp.b + c;
    const float xa = tc::finish(p, tc::merged_sum(p, b, static_cast<size_t>(ra) * p.t_out + t), ra, nullptr);
    const float xb = tc::finish(p, tc::merged_sum(p, b, static_cast<size_t>(rb) * p.t_out + t), rb, nullptr);
    const float ua = apply(gp.code_a, xa, xa, gp.alpha_a), ub = apply(gp.code_b, xb, xb, gp.alpha_b);
    gp.y[idx] = gp.a_is_lhs ? apply(kMul, ua, ub, 0.0f) : apply(kMul, ub, ua, 0.0f);
  }
}

__device__ __forceinline__ int gate_cluster_row(const GateParams& gp, int tile, int i) {  // conv row of tile row i
  return (i < kGateClusterRows ? gp.a : gp.b) + kGateClusterRows * tile + i % kGateClusterRows;
}

template <int KS>
__global__ void __launch_bounds__(tc::Tile<2, 2>::threads, tc::Tile<2, 2>::minb_cap)
    conv1d_3xtf32_gate_cluster(const __grid_constant__ tc::Params p, const __grid_constant__ GateParams gp) {
  using C = tc::Config<KS>;
  constexpr int kBn = tc::Tile<2, 2>::bn;
  if (!p.small_f16 || tc::conv_block<true, KS, C::stages, C::unroll, 2, 2>(p)) tc::conv_block_tf32<KS, C::stages, C::unroll, 2, 2>(p);
  extern __shared__ __align__(16) float tc_smem[];
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every range's sums are in its block's shared memory
  const int splits = p.splits, rank = static_cast<int>(blockIdx.z) % splits, batch = static_cast<int>(blockIdx.z) / splits;
  const int tile = static_cast<int>(blockIdx.y), t0 = static_cast<int>(blockIdx.x) * kBn, per = kGateClusterRows / splits;
  constexpr int kQuads = kBn / 4;  // four steps per thread: 16-byte reads of the other blocks' sums
  auto sum_at = [&](int at) {      // the ranges' sums at tile offset `at`, added in range order
    float4 v = *reinterpret_cast<const float4*>(cluster.map_shared_rank(tc_smem + at, 0));
    for (int s = 1; s < splits; ++s) {
      const float4 a = *reinterpret_cast<const float4*>(cluster.map_shared_rank(tc_smem + at, s));
      v = make_float4(v.x + a.x, v.y + a.y, v.z + a.z, v.w + a.w);
    }
    return v;
  };
  for (int idx = threadIdx.x; idx < per * kQuads; idx += blockDim.x) {
    const int i = rank * per + idx / kQuads, tt = 4 * (idx % kQuads), t = t0 + tt;
    if (t >= p.t_out || kGateClusterRows * tile + i >= gp.len) continue;
    const float4 qa = sum_at(i * kBn + tt), qb = sum_at((i + kGateClusterRows) * kBn + tt);
    const float va[4] = {qa.x, qa.y, qa.z, qa.w}, vb[4] = {qb.x, qb.y, qb.z, qb.w};
    const int ra = gate_cluster_row(gp, tile, i), rb = gate_cluster_row(gp, tile, i + kGateClusterRows);
    const int steps = min(4, p.t_out - t);
    for (int j = 0; j < steps; ++j) {
      const float xa = tc::finish(p, va[j], ra, nullptr), xb = tc::finish(p, vb[j], rb, nullptr);
      if (gp.y) {
        const float ua = apply(gp.code_a, xa, xa, gp.alpha_a), ub = apply(gp.code_b, xb, xb, gp.alpha_b);
        const size_t at = (static_cast<size_t>(batch) * gp.len + kGateClusterRows * tile + i) * p.t_out + t + j;
        gp.y[at] = gp.a_is_lhs ? apply(kMul, ua, ub, 0.0f) : apply(kMul, ub, ua, 0.0f);
      } else {
        float* y = p.y + static_cast<size_t>(batch) * 2 * gp.len * p.t_out;
        y[static_cast<size_t>(ra) * p.t_out + t + j] = xa;
        y[static_cast<size_t>(rb) * p.t_out + t + j] = xb;
      }
    }
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
}

// The cluster launch's configuration: one cluster of p.splits blocks along z per output tile
// (`attr` must outlive it).
cudaLaunchConfig_t cluster_config(const tc::Params& p, int n, size_t smem, cudaStream_t s, cudaLaunchAttribute& attr) {
  using T = tc::Tile<2, 2>;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 1;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = static_cast<unsigned>(p.splits);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3((p.t_out + T::bn - 1) / T::bn, (p.cout + T::bm - 1) / T::bm, n * p.splits);
  config.blockDim = dim3(T::threads);
  config.dynamicSmemBytes = smem;
  config.stream = s;
  config.attrs = &attr;
  config.numAttrs = 1;
  return config;
}

// The kernel for kernel size ks (3, 5, 7, 11), or nullptr.
using ClusterKernel = void (*)(tc::Params, GateParams);
ClusterKernel cluster_kernel(int ks) {
  switch (ks) {
    case 3: return conv1d_3xtf32_gate_cluster<3>;
    case 5: return conv1d_3xtf32_gate_cluster<5>;
    case 7: return conv1d_3xtf32_gate_cluster<7>;
    case 11: return conv1d_3xtf32_gate_cluster<11>;
    default: return nullptr;
  }
}

}  // namespace

cudaError_t launch_gate_merge(const tc::Params& p, const GateParams& gp, int n, cudaStream_t s) {
  // One output per thread: a float4 form (four steps per thread) was slower here, 16 gate convs
  // +0.03 ms on every preset (H200, 2026-12-01), unlike split_reduce's.
  const size_t total = static_cast<size_t>(n) * gp.len * p.t_out;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + 255) / 256, size_t{65535} * 4));
  split_reduce_gate<<<blocks, 256, 0, s>>>(p, gp, n);
  return cudaGetLastError();
}

cudaError_t launch_gate_cluster(const tc::Params& p, const GateParams& gp, int ks, int n, size_t smem, cudaStream_t s) {
  const ClusterKernel kernel = cluster_kernel(ks);
  if (!kernel) return cudaErrorInvalidValue;
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = cluster_config(p, n, smem, s, attr);
  return cudaLaunchKernelEx(&config, kernel, p, gp);
}

bool gate_clusters_fit(const tc::Params& p, int ks, int n, int optin, size_t smem) {
  const ClusterKernel kernel = cluster_kernel(ks);
  if (!kernel) return false;
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = cluster_config(p, n, smem, nullptr, attr);
  int max_clusters = 0;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) != cudaSuccess ||
      cudaOccupancyMaxActiveClusters(&max_clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so later calls are not blamed for it
    return false;
  }
  return static_cast<long>(config.gridDim.x) * config.gridDim.y * n <= max_clusters;
}

std::vector<float> gate_cluster_weights(const std::vector<float>& w, const GateParams& gp, int cin, int ks) {
  const size_t row = static_cast<size_t>(cin) * ks;
  const int rows = gate_cluster_cout(gp.len);
  std::vector<float> out(static_cast<size_t>(rows) * row, 0.0f);
  for (int r = 0; r < rows; ++r) {  // tile j: rows a + 32j + i, then b + 32j + i
    const int tile_row = r % tc::Tile<2, 2>::bm, channel = kGateClusterRows * (r / tc::Tile<2, 2>::bm) + tile_row % kGateClusterRows;
    if (channel >= gp.len) continue;  // zero weights past the gate's channels
    const int real = (tile_row < kGateClusterRows ? gp.a : gp.b) + channel;
    std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(real * row), row, out.begin() + static_cast<std::ptrdiff_t>(r * row));
  }
  return out;
}

// The rule and its measurements: conv_tc_gate.h.
bool gate_cluster_ok(const backends::GatePattern& gate, const tc::Params& base, tc::TileKind tile, int cout, int ks, size_t smem) {
  const int64_t len = gate.a.len;
  return !env_is("LOCKSTEP_CUDA_CONV_TC_GATE_CLUSTER", "0") && tile == tc::TileKind::k64x64 && base.splits >= 4 &&
         base.splits <= 8 && kGateClusterRows % base.splits == 0 && base.split_planes == 1 && tc::supported_ks(ks) &&
         gate.b.len == len && cout == 2 * len &&
         ((gate.a.c0 == 0 && gate.b.c0 == len) || (gate.a.c0 == len && gate.b.c0 == 0)) &&
         smem >= sizeof(float) * tc::Tile<2, 2>::bm * tc::Tile<2, 2>::bn;
}

}  // namespace lockstep::cuda
