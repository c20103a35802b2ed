#version 450
// Test-only (testing.h): writes one word at a given arena offset, past a node's output, so that
// tests can show safe mode catching an out-of-bounds write.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

void main() { words[param(0)] = param(1); }
