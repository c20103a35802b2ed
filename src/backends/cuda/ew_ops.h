// The element-wise op codes and their float math, shared by elementwise.cu's program kernels and
// the kernels that apply a node's epilogue in their own store (conv_ffma.cu): one definition, so
// a fused epilogue gives the same bits as the separate epilogue kernel.
#pragma once

#include <cuda_runtime.h>

#include "ir/op.h"

namespace lockstep::cuda {

enum EwCode : int { kAdd, kSub, kMul, kDiv, kPow, kTanh, kSigmoid, kRelu, kLeakyRelu, kExp, kNeg, kSqrt, kIdentity };

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
    default: return a;
  }
}

// int64 tensors: the codes that exist for them (others pass a through).
__device__ inline long long apply(int code, long long a, long long b, float) {
  switch (code) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return b == 0 ? 0 : a / b;
    case kRelu: return a > 0 ? a : 0;
    case kNeg: return -a;
    default: return a;
  }
}

}  // namespace lockstep::cuda
