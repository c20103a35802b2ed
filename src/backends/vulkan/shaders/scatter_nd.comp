#version 450
// ScatterND after out = data: one invocation per slice element s walks the index tuples in order,
// out[idx[t]][s] = upd[t][s] (none: the last tuple wins, as on the cpu) or reduced into it (add,
// mul, max, min; float32 or int32). No atomics: each output word has one writer. Spec constants:
// 0 index words, 1 element type, 2 reduction.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) restrict buffer Arena { uint words[]; };
layout(constant_id = 0) const uint IW = 1u;
layout(constant_id = 1) const uint T = 0u;
layout(constant_id = 2) const uint RED = 0u;
#include "index.glsl"

void main() {
  const uint slice = param(SN_SLICE), tuples = param(SN_TUPLES), k = param(SN_K), ew = param(SN_EW);
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  err_at = param(SN_ERR);
  for (uint s = gl_GlobalInvocationID.x; s < slice; s += total) {
    for (uint t = 0u; t < tuples; ++t) {
      uint dst = s;
      for (uint j = 0u; j < k; ++j)
        dst += uint(index_at(param(SN_IDX) + (t * k + j) * IW, iparam(SN_KDIMS + j), t * k + j)) * param(SN_KSTR + j);
      const uint o = param(SN_OUT) + dst * ew, u = param(SN_UPD) + (t * slice + s) * ew;
      if (RED == SN_NONE) {
        for (uint w = 0u; w < ew; ++w) words[o + w] = words[u + w];
      } else if (T == TY_F32) {
        precise float x = uintBitsToFloat(words[o]), y = uintBitsToFloat(words[u]), r;
        if (RED == SN_ADD) r = x + y;
        else if (RED == SN_MUL) r = x * y;
        else if (RED == SN_MAX) r = (isnan(x) || x >= y) ? x : y;
        else r = (isnan(x) || x <= y) ? x : y;
        words[o] = floatBitsToUint(r);
      } else {
        const int x = int(words[o]), y = int(words[u]);
        int r;
        if (RED == SN_ADD) r = x + y;
        else if (RED == SN_MUL) r = x * y;
        else if (RED == SN_MAX) r = max(x, y);
        else r = min(x, y);
        words[o] = uint(r);
      }
    }
  }
}
