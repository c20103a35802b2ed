// Probe (issue 6, strict fp32 on tensor cores): implicit-GEMM 1-D convolution with error-compensated
// TF32 (3xTF32: a_hi*b_hi + a_hi*b_lo + a_lo*b_hi on mma.sync m16n8k8) against cuDNN's strict FMA
// path on the HiFi-GAN / flow shapes; error against a float64 convolution on the GPU.
// One binary answers the accuracy question (split by mask vs round-to-nearest, where the tensor
// core's truncating accumulation is flushed into IEEE float adds) and the speed question (a
// cp.async-pipelined kernel with weights split once, as a compile step would).
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 conv3xtf32_probe.cu -lcudnn -o probe
// Run: probe [--all] [--only TEXT] [--post]: --all adds the accuracy study's simple kernels, --only
// keeps the shapes whose label contains TEXT, --post times the backend kernel with a fused
// "+ residual, LeakyRelu" epilogue (its rel L2 is then against the plain conv: ignore it).
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../src/backends/cuda/conv_tc_kernel.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)
#define DK(x) do { cudnnStatus_t e_ = (x); if (e_ != CUDNN_STATUS_SUCCESS) { std::printf("cuDNN %s at %d\n", cudnnGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

constexpr int BM = 64, BN = 128, CKI = 8, THREADS = 256;

__device__ __forceinline__ void mma_tf32(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// c = a*b from zero (no accumulator input): the tensor core rounds one 8-term sum.
__device__ __forceinline__ void mma_tf32_zero(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
               : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

__device__ __forceinline__ uint32_t tf32_rna(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return r;
}

// SPLIT 0: hi = v with the low 13 mantissa bits cleared, lo = v - hi (lo truncated by the MMA).
// SPLIT 1: hi = round-to-nearest TF32 of v, lo = round-to-nearest TF32 of v - hi.
template <int SPLIT>
__device__ __forceinline__ void split(float v, uint32_t& hi, uint32_t& lo) {
  if (SPLIT == 0) {
    hi = __float_as_uint(v) & 0xffffe000u;
    lo = __float_as_uint(v - __uint_as_float(hi));
  } else {
    hi = tf32_rna(v);
    lo = tf32_rna(v - __uint_as_float(hi));
  }
}

// Accumulation schemes of the simple kernel:
//   ACC_ALL:        all three products into one tensor-core accumulator over the whole reduction.
//   ACC_CHUNK:      per 8-channel chunk (all taps) from zero on the tensor cores, then IEEE add.
//   ACC_CHUNK_SEP:  hi*hi per chunk from zero then IEEE add; the two small products in their own
//                   tensor-core accumulator over the whole reduction (2^-11 smaller: its truncation
//                   error is negligible), added once at the end.
//   ACC_STEP_SEP:   hi*hi per tap (one 8-term mma from zero) then IEEE add; small terms as above.
//   ACC_1X:         plain TF32 (round-to-nearest inputs), chunked; error comparison only.
enum { ACC_ALL, ACC_CHUNK, ACC_CHUNK_SEP, ACC_STEP_SEP, ACC_1X };

// y[co, t] = bias[co] + sum_{ci, k} w[co, ci, k] * x[ci, t + k*d - pad]   (batch 1, NCW)
template <int SPLIT, int ACC>
__global__ void __launch_bounds__(THREADS) conv1d_tc(const float* __restrict__ x, const float* __restrict__ w,
                                                      const float* __restrict__ bias, float* __restrict__ y, int cin,
                                                      int cout, int t_in, int t_out, int ks, int dil, int pad, int xw) {
  extern __shared__ float smem[];
  float* xs = smem;             // [CKI][xw]
  float* ws = smem + CKI * xw;  // [BM][CKI*ks + 4]
  const int wrow = CKI * ks + 4;
  const int co0 = blockIdx.y * BM, t0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int wm = (warp / 4) * 32, wn = (warp % 4) * 32;  // warp tile 32 (co) x 32 (t)
  float acc[2][4][4] = {}, small[2][4][4] = {};
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
    float part[2][4][4] = {};
    for (int k = 0; k < ks; ++k) {
      uint32_t ah[2][4], al[2][4], bh[4][2], bl[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const float* r0 = ws + (wm + mi * 16 + g) * wrow + k;
        const float* r1 = r0 + 8 * wrow;
        split<SPLIT>(r0[q * ks], ah[mi][0], al[mi][0]);
        split<SPLIT>(r1[q * ks], ah[mi][1], al[mi][1]);
        split<SPLIT>(r0[(q + 4) * ks], ah[mi][2], al[mi][2]);
        split<SPLIT>(r1[(q + 4) * ks], ah[mi][3], al[mi][3]);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int col = wn + ni * 8 + g + k * dil;
        split<SPLIT>(xs[q * xw + col], bh[ni][0], bl[ni][0]);
        split<SPLIT>(xs[(q + 4) * xw + col], bh[ni][1], bl[ni][1]);
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          if (ACC == ACC_ALL) {
            mma_tf32(acc[mi][ni], al[mi], bh[ni]);
            mma_tf32(acc[mi][ni], ah[mi], bl[ni]);
            mma_tf32(acc[mi][ni], ah[mi], bh[ni]);
          } else if (ACC == ACC_CHUNK) {
            mma_tf32(part[mi][ni], al[mi], bh[ni]);
            mma_tf32(part[mi][ni], ah[mi], bl[ni]);
            mma_tf32(part[mi][ni], ah[mi], bh[ni]);
          } else if (ACC == ACC_CHUNK_SEP) {
            mma_tf32(small[mi][ni], al[mi], bh[ni]);
            mma_tf32(small[mi][ni], ah[mi], bl[ni]);
            mma_tf32(part[mi][ni], ah[mi], bh[ni]);
          } else if (ACC == ACC_STEP_SEP) {
            mma_tf32(small[mi][ni], al[mi], bh[ni]);
            mma_tf32(small[mi][ni], ah[mi], bl[ni]);
            float p[4];
            mma_tf32_zero(p, ah[mi], bh[ni]);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mi][ni][e] += p[e];
          } else {
            mma_tf32(part[mi][ni], ah[mi], bh[ni]);
          }
        }
    }
    if (ACC == ACC_CHUNK || ACC == ACC_CHUNK_SEP || ACC == ACC_1X)
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
        if (co < cout && t < t_out) y[static_cast<size_t>(co) * t_out + t] = (acc[mi][ni][e] + small[mi][ni][e]) + bias[co];
      }
}

