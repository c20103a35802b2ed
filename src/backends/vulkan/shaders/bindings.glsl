// What every lockstep shader binds: the arena (binding 0, declared by each shader with its element
// type), the executable's parameter words (binding 1) and the first word of this dispatch's
// parameters (push constant). A shader reads only through these: no other state.
#ifndef LOCKSTEP_VULKAN_BINDINGS_GLSL
#define LOCKSTEP_VULKAN_BINDINGS_GLSL

layout(std430, set = 0, binding = 1) restrict readonly buffer Params { uint params[]; };
layout(push_constant) uniform Push { uint base; } pc;

uint param(uint i) { return params[pc.base + i]; }
int iparam(uint i) { return int(params[pc.base + i]); }

#endif
