// cuDNN's view of one convolution (descriptors, the algorithm, its workspace) and the choice of
// that algorithm (conv_algo.cu): deterministic, precision-preserving, a function of the shape alone.
#pragma once

#include <cudnn.h>

#include <string>

#include "backends/cuda/device.h"

namespace lockstep::cuda {

struct CudnnConv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnTensorDescriptor_t bias = nullptr;          // fused bias + residual only
  cudnnActivationDescriptor_t identity = nullptr;  // fused bias + residual only
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd{};
  size_t workspace = 0;
  void* reduced_w = nullptr;  // fp16/bf16 weights converted at compile (own allocation)
  CudnnConv() {
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&conv);
  }
  ~CudnnConv() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (identity) cudnnDestroyActivationDescriptor(identity);
    if (reduced_w) cudaFree(reduced_w);
  }
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
};

// The forward algorithm of p (descriptors set): cuDNN's heuristics (no timing) filtered to
// deterministic, FMA-only (strict fp32), precision-preserving choices; reserves its workspace.
void choose_fwd(Context& ctx, CudnnConv& p, const std::string& node);
// The backward-data algorithm (ConvTranspose through cuDNN): ALGO_1, the deterministic one.
void choose_bwd(Context& ctx, CudnnConv& p, const std::string& node);

}  // namespace lockstep::cuda
