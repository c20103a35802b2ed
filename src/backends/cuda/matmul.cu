// Matrix family: MatMul and Gemm through cuBLAS SGEMM (pedantic math: no TF32, deterministic for
// a fixed device), and Softmax as one block per row with a fixed-order tree reduction.
#include <cfloat>

#include "backends/cuda/families.h"

namespace lockstep::cuda {
namespace {

constexpr int kSoftmaxBlock = 256;

__device__ float block_reduce(float v, float* shared, bool is_max) {
  const int t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) shared[t] = is_max ? fmaxf(shared[t], shared[t + stride]) : shared[t] + shared[t + stride];
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();
  return r;
}

// One block per (outer, inner) row of `n` elements spaced `inner` apart.
__global__ void softmax_kernel(const float* x, float* y, int64_t n, int64_t inner) {
  __shared__ float shared[kSoftmaxBlock];
  const int64_t row = blockIdx.x;
  const int64_t o = row / inner, r = row % inner;
  const float* in = x + o * n * inner + r;
  float* out = y + o * n * inner + r;
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, in[i * inner]);
  m = block_reduce(m, shared, true);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += expf(in[i * inner] - m);
  sum = block_reduce(sum, shared, false);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i * inner] = expf(in[i * inner] - m) / sum;
}

// Row-major C[m,n] = alpha * op(A) op(B) + beta * C, as column-major C^T = op(B)^T op(A)^T.
void sgemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int64_t batch, int64_t sa, int64_t sb, int64_t sc,
           const std::string& node) {
  const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batch == 1)
    check_cublas(cublasSgemm(h, opb, opa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                             static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)), "sgemm", node);
  else
    check_cublas(cublasSgemmStridedBatched(h, opb, opa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                           static_cast<int>(ldb), sb, a, static_cast<int>(lda), sa, &beta, c, static_cast<int>(ldc),
                                           sc, static_cast<int>(batch)), "sgemm batched", node);
}

void record_matmul_op(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  Shape a = g.value(node.inputs[0]).shape, b = g.value(node.inputs[1]).shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = ab.size() >= bb.size() ? ab : bb;
  // Broadcast batch dims; each batch gets its own A/B offsets.
  const size_t r = std::max(ab.size(), bb.size());
  while (ab.size() < r) ab.insert(ab.begin(), 1);
  while (bb.size() < r) bb.insert(bb.begin(), 1);
  for (size_t i = 0; i < r; ++i) batch[i] = std::max(ab[i], bb[i]);
  auto sa = contiguous_strides(ab), sb = contiguous_strides(bb);
  const int64_t count = num_elements(batch);
  std::vector<int64_t> offa, offb;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      const int64_t c = rem % batch[static_cast<size_t>(d)];
      rem /= batch[static_cast<size_t>(d)];
      if (ab[static_cast<size_t>(d)] != 1) oa += c * sa[static_cast<size_t>(d)];
      if (bb[static_cast<size_t>(d)] != 1) ob += c * sb[static_cast<size_t>(d)];
    }
    offa.push_back(oa * m * k);
    offb.push_back(ob * k * n);
  }
  // Uniform strides (the usual case) run as one strided-batched call, otherwise one call per batch.
  bool uniform = true;
  for (int64_t i = 0; i < count; ++i)
    if (offa[static_cast<size_t>(i)] != i * (count > 1 ? offa[1] : 0) || offb[static_cast<size_t>(i)] != i * (count > 1 ? offb[1] : 0)) uniform = false;
  if (uniform && ctx.precision == Precision::kFp32 && ctx.accumulates_f64(node)) {
    record_matmul_f64(ctx, node, program, m, n, k, count, count > 1 ? offa[1] : 0, count > 1 ? offb[1] : 0);
    return;
  }
  const ir::ValueId va = node.inputs[0], vb = node.inputs[1], vy = node.outputs[0];
  const Context* c = &ctx;
  const std::string name = node.name;
  program.launches.push_back({uniform ? "cublas_sgemm" : "cublas_sgemm_loop", [=](cudaStream_t) {
    const float* A = c->fptr(va);
    const float* B = c->fptr(vb);
    float* Y = c->fptr(vy);
    if (m * n == 0) return;
    if (uniform) {
      sgemm(c->cublas, false, false, m, n, k, 1.0f, A, k, B, n, 0.0f, Y, n, count, count > 1 ? offa[1] : 0, count > 1 ? offb[1] : 0, m * n, name);
    } else {
      for (int64_t i = 0; i < count; ++i)
        sgemm(c->cublas, false, false, m, n, k, 1.0f, A + offa[static_cast<size_t>(i)], k, B + offb[static_cast<size_t>(i)], n, 0.0f,
              Y + i * m * n, n, 1, 0, 0, 0, name);
    }
  }});
}

