#version 450
// ConstantOfShape: every element of the output is the value's words, one invocation per element.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict writeonly buffer Arena { uint words[]; };

void main() {
  const uint n = param(FL_N), ew = param(FL_ELEM_WORDS), dst = param(FL_DST);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total)
    for (uint w = 0; w < ew; ++w) words[dst + i * ew + w] = param(FL_VALUE + w);
}
