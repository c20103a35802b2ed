#version 450
// 1-D Conv through shared memory: a workgroup computes 64 x POS_TILE consecutive output positions
// of CO_TILE output channels; it stages the input span they read (padding as zeros) for
// CI_CHUNK input channels at a time, then each invocation sums from shared memory. The sum runs
// over (input channel, tap) in that order from zero, then the bias: the order of conv.comp.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int CO_TILE = 4;  // divides a group's output channels
layout(constant_id = 1) const int POS_TILE = 4;
const int CI_CHUNK = 4;
const int SPAN_MAX = 1024;  // (64 POS_TILE - 1) stride + (K - 1) dilation + 1 must fit (conv.cpp)
layout(std430, set = 0, binding = 0) restrict buffer Arena { float arena[]; };
shared float xs[CI_CHUNK * SPAN_MAX];

void main() {
  const int cin = iparam(CV_CIN), win = iparam(CV_WIN), cout = iparam(CV_COUT), wout = iparam(CV_WOUT);
  const int kw_n = iparam(CV_KW), sw = iparam(CV_SW), dw = iparam(CV_DW), pw = iparam(CV_PW);
  const int group = iparam(CV_GROUP);
  const int cig = cin / group, mg = cout / group;
  const int lid = int(gl_LocalInvocationID.x);
  const int wg_first = int(gl_WorkGroupID.x) * 64 * POS_TILE;  // first output position of the workgroup
  const int span = (64 * POS_TILE - 1) * sw + (kw_n - 1) * dw + 1;
  const int in_first = wg_first * sw - pw;
  const int ow0 = wg_first + lid * POS_TILE;
  const int co0 = int(gl_WorkGroupID.y) * CO_TILE;
  const int n = int(gl_WorkGroupID.z);
  const int g = co0 / mg;

  precise float acc[CO_TILE][POS_TILE];
  for (int c = 0; c < CO_TILE; ++c)
    for (int j = 0; j < POS_TILE; ++j) acc[c][j] = 0.0;
  for (int ci0 = 0; ci0 < cig; ci0 += CI_CHUNK) {
    barrier();  // the previous chunk has been read
    for (int c = 0; c < CI_CHUNK; ++c) {
      const int xrow = iparam(CV_X) + (n * cin + g * cig + min(ci0 + c, cig - 1)) * win;
      for (int q = lid; q < span; q += 64) {
        const int p = in_first + q;
        const float v = arena[xrow + clamp(p, 0, win - 1)];
        xs[c * SPAN_MAX + q] = (p >= 0 && p < win && ci0 + c < cig) ? v : 0.0;
      }
    }
    barrier();
    const int chunk = min(CI_CHUNK, cig - ci0);
    for (int c = 0; c < chunk; ++c) {
      const int wrow = iparam(CV_W) + (co0 * cig + ci0 + c) * kw_n;
      const int xbase = c * SPAN_MAX + lid * POS_TILE * sw;
      for (int kw = 0; kw < kw_n; ++kw) {
        float xv[POS_TILE];
        for (int j = 0; j < POS_TILE; ++j) xv[j] = xs[xbase + kw * dw + j * sw];
        for (int o = 0; o < CO_TILE; ++o) {
          const float wv = arena[wrow + o * cig * kw_n + kw];
          for (int j = 0; j < POS_TILE; ++j) acc[o][j] = acc[o][j] + wv * xv[j];
        }
      }
    }
  }
  const uint bias_at = param(CV_BIAS);
  for (int o = 0; o < CO_TILE; ++o) {
    const float b = bias_at == CV_NO_BIAS ? 0.0 : arena[bias_at + uint(co0 + o)];
    const int yrow = iparam(CV_Y) + (n * cout + co0 + o) * wout;
    for (int j = 0; j < POS_TILE; ++j) {
      precise float y = acc[o][j] + b;
      if (ow0 + j < wout) arena[yrow + ow0 + j] = y;
    }
  }
}
