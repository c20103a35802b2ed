// Probe (issue 6, strict fp32 on tensor cores): an implicit-GEMM 1-D convolution with
// error-compensated TF32 (3xTF32: a_hi*b_hi + a_hi*b_lo + a_lo*b_hi on mma.sync m16n8k8,
// float accumulation, fixed reduction order, bias fused into the store) against cuDNN's strict
// FMA path, on the HiFi-GAN/flow shapes. Error against a float64 convolution on the GPU.
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 conv3xtf32_probe.cu -lcudnn -o probe
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)
#define DK(x) do { cudnnStatus_t e_ = (x); if (e_ != CUDNN_STATUS_SUCCESS) { std::printf("cuDNN %s at %d\n", cudnnGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

constexpr int BM = 64, BN = 128, CKI = 8, THREADS = 256;

__device__ __forceinline__ void mma_tf32(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// hi = v with the low 13 mantissa bits cleared (a TF32 value), lo = v - hi (exact in float32).
__device__ __forceinline__ void split(float v, uint32_t& hi, uint32_t& lo) {
  hi = __float_as_uint(v) & 0xffffe000u;
  lo = __float_as_uint(v - __uint_as_float(hi));
}

// y[co, t] = bias[co] + sum_{ci, k} w[co, ci, k] * x[ci, t + k*d - pad]   (batch 1, NCW)
// MODE 3: 3xTF32; MODE 1: plain TF32 (for the error comparison only).
template <int MODE>
__global__ void __launch_bounds__(THREADS) conv1d_tc(const float* __restrict__ x, const float* __restrict__ w,
                                                      const float* __restrict__ bias, float* __restrict__ y, int cin,
                                                      int cout, int t_in, int t_out, int ks, int dil, int pad, int xw) {
  extern __shared__ float smem[];
  float* xs = smem;                 // [CKI][xw]
  float* ws = smem + CKI * xw;      // [BM][CKI*ks + 4]
  const int wrow = CKI * ks + 4;
  const int co0 = blockIdx.y * BM, t0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int wm = (warp / 4) * 32, wn = (warp % 4) * 32;  // warp tile 32 (co) x 32 (t)
  float acc[2][4][4] = {};
  const int span = BN + (ks - 1) * dil;
  for (int ci0 = 0; ci0 < cin; ci0 += CKI) {
    __syncthreads();
    for (int i = threadIdx.x; i < CKI * span; i += THREADS) {
      const int r = i / span, u = i % span, t = t0 - pad + u;
      xs[r * xw + u] = t >= 0 && t < t_in ? x[static_cast<size_t>(ci0 + r) * t_in + t] : 0.0f;
    }
    for (int i = threadIdx.x; i < BM * CKI * ks; i += THREADS) {
      const int m = i / (CKI * ks), j = i % (CKI * ks);
      ws[m * wrow + j] = co0 + m < cout ? w[(static_cast<size_t>(co0 + m) * cin + ci0) * ks + j] : 0.0f;
    }
    __syncthreads();
    // Each chunk's products accumulate from zero on the tensor cores, then join acc with IEEE
    // float adds: tensor-core accumulation is not round-to-nearest, and its bias grows with K.
    float part[2][4][4] = {};
    for (int k = 0; k < ks; ++k) {
      uint32_t ah[2][4], al[2][4], bh[4][2], bl[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const float* r0 = ws + (wm + mi * 16 + g) * wrow + k;
        const float* r1 = r0 + 8 * wrow;
        split(r0[q * ks], ah[mi][0], al[mi][0]);
        split(r1[q * ks], ah[mi][1], al[mi][1]);
        split(r0[(q + 4) * ks], ah[mi][2], al[mi][2]);
        split(r1[(q + 4) * ks], ah[mi][3], al[mi][3]);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int col = wn + ni * 8 + g + k * dil;
        split(xs[q * xw + col], bh[ni][0], bl[ni][0]);
        split(xs[(q + 4) * xw + col], bh[ni][1], bl[ni][1]);
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          if (MODE == 3) {  // small terms first, then the large one
            mma_tf32(part[mi][ni], al[mi], bh[ni]);
            mma_tf32(part[mi][ni], ah[mi], bl[ni]);
          }
          mma_tf32(part[mi][ni], ah[mi], bh[ni]);
        }
    }
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] += part[mi][ni][e];
  }
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int co = co0 + wm + mi * 16 + g + (e >= 2 ? 8 : 0), t = t0 + wn + ni * 8 + 2 * q + (e & 1);
        if (co < cout && t < t_out) y[static_cast<size_t>(co) * t_out + t] = acc[mi][ni][e] + bias[co];
      }
}

