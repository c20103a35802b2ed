#version 450
// A strided copy (Slice, Split, Concat, Transpose, Expand, Reshape and the other views of the same
// bytes): one invocation per element, any strides (negative: Slice with a negative step).
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

void main() {
  const uint n = param(CP_N), rank = param(CP_RANK), ew = param(CP_ELEM_WORDS);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int src = 0, dst = 0;
    for (int d = int(rank) - 1; d >= 0; --d) {
      int c = int(rest);
      if (d > 0) {
        const uint dim = param(CP_DIMS + d);
        c = int(rest % dim);
        rest /= dim;
      }
      src += c * iparam(CP_SRC + 1 + d);
      dst += c * iparam(CP_DST + 1 + d);
    }
    const uint s = uint(iparam(CP_SRC) + src * int(ew)), t = uint(iparam(CP_DST) + dst * int(ew));
    for (uint w = 0; w < ew; ++w) words[t + w] = words[s + w];
  }
}