void record_gemm(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const Shape& a = g.value(node.inputs[0]).shape;
  const Shape& b = g.value(node.inputs[1]).shape;
  const bool ta = node.attrs.get_int("transA", 0) != 0, tb = node.attrs.get_int("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1], n = tb ? b[0] : b[1];
  const float alpha = node.attrs.get_float("alpha", 1.0f);
  float beta = node.attrs.get_float("beta", 1.0f);
  const ir::ValueId va = node.inputs[0], vb = node.inputs[1], vy = node.outputs[0];
  const ir::ValueId vc = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  const Context* c = &ctx;
  if (vc != ir::kNoValue) {  // Y = broadcast(C), then the GEMM accumulates into it with beta
    const Shape out{m, n};
    const auto src = broadcast_strides(g.value(vc).shape, out);
    program.launches.push_back({"gemm_broadcast_c", [=](cudaStream_t s) {
      CopyParams p;
      p.rank = 2;
      p.dims[0] = m; p.dims[1] = n;
      p.src_strides[0] = src[0]; p.src_strides[1] = src[1];
      p.dst_strides[0] = n; p.dst_strides[1] = 1;
      p.src = c->ptr(vc);
      p.dst = c->ptr(vy);
      launch_copy(p, 4, s);
    }});
  } else {
    beta = 0.0f;
  }
  const std::string name = node.name;
  program.launches.push_back({"cublas_sgemm", [=](cudaStream_t) {
    if (m * n == 0) return;
    sgemm(c->cublas, ta, tb, m, n, k, alpha, c->fptr(va), ta ? m : k, c->fptr(vb), tb ? k : n, beta, c->fptr(vy), n, 1, 0, 0, 0, name);
  }});
}

void record_softmax(Context& ctx, const ir::Node& node, NodeProgram& program) {
  const Shape& shape = ctx.graph().value(node.inputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.attrs.get_int("axis", -1);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[static_cast<size_t>(d)];
  const int64_t n = rank == 0 ? 1 : shape[static_cast<size_t>(axis)];
  const ir::ValueId x = node.inputs[0], y = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({"softmax", [=](cudaStream_t s) {
    const int64_t rows = outer * inner;
    if (rows == 0 || n == 0) return;
    softmax_kernel<<<static_cast<unsigned>(rows), kSoftmaxBlock, 0, s>>>(c->fptr(x), c->fptr(y), n, inner);
  }});
}

}  // namespace

std::optional<std::string> matmul_unsupported(const ir::Graph& graph, const ir::Node& node) {
  for (ir::ValueId v : node.inputs)
    if (v != ir::kNoValue && device_dtype(graph.value(v).dtype) != DType::Float32)
      return std::string(ir::op_name(node.op)) + " is float32 only on CUDA";
  return std::nullopt;
}

void record_matmul(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(node_index)];
  if (node.op == ir::Op::MatMul) record_matmul_op(ctx, node, program);
  else if (node.op == ir::Op::Gemm) record_gemm(ctx, node, program);
  else record_softmax(ctx, node, program);
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
