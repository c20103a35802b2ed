#version 450
// Safe mode: every guard range must still hold the canary word; the first broken range's index
// goes to the result word (an integer atomicMin: the only atomic of the backend, on no float).
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

void main() {
  const uint ranges = param(CK_RANGES);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint r = gl_GlobalInvocationID.x; r < ranges; r += total) {
    const uint at = param(CK_TABLE + 2 * r), count = param(CK_TABLE + 2 * r + 1);
    for (uint i = 0; i < count; ++i)
      if (words[at + i] != CK_CANARY) {
        atomicMin(words[param(CK_RESULT)], r);
        break;
      }
  }
}
