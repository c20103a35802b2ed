#version 450
// Pad (constant, reflect, edge; negative pads crop) of 32- or 64-bit elements: each output element
// maps back to one input element, or takes the constant.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };

void main() {
  const uint n = param(PAD_N), rank = param(PAD_RANK), mode = param(PAD_MODE);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += total) {
    uint rest = i;
    int src = 0, scale = 1;
    bool inside = true;
    for (int d = int(rank) - 1; d >= 0; --d) {
      const uint dim = param(PAD_OUT_DIMS + d);
      const int in_dim = iparam(PAD_IN_DIMS + d);
      int c = int(rest % dim) - iparam(PAD_BEGIN + d);
      rest /= dim;
      if (c < 0 || c >= in_dim) {
        if (mode == 0u || in_dim == 0) {
          inside = false;
        } else if (mode == 1u && in_dim > 1) {  // reflect without repeating the edge
          const int period = 2 * (in_dim - 1);
          c = abs(c) % period;  // x[-k] = x[k]; then periodic
          if (c >= in_dim) c = period - c;
        } else {
          c = clamp(c, 0, in_dim - 1);
        }
      }
      src += c * scale;
      scale *= in_dim;
    }
    const uint ew = param(PAD_EW), dst = param(PAD_DST) + i * ew, from = param(PAD_SRC) + uint(src) * ew;
    words[dst] = inside ? words[from] : param(PAD_VALUE);
    if (ew == 2u) words[dst + 1u] = inside ? words[from + 1u] : param(PAD_VALUE_HI);
  }
}