// The fast kernel is the backend's own (src/backends/cuda/conv_tc_kernel.h) with its per-size
// Config (stages, min blocks per SM, tap unroll: swept in the 2026-11-30 run 2), in each block tile;
// "backend choice" marks the tile conv_tc.cu picks.
// ---------------------------------------------------------------------------------------------

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

struct Err { double rel_l2, bias; };  // bias: <y - ref, ref> / <ref, ref> (a coherent scale error)
Err error(const std::vector<float>& a, const std::vector<double>& r) {
  double num = 0, den = 0, dot = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return {INFINITY, INFINITY};
    const double d = a[i] - r[i];
    num += d * d;
    den += r[i] * r[i];
    dot += d * r[i];
  }
  return {std::sqrt(num / den), dot / den};
}

template <class F>
float median_ms(F f, int reps = 11) {
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
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

namespace tc = lockstep::cuda::tc;

// The backend's kernel (its per-size Config) with each block tile.
// What the split's rounding gives on edge values (ties, NaN, inf, overflow, subnormals): the raw
// 32 bits of tc::tf32_rn, so the low 13 bits can be seen.
__global__ void tf32_edges(const float* v, uint32_t* out, int n) {
  const int i = threadIdx.x;
  if (i < n) out[i] = tc::tf32_rn(v[i]);
}
void print_tf32_edges() {
  const uint32_t bits[] = {0x3f801000u, 0x3f803000u, 0xbf801000u, 0x3f800fffu, 0x7fffffffu, 0xffffffffu, 0x7f800001u,
                           0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x7f7ff000u, 0x00001000u, 0x00003000u, 0x80000000u};
  const int n = sizeof bits / sizeof bits[0];
  float *v;
  uint32_t* o;
  CK(cudaMalloc(&v, n * 4));
  CK(cudaMalloc(&o, n * 4));
  CK(cudaMemcpy(v, bits, n * 4, cudaMemcpyHostToDevice));
  tf32_edges<<<1, 32>>>(v, o, n);
  uint32_t out[32];
  CK(cudaMemcpy(out, o, n * 4, cudaMemcpyDeviceToHost));
  std::printf("tf32_rn edges:");
  for (int i = 0; i < n; ++i) std::printf(" %08x->%08x", bits[i], out[i]);
  std::printf("\n");
  cudaFree(v);
  cudaFree(o);
}

// `splits` > 1: a split reduction into `partial` (tc::split_partial_floats floats), as the backend runs it.
bool run_tile(int ks, tc::TileKind tile, tc::Params p, int n, int splits = 1, float* partial = nullptr) {
  p.splits = splits;
  p.partial = partial;
  tc::geometry(p, ks, tc::tile_bn(tile));
  if (tc::smem_bytes(p, ks, tc::stages_for(ks), tc::tile_bm(tile)) > 227 * 1024) return false;
  CK(tc::launch(p, ks, tile, n, 0));
  return true;
}

int main(int argc, char** argv) {
  bool all = false;             // --all: also the simple kernels' accuracy study
  const char* only = nullptr;   // --only TEXT: just the shapes whose label contains TEXT (for ncu)
  bool post = false;            // --post: the backend kernel with a fused "+ residual, LeakyRelu(0.1)"
                                // epilogue (times only: rel L2 is against the plain conv's reference)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--all") == 0) all = true;
    else if (std::strcmp(argv[i], "--post") == 0) post = true;
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
  }
  struct Shape { int c, t, ks, d; const char* what; int co = 0; };  // co 0: C_out = C_in
  const Shape shapes[] = {
      {512, 1024, 7, 1, "512ch T1024 k7 (ljs conv_pre-like)"}, {256, 8192, 3, 1, "256ch T8192 k3 d1 (ljs rb1)"},
      {256, 8192, 7, 3, "256ch T8192 k7 d3 (ljs rb1)"},        {256, 8192, 11, 5, "256ch T8192 k11 d5 (ljs rb1)"},
      {128, 65536, 3, 1, "128ch T65536 k3 d1 (ljs rb2)"},      {128, 65536, 7, 3, "128ch T65536 k7 d3 (ljs rb2)"},
      {128, 65536, 11, 5, "128ch T65536 k11 d5 (ljs rb2)"},    {64, 131072, 7, 1, "64ch T131072 k7 d1 (ljs rb3)"},
      {32, 262144, 11, 1, "32ch T262144 k11 d1 (ljs rb4)"},    {128, 8192, 3, 1, "128ch T8192 k3 d1 (seed rb)"},
      {192, 1024, 5, 1, "192ch T1024 k5 (flow WN)"},           {512, 8192, 3, 1, "512ch T8192 k3 d1 (wide)"},
      {256, 8192, 5, 2, "256ch T8192 k5 d2 (V3-type rb)"},     {64, 8192, 7, 1, "64ch T8192 k7 (small)"},
      {192, 1024, 5, 1, "192->384ch T1024 k5 (low/ljs flow WN)", 384}, {72, 1024, 5, 1, "72->144ch T1024 k5 (seed flow WN)", 144},
      {32, 262144, 7, 12, "32ch T262144 k7 d12 (low rb)"},
      {96, 1024, 1, 1, "96->192ch T1024 k1 (low/ljs flow pre)", 192}, {192, 1024, 1, 1, "192->96ch T1024 k1 (low/ljs flow post)", 96},
      {64, 1024, 1, 1, "64->72ch T1024 k1 (seed flow pre)", 72},
      {8, 262144, 3, 1, "8ch T262144 k3 d1 (seed rb, C < 32)"}, {8, 262144, 11, 5, "8ch T262144 k11 d5 (seed rb, C < 32)"},
      {16, 131072, 7, 3, "16ch T131072 k7 d3 (seed rb, C < 32)"}, {8, 262144, 7, 1, "8->1ch T262144 k7 (seed conv_post)", 1}};
  print_tf32_edges();
  cudnnHandle_t h;
  DK(cudnnCreate(&h));
  CK(tc::prepare(227 * 1024));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs; times are medians of 11 (CUDA events); rel L2 vs a float64 GPU convolution; "
              "scale = <y-ref,ref>/<ref,ref>\n\n", prop.name, prop.multiProcessorCount);
  std::printf("| shape | K=C*k | variant | ms | TFLOP/s | rel L2 | scale err | vs cuDNN time |\n|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  for (const Shape& s : shapes) {
    if (only && !std::strstr(s.what, only)) continue;
    const int cin = s.c, cout = s.co ? s.co : s.c, T = s.t, ks = s.ks, d = s.d, pad = (ks - 1) * d / 2;
    std::vector<float> hx(static_cast<size_t>(cin) * T), hw(static_cast<size_t>(cout) * cin * ks), hb(cout);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : hx) v = nd(rng);
    const float wsc = 1.0f / std::sqrt(static_cast<float>(cin * ks));
    for (auto& v : hw) v = nd(rng) * wsc;
    for (auto& v : hb) v = nd(rng) * 0.1f;
    float *x, *w, *b, *y, *wp;
    double* yr;
    const size_t ny = static_cast<size_t>(cout) * T;
    const size_t nwp = tc::split_weight_floats(cin, cout, std::max(ks, 1));
    CK(cudaMalloc(&x, hx.size() * 4));
    CK(cudaMalloc(&w, hw.size() * 4));
    CK(cudaMalloc(&b, hb.size() * 4));
    CK(cudaMalloc(&y, ny * 4));
    CK(cudaMalloc(&yr, ny * 8));
    CK(cudaMalloc(&wp, nwp * 4));
    CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    conv1d_f64<<<4096, 256>>>(x, w, b, yr, cin, cout, T, T, ks, d, pad);
    CK(cudaGetLastError());
    std::vector<double> ref(ny);
    CK(cudaMemcpy(ref.data(), yr, ny * 8, cudaMemcpyDeviceToHost));
    std::vector<float> out(ny), out2(ny);
    const double gflop = 2.0 * cin * cout * ks * static_cast<double>(T) / 1e9;
    // cuDNN strict fp32 (FMA math, deterministic, heuristics' first qualifying algo, as conv.cu), then bias.
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
    const float one = 1.f, zero = 0.f;
    auto cudnn_conv = [&] { DK(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, wsp, wsb, &zero, yd, y)); };
    const float ms_conv = median_ms(cudnn_conv);
    auto cudnn_run = [&] { cudnn_conv(); add_bias<<<4096, 256>>>(y, b, cout, T); };
    const float ms_dnn = median_ms(cudnn_run);
    CK(cudaMemcpy(out.data(), y, ny * 4, cudaMemcpyDeviceToHost));
    const Err e_dnn = error(out, ref);
    auto row = [&](const char* variant, float ms, Err e) {
      std::printf("| %s | %d | %s | %.4f | %.1f | %.2e | %+.1e | %.2fx |\n", s.what, cin * ks, variant, ms, gflop / ms, e.rel_l2,
                  e.bias, ms_dnn / ms);
      std::fflush(stdout);
    };
    char name[96];
    std::snprintf(name, sizeof name, "cuDNN FMA algo %d + bias (conv alone %.4f ms)", static_cast<int>(algo), ms_conv);
    row(name, ms_dnn, e_dnn);
    const int xw = ((BN + (ks - 1) * d + 31) / 32) * 32 + 8;  // row stride = 8 mod 32 banks
    const size_t sm = (static_cast<size_t>(CKI) * xw + static_cast<size_t>(BM) * (CKI * ks + 4)) * 4;
    const dim3 grid((T + BN - 1) / BN, (cout + BM - 1) / BM);
    auto simple = [&](auto kernel, const char* variant) {
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sm)));
      CK(cudaMemset(y, 0xff, ny * 4));  // NaN poison: every element must be written
      const float ms = median_ms([&] { kernel<<<grid, THREADS, sm>>>(x, w, b, y, cin, cout, T, T, ks, d, pad, xw); });
      CK(cudaGetLastError());
      CK(cudaMemcpy(out.data(), y, ny * 4, cudaMemcpyDeviceToHost));
      row(variant, ms, error(out, ref));
    };
    if (all) {
      simple(conv1d_tc<0, ACC_ALL>, "simple mask-split, one TC accumulator (first probe)");
      simple(conv1d_tc<0, ACC_CHUNK>, "simple mask-split, per-chunk flush (revised probe)");
      simple(conv1d_tc<1, ACC_ALL>, "simple rna-split, one TC accumulator");
      simple(conv1d_tc<1, ACC_CHUNK>, "simple rna-split, per-chunk flush");
      simple(conv1d_tc<1, ACC_CHUNK_SEP>, "simple rna-split, per-chunk hi*hi flush + small acc");
      simple(conv1d_tc<1, ACC_STEP_SEP>, "simple rna-split, per-tap hi*hi flush + small acc");
      simple(conv1d_tc<1, ACC_1X>, "simple 1xTF32 rna (reference point)");
    }
    // The backend's kernel: weights split on the host as conv_tc.cu does (a compile step, not timed).
    std::vector<float> hwp(tc::split_weight_floats(cin, cout, ks), 0.0f);
    tc::split_weights_host(hw.data(), cout, cin, ks, hwp.data());
    CK(cudaMemcpy(wp, hwp.data(), hwp.size() * 4, cudaMemcpyHostToDevice));
    tc::Params p{};
    p.x = x; p.wp = wp; p.bias = b; p.y = y;
    p.cin = cin; p.cout = cout; p.t_in = T; p.t_out = T; p.dil = d; p.pad = pad;
    float* residual = nullptr;
    if (post) {
      CK(cudaMalloc(&residual, ny * 4));
      CK(cudaMemcpy(residual, hx.data(), std::min(hx.size(), ny) * 4, cudaMemcpyHostToDevice));
      p.z = residual;
      p.post[0] = tc::kPostAdd;
      p.post[1] = tc::kPostLeaky;
      p.alpha = 0.1f;
    }
    if (T % 4 == 0 && tc::instantiated_ks(ks)) {
      auto run_fast = [&](auto launcher, const char* variant) {
        CK(cudaMemset(y, 0xff, ny * 4));
        if (!launcher()) { std::printf("| %s | %d | %s | n/a (shared memory) | | | | |\n", s.what, cin * ks, variant); return; }
        const float ms = median_ms([&] { launcher(); });
        CK(cudaGetLastError());
        CK(cudaMemcpy(out.data(), y, ny * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemset(y, 0, ny * 4));
        launcher();
        CK(cudaMemcpy(out2.data(), y, ny * 4, cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(out.data(), out2.data(), ny * 4) == 0;
        char v[200];
        // FNV-1a of the output bits: compares builds of the kernel (a rewrite that keeps the bits keeps the hash).
        uint64_t hash = 1469598103934665603ull;
        const unsigned char* bytes = reinterpret_cast<const unsigned char*>(out.data());
        for (size_t i = 0; i < ny * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
        std::snprintf(v, sizeof v, "%s, bits %016llx%s", variant, static_cast<unsigned long long>(hash), same ? "" : " NOT BITWISE REPEATABLE");
        row(v, ms, error(out, ref));
      };
      const tc::TileKind chosen = tc::choose_tile(1, cout, T, ks, prop.multiProcessorCount);
      const tc::TileKind tiles[] = {tc::TileKind::k64x128, tc::TileKind::k32x256, tc::TileKind::k64x64};
      for (tc::TileKind tile : tiles) {
        char name[96];
        std::snprintf(name, sizeof name, "tc tile %dx%d, stages %d%s", tc::tile_bm(tile), tc::tile_bn(tile), tc::stages_for(ks),
                      tile == chosen ? " **backend choice**" : "");
        run_fast([&] { return run_tile(ks, tile, p, 1); }, name);
      }
      // The backend's split reduction on its tile (grids that leave SMs idle), kernel and merge
      // timed together, and twice as many splits beside it.
      const int splits = tc::choose_splits(1, cin, cout, T, ks, chosen);
      if (splits > 1) {
        float* partial = nullptr;
        CK(cudaMalloc(&partial, tc::split_partial_floats(1, cout, T, 2 * splits, 2) * 4));
        for (int sp : {splits, 2 * splits}) {
          char name[96];
          std::snprintf(name, sizeof name, "tc tile %dx%d split %d + merge%s", tc::tile_bm(chosen), tc::tile_bn(chosen), sp,
                        sp == splits ? " **backend choice**" : "");
          run_fast([&] { return run_tile(ks, chosen, p, 1, sp, partial); }, name);
        }
        cudaFree(partial);
      }
    }
    CK(cudaDeviceSynchronize());
    cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y); cudaFree(yr); cudaFree(wp);
    if (residual) cudaFree(residual);
    if (wsp) cudaFree(wsp);
    cudnnDestroyTensorDescriptor(xd); cudnnDestroyTensorDescriptor(yd); cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
  }
  cudnnDestroy(h);
  return 0;
}
