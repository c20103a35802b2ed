// The WN gate (tanh . sigmoid of a split conv's two halves) computed where the split tensor-core
// conv's ranges merge (Absorption in device.h): by a second kernel over the partial sums, or inside
// a thread-block cluster. Both give the bits of the unabsorbed Slice, unary and Mul kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "backends/channel_consumers.h"
#include "backends/cuda/conv_tc_kernel.h"
#include "backends/cuda/ew_ops.h"

namespace lockstep::cuda {

// The WN gate absorbed into a split conv's merge (backends::gate_pattern): per gate output
// (b, c, t), the merged conv outputs of channels a + c and b + c (bias added, as split_reduce
// stores them) through the two unary nodes' ops, then their Mul, with elementwise.cu's float ops
// in the graph's operand order: the bits of the merge, Slice views, unary and Mul kernels.
struct GateParams {
  float* y = nullptr;  // [n][len][t_out]
  int a = 0, b = 0, len = 0, code_a = kIdentity, code_b = kIdentity, a_is_lhs = 0;
  float alpha_a = 0.0f, alpha_b = 0.0f;
};

// The merge kernel: p's partial sums (split_planes 1 or 2) into the gate gp.y.
cudaError_t launch_gate_merge(const tc::Params& p, const GateParams& gp, int n, cudaStream_t s);

// The WN gate conv's split ranges merged in a thread-block cluster (one block per range, the
// cluster along grid z): no partial sums in global memory and no second kernel. The weights' rows
// are permuted so that the 64-row tile `tile` holds conv rows a + 32*tile + i (rows 0..31) and
// b + 32*tile + i (rows 32..63): both halves of gate channels 32*tile + i meet in one cluster
// (rows past the gate's len are zero weights; p.cout counts them, the real conv has 2*len rows).
// Each block leaves its range's sums in its shared memory; block `rank` then sums rows i of the
// ranges in range order (merged_sum's order), adds the bias, and stores the gate (gp.y) or, in
// eager runs (gp.y null), the conv output y at its real rows: split_reduce(_gate)'s float ops, the
// same bits.
inline constexpr int kGateClusterRows = 32;  // gate channels per 64-row tile
// The cluster kernel's conv rows for a gate of `len` channels (64 per 32 gate channels).
inline int gate_cluster_cout(int len) { return tc::Tile<2, 2>::bm * ((len + kGateClusterRows - 1) / kGateClusterRows); }
// Weights w[2*len][cin][ks] in the cluster kernel's row order (gate_cluster_cout rows, zeros past len).
std::vector<float> gate_cluster_weights(const std::vector<float>& w, const GateParams& gp, int cin, int ks);
// The conv and its merge as one cluster launch (p.cluster_tile set, p.cout = gate_cluster_cout,
// weights in the cluster's row order).
cudaError_t launch_gate_cluster(const tc::Params& p, const GateParams& gp, int ks, int n, size_t smem, cudaStream_t s);
// Host, once per conv before any launch (not during capture): opts the kernel into `optin` bytes
// of shared memory and tells whether every cluster of p's grid runs at once. A second wave costs
// more than the merge kernel saves (H200, 2026-12-01: low's 96 clusters of 4 where 92 fit, gate
// convs 26 -> 37 us each). False, with the error cleared, where the device cannot answer.
bool gate_clusters_fit(const tc::Params& p, int ks, int n, int optin, size_t smem);

// Whether the gate's split merge can run in a cluster (LOCKSTEP_CUDA_CONV_TC_GATE_CLUSTER=0: never):
// the 4-warp 64x64 tile split in 4 or 8 ranges (one plane), the gate's halves the conv's two
// halves, and the tile's shared memory large enough for its sums. H200, 2026-12-01, 16 gate convs
// against the merge kernel: 4-8 ranges on small grids (128 frames) 0.217 -> 0.204 ms (seed),
// 0.251 -> 0.234 (low, ljs); 2 ranges (seed at 1024 frames) 0.266 -> 0.293, so not there.
bool gate_cluster_ok(const backends::GatePattern& gate, const tc::Params& base, tc::TileKind tile, int cout, int ks, size_t smem);

}  // namespace lockstep::cuda
