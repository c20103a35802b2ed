// The element-wise op codes and their float math, shared by elementwise.cu's program kernels and
// the kernels that apply a node's epilogue in their own store (conv_ffma.cu): one definition, so
// a fused epilogue gives the same bits as the separate epilogue kernel.
#pragma once

#include <cuda_runtime.h>

#include "ir/op.h"

namespace lockstep::cuda {

enum EwCode : int {
  kAdd, kSub, kMul, kDiv, kPow, kTanh, kSigmoid, kRelu, kLeakyRelu, kExp, kNeg, kSqrt, kIdentity,
  kErf, kSoftplus, kCeil, kFloor, kAbs, kReciprocal,
  kClipLow, kClipHigh,  // Clip's bounds as binary steps: a < b ? b : a, a > b ? b : a (NaN stays)
};

// -1 for an op without a code.
inline int ew_code(ir::Op op) {
  switch (op) {
    case ir::Op::Add: return kAdd;
    case ir::Op::Sub: return kSub;
    case ir::Op::Mul: return kMul;
    case ir::Op::Div: return kDiv;
    case ir::Op::Pow: return kPow;
    case ir::Op::Tanh: return kTanh;
    case ir::Op::Sigmoid: return kSigmoid;
    case ir::Op::Relu: return kRelu;
    case ir::Op::LeakyRelu: return kLeakyRelu;
    case ir::Op::Exp: return kExp;
    case ir::Op::Neg: return kNeg;
    case ir::Op::Sqrt: return kSqrt;
    case ir::Op::Identity: return kIdentity;
    case ir::Op::Erf: return kErf;
    case ir::Op::Softplus: return kSoftplus;
    case ir::Op::Ceil: return kCeil;
    case ir::Op::Floor: return kFloor;
    case ir::Op::Abs: return kAbs;
    case ir::Op::Reciprocal: return kReciprocal;
    default: return -1;
  }
}

__device__ inline float apply(int code, float a, float b, float alpha) {
  switch (code) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    case kPow: return powf(a, b);
    case kTanh: return tanhf(a);
    case kSigmoid: return 1.0f / (1.0f + expf(-a));
    case kRelu: return a > 0.0f ? a : 0.0f;
    case kLeakyRelu: return a >= 0.0f ? a : a * alpha;
    case kExp: return expf(a);
    case kNeg: return -a;
    case kSqrt: return sqrtf(a);
    case kErf: return erff(a);  // CUDA's erff: 2 ulp
    // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|), as the reference
    case kSoftplus: return a != a ? a : fmaxf(a, 0.0f) + log1pf(expf(-fabsf(a)));
    case kCeil: return ceilf(a);
    case kFloor: return floorf(a);
    case kAbs: return fabsf(a);
    case kReciprocal: return 1.0f / a;
    case kClipLow: return a < b ? b : a;
    case kClipHigh: return a > b ? b : a;
    default: return a;
  }
}

// int64 and int32 tensors: the codes that exist for them (others pass a through).
template <class I>
__device__ inline I apply_int(int code, I a, I b) {
  switch (code) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return b == 0 ? 0 : a / b;
    case kRelu: return a > 0 ? a : 0;
    case kNeg: return -a;
    case kAbs: return a < 0 ? -a : a;
    case kClipLow: return a < b ? b : a;
    case kClipHigh: return a > b ? b : a;
    default: return a;
  }
}
__device__ inline long long apply(int code, long long a, long long b, float) { return apply_int(code, a, b); }
__device__ inline int apply(int code, int a, int b, float) { return apply_int(code, a, b); }

}  // namespace lockstep::cuda
