#version 450
// GatherElements: out[c] = data[c with c[axis] = idx[c]] for every coordinate c of the indices
// (= the output); data through its strides, elements of GE_EW words. Spec constant 0: index words.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };
layout(constant_id = 0) const uint IW = 1u;
#include "index.glsl"

void main() {
  const uint n = param(GE_N), rank = param(GE_RANK), axis = param(GE_AXIS), ew = param(GE_EW);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  err_at = param(GE_ERR);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    uint src = 0u;
    for (int d = int(rank) - 1; d >= 0; --d) {
      const uint dim = param(GE_IDIMS + d);
      uint c = rest % dim;
      rest /= dim;
      if (uint(d) == axis) c = uint(index_at(param(GE_IDX) + i * IW, iparam(GE_AXIS_DIM), i));
      src += c * param(GE_DSTR + d);
    }
    const uint s = param(GE_DATA) + src * ew, t = param(GE_OUT) + i * ew;
    for (uint w = 0u; w < ew; ++w) words[t + w] = words[s + w];
  }
}
