#version 450
// Gather along an axis: out[o][j][r] = data[o][idx[j]][r] for o < outer, j < count (the indices,
// flattened), r < inner; elements of GA_EW words. Spec constant 0: index words.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };
layout(constant_id = 0) const uint IW = 1u;
#include "index.glsl"

void main() {
  const uint n = param(GA_N), ew = param(GA_EW), inner = param(GA_INNER), count = param(GA_COUNT);
  const int axis_dim = iparam(GA_AXIS_DIM);
  err_at = param(GA_ERR);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    const uint r = i % inner, j = (i / inner) % count, o = i / (inner * count);
    const int k = index_at(param(GA_IDX) + j * IW, axis_dim, j);
    const uint src = param(GA_DATA) + ((o * uint(axis_dim) + uint(k)) * inner + r) * ew;
    const uint dst = param(GA_OUT) + i * ew;
    for (uint w = 0u; w < ew; ++w) words[dst + w] = words[src + w];
  }
}