__global__ void conv1d_f64(const float* x, const float* w, const float* bias, double* y, int cin, int cout, int t_in,
                           int t_out, int ks, int dil, int pad) {
  const size_t total = static_cast<size_t>(cout) * t_out;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int co = static_cast<int>(i / t_out), t = static_cast<int>(i % t_out);
    double s = bias[co];
    for (int ci = 0; ci < cin; ++ci)
      for (int k = 0; k < ks; ++k) {
        const int tt = t + k * dil - pad;
        if (tt >= 0 && tt < t_in) s += static_cast<double>(w[(static_cast<size_t>(co) * cin + ci) * ks + k]) * x[static_cast<size_t>(ci) * t_in + tt];
      }
    y[i] = s;
  }
}

__global__ void add_bias(float* y, const float* b, int cout, int t) {
  const size_t total = static_cast<size_t>(cout) * t;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] += b[i / t];
}

double rel_l2(const std::vector<float>& a, const std::vector<double>& r) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += (a[i] - r[i]) * (a[i] - r[i]);
    den += r[i] * r[i];
  }
  return std::sqrt(num / den);
}

template <class F>
float median_ms(F f, int reps = 15) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  f();
  std::vector<float> ts;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

int main() {
  struct Shape { int c, t, ks, d; const char* what; };
  const Shape shapes[] = {
      {512, 1024, 7, 1, "ljs conv_pre-like 512ch T1024 k7"},  {256, 8192, 3, 1, "ljs rb 256ch T8192 k3 d1"},
      {256, 8192, 11, 5, "ljs rb 256ch T8192 k11 d5"},        {128, 65536, 7, 3, "ljs rb 128ch T65536 k7 d3"},
      {64, 131072, 3, 1, "ljs rb 64ch T131072 k3 d1"},       {32, 262144, 11, 1, "ljs rb 32ch T262144 k11 d1"},
      {128, 8192, 3, 1, "seed rb 128ch T8192 k3 d1"},          {144, 1024, 5, 1, "flow 144ch T1024 k5"}};
  cudnnHandle_t h;
  DK(cudnnCreate(&h));
  std::printf("| shape | GFLOP | cuDNN fp32 ms | TFLOP/s | rel L2 | 3xTF32 ms | TFLOP/s | rel L2 | 1xTF32 rel L2 | speedup |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  for (const Shape& s : shapes) {
    const int cin = s.c, cout = s.c, T = s.t, ks = s.ks, d = s.d, pad = (ks - 1) * d / 2;
    std::vector<float> hx(static_cast<size_t>(cin) * T), hw(static_cast<size_t>(cout) * cin * ks), hb(cout);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : hx) v = nd(rng);
    const float ws = 1.0f / std::sqrt(static_cast<float>(cin * ks));
    for (auto& v : hw) v = nd(rng) * ws;
    for (auto& v : hb) v = nd(rng) * 0.1f;
    float *x, *w, *b, *y;
    double* yr;
    const size_t ny = static_cast<size_t>(cout) * T;
    CK(cudaMalloc(&x, hx.size() * 4));
    CK(cudaMalloc(&w, hw.size() * 4));
    CK(cudaMalloc(&b, hb.size() * 4));
    CK(cudaMalloc(&y, ny * 4));
    CK(cudaMalloc(&yr, ny * 8));
    CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    conv1d_f64<<<4096, 256>>>(x, w, b, yr, cin, cout, T, T, ks, d, pad);
    CK(cudaGetLastError());
    std::vector<double> ref(ny);
    CK(cudaMemcpy(ref.data(), yr, ny * 8, cudaMemcpyDeviceToHost));
    std::vector<float> out(ny);
    // cuDNN strict fp32 (FMA math, deterministic, heuristics' first qualifying algo), then bias.
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    DK(cudnnCreateTensorDescriptor(&xd));
    DK(cudnnCreateTensorDescriptor(&yd));
    DK(cudnnCreateFilterDescriptor(&wd));
    DK(cudnnCreateConvolutionDescriptor(&cd));
    DK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, cin, 1, T));
    DK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, cout, 1, T));
    DK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cout, cin, 1, ks));
    DK(cudnnSetConvolution2dDescriptor(cd, 0, pad, 1, 1, 1, d, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int n = 0;
    DK(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, 8, &n, perf));
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC && perf[i].mathType == CUDNN_FMA_MATH &&
          (perf[i].algo <= CUDNN_CONVOLUTION_FWD_ALGO_DIRECT)) { algo = perf[i].algo; break; }
    size_t wsb = 0;
    DK(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo, &wsb));
    void* wsp = nullptr;
    if (wsb) CK(cudaMalloc(&wsp, wsb));
    auto cudnn_run = [&] {
      const float one = 1.f, zero = 0.f;
      DK(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, wsp, wsb, &zero, yd, y));
      add_bias<<<4096, 256>>>(y, b, cout, T);
    };
    const float ms_dnn = median_ms(cudnn_run);
    CK(cudaMemcpy(out.data(), y, ny * 4, cudaMemcpyDeviceToHost));
    const double e_dnn = rel_l2(out, ref);
    const int xw = ((BN + (ks - 1) * d + 31) / 32) * 32 + 8;  // row stride = 8 mod 32 banks
    const size_t sm = (static_cast<size_t>(CKI) * xw + static_cast<size_t>(BM) * (CKI * ks + 4)) * 4;
    CK(cudaFuncSetAttribute(conv1d_tc<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sm)));
    CK(cudaFuncSetAttribute(conv1d_tc<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sm)));
    const dim3 grid((T + BN - 1) / BN, (cout + BM - 1) / BM);
    CK(cudaMemset(y, 0xff, ny * 4));  // NaN poison: every element must be written
    auto tc3 = [&] { conv1d_tc<3><<<grid, THREADS, sm>>>(x, w, b, y, cin, cout, T, T, ks, d, pad, xw); };
    const float ms_tc = median_ms(tc3);
    CK(cudaGetLastError());
    CK(cudaMemcpy(out.data(), y, ny * 4, cudaMemcpyDeviceToHost));
    const double e_tc = rel_l2(out, ref);
    conv1d_tc<1><<<grid, THREADS, sm>>>(x, w, b, y, cin, cout, T, T, ks, d, pad, xw);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), y, ny * 4, cudaMemcpyDeviceToHost));
    const double e_tc1 = rel_l2(out, ref);
    const double gflop = 2.0 * cin * cout * ks * static_cast<double>(T) / 1e9;
    std::printf("| %s | %.2f | %.3f (algo %d) | %.1f | %.2e | %.3f | %.1f | %.2e | %.2e | %.2fx |\n", s.what, gflop, ms_dnn,
                static_cast<int>(algo), gflop / ms_dnn, e_dnn, ms_tc, gflop / ms_tc, e_tc, e_tc1, ms_dnn / ms_tc);
    std::fflush(stdout);
    cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y); cudaFree(yr);
    if (wsp) cudaFree(wsp);
    cudnnDestroyTensorDescriptor(xd); cudnnDestroyTensorDescriptor(yd); cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
  }
  cudnnDestroy(h);
  return 0;
}
