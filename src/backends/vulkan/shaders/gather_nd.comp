#version 450
// GatherND: out[t][s] = data[batch of t][idx[t][0]]...[idx[t][K-1]][s] for each index tuple t
// (GN_PER_BATCH per batch) and slice element s; elements of GN_EW words. Spec 0: index words.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };
layout(constant_id = 0) const uint IW = 1u;
#include "index.glsl"

void main() {
  const uint n = param(GN_N), ew = param(GN_EW), slice = param(GN_SLICE), k = param(GN_K);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  err_at = param(GN_ERR);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    const uint s = i % slice, t = i / slice;
    uint src = (t / param(GN_PER_BATCH)) * param(GN_BATCH_STRIDE) + s;
    for (uint j = 0u; j < k; ++j)
      src += uint(index_at(param(GN_IDX) + (t * k + j) * IW, iparam(GN_KDIMS + j), t * k + j)) * param(GN_KSTR + j);
    const uint a = param(GN_DATA) + src * ew, b = param(GN_OUT) + i * ew;
    for (uint w = 0u; w < ew; ++w) words[b + w] = words[a + w];
  }
}
