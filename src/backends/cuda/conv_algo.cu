// The cuDNN algorithm of a Conv or ConvTranspose: cuDNN's heuristics, no timing (a timed search
// would make the pick, and so the bits, depend on the machine's load).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/conv_cudnn.h"

namespace lockstep::cuda {
namespace {

constexpr size_t kMaxConvWorkspace = size_t{512} << 20;

bool precise_fwd(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}

// cuDNN's heuristics cost 1-2 ms a conv, and a voice meets a new time length at every call. For
// a 1-D conv (H = 1) they are asked once per geometry, at a canonical length, and the pick is
// remembered: a pure function of the geometry (the same algorithm whichever lengths a process
// met first), never a search per shape. Returns false for other convs.
constexpr int kCanonicalWidth = 1024;

bool canonical_heuristics(Context& ctx, const CudnnConv& p, const std::string& node,
                          cudnnConvolutionFwdAlgoPerf_t* perf, int* returned) {
  cudnnDataType_t dt;
  int n, c, h, w, ns, cs, hs, ws, k, fc, fh, fw, ph, pw, u, v, dh, dw, groups;
  cudnnTensorFormat_t format;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  cudnnMathType_t math;
  if (cudnnGetTensor4dDescriptor(p.x, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws) != CUDNN_STATUS_SUCCESS ||
      cudnnGetFilter4dDescriptor(p.w, &dt, &format, &k, &fc, &fh, &fw) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolution2dDescriptor(p.conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &compute) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionGroupCount(p.conv, &groups) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionMathType(p.conv, &math) != CUDNN_STATUS_SUCCESS || h != 1 || fh != 1)
    return false;
  const std::string key = std::to_string(static_cast<int>(dt)) + "," + std::to_string(n) + "," + std::to_string(c) + "," +
                          std::to_string(k) + "," + std::to_string(fc) + "," + std::to_string(fw) + "," +
                          std::to_string(ph) + "," + std::to_string(pw) + "," + std::to_string(u) + "," +
                          std::to_string(v) + "," + std::to_string(dh) + "," + std::to_string(dw) + "," +
                          std::to_string(groups) + "," + std::to_string(static_cast<int>(math)) + "," +
                          std::to_string(static_cast<int>(ctx.precision));
  struct Picks {
    std::mutex mutex;
    std::map<std::string, std::vector<cudnnConvolutionFwdAlgoPerf_t>> by_geometry;
  };
  static Picks picks;
  {
    std::lock_guard<std::mutex> lock(picks.mutex);
    if (auto it = picks.by_geometry.find(key); it != picks.by_geometry.end()) {
      std::copy(it->second.begin(), it->second.end(), perf);
      *returned = static_cast<int>(it->second.size());
      return true;
    }
  }
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  check_cudnn(cudnnCreateTensorDescriptor(&x), "canonical input descriptor", node);
  check_cudnn(cudnnCreateTensorDescriptor(&y), "canonical output descriptor", node);
  int on, oc, oh, ow;
  cudnnStatus_t status = cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, dt, n, c, 1, kCanonicalWidth);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnGetConvolution2dForwardOutputDim(p.conv, x, p.w, &on, &oc, &oh, &ow);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, dt, on, oc, oh, ow);
  if (status == CUDNN_STATUS_SUCCESS)
    status = cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, x, p.w, p.conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, returned, perf);
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(y);
  check_cudnn(status, "forward heuristics at the canonical length", node);
  std::lock_guard<std::mutex> lock(picks.mutex);
  picks.by_geometry.emplace(key, std::vector<cudnnConvolutionFwdAlgoPerf_t>(perf, perf + *returned));
  return true;
}

}  // namespace

void choose_fwd(Context& ctx, CudnnConv& p, const std::string& node) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  if (!canonical_heuristics(ctx, p, node, perf, &returned))
    check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, p.x, p.w, p.conv, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                "forward heuristics", node);
  bool found = false;
  // LOCKSTEP_CUDA_FWD_ALGO=n (experiments): take algorithm n wherever it qualifies.
  const char* forced = std::getenv("LOCKSTEP_CUDA_FWD_ALGO");
  for (int pass = forced && *forced ? 0 : 1; pass < 2 && !found; ++pass)
    for (int i = 0; i < returned && !found; ++i) {
      const auto& r = perf[i];
      const bool math_ok = ctx.precision == Precision::kFp32 ? r.mathType == CUDNN_FMA_MATH : true;  // fast modes: whichever the heuristics rank first
      if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC || !math_ok ||
          !precise_fwd(r.algo) || r.memory > kMaxConvWorkspace)
        continue;
      if (pass == 0 && static_cast<int>(r.algo) != std::atoi(forced)) continue;
      p.fwd = r.algo;
      if (ctx.precision != Precision::kFp32)
        check_cudnn(cudnnSetConvolutionMathType(p.conv, r.mathType), "math type", node);
      found = true;
    }
  if (!found) p.fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;  // deterministic, no workspace
  // The canonical length's pick at this length: unsupported or over the workspace cap, the
  // implicit GEMM instead (still a function of the shape alone).
  if (cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, p.x, p.w, p.conv, p.y, p.fwd, &p.workspace) != CUDNN_STATUS_SUCCESS ||
      p.workspace > kMaxConvWorkspace) {
    p.fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    if (ctx.precision != Precision::kFp32)
      check_cudnn(cudnnSetConvolutionMathType(p.conv, CUDNN_DEFAULT_MATH), "math type", node);
  }
  check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, p.x, p.w, p.conv, p.y, p.fwd, &p.workspace), "forward workspace", node);
  ctx.need_workspace(p.workspace);
}

void choose_bwd(Context& ctx, CudnnConv& p, const std::string& node) {
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int returned = 0;
  check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.cudnn, p.w, p.y, p.conv, p.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf),
              "backward-data heuristics", node);
  // ALGO_1 is the one deterministic, non-FFT, non-Winograd backward-data algorithm.
  p.bwd = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  for (int i = 0; i < returned; ++i)
    if (perf[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 && perf[i].status != CUDNN_STATUS_SUCCESS)
      throw Error(ErrorCode::UnsupportedAttribute, "cuda: cuDNN has no deterministic algorithm for this ConvTranspose", node, "ConvTranspose");
  check_cudnn(cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.cudnn, p.w, p.y, p.conv, p.x, p.bwd, &p.workspace), "backward-data workspace", node);
  ctx.need_workspace(p.workspace);
}

}  // namespace lockstep::cuda
