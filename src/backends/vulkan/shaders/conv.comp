#version 450
// Direct Conv (1-D, and 2-D with H > 1): each invocation computes POS_TILE consecutive output
// positions of CO_TILE output channels of one group. Every output sums (input channel, kh, kw) in that order:
// each channel's taps from zero, that partial then into a Kahan-compensated sum over the channels
// (the voice's decoder amplifies rounding tenfold: plain sums gave it 2.9e-5, these 1e-5); then
// the bias. A fixed order, no atomics. Padding reads as 0.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int CO_TILE = 4;  // divides a group's output channels
layout(constant_id = 1) const int POS_TILE = 4;
layout(std430, set = 0, binding = 0) restrict buffer Arena { float arena[]; };

void main() {
  const int xt = int(gl_GlobalInvocationID.x);
  if (xt >= iparam(CV_XTILES)) return;
  const int cin = iparam(CV_CIN), hin = iparam(CV_HIN), win = iparam(CV_WIN);
  const int cout = iparam(CV_COUT), hout = iparam(CV_HOUT), wout = iparam(CV_WOUT);
  const int kh_n = iparam(CV_KH), kw_n = iparam(CV_KW), sh = iparam(CV_SH), sw = iparam(CV_SW);
  const int dh = iparam(CV_DH), dw = iparam(CV_DW), ph = iparam(CV_PH), pw = iparam(CV_PW);
  const int group = iparam(CV_GROUP);
  const int cig = cin / group, mg = cout / group, kk = kh_n * kw_n;
  const int ow0 = xt * POS_TILE;
  const int co0 = int(gl_WorkGroupID.y) * CO_TILE;
  const int n = int(gl_WorkGroupID.z) / hout, oh = int(gl_WorkGroupID.z) % hout;
  const int g = co0 / mg;

  precise float acc[CO_TILE][POS_TILE], comp[CO_TILE][POS_TILE], part[CO_TILE][POS_TILE];
  for (int c = 0; c < CO_TILE; ++c)
    for (int j = 0; j < POS_TILE; ++j) acc[c][j] = 0.0, comp[c][j] = 0.0;
  for (int ci = 0; ci < cig; ++ci) {
    for (int c = 0; c < CO_TILE; ++c)
      for (int j = 0; j < POS_TILE; ++j) part[c][j] = 0.0;
    const int xplane = iparam(CV_X) + ((n * cin + g * cig + ci) * hin) * win;
    const int wrow = iparam(CV_W) + (co0 * cig + ci) * kk;
    for (int kh = 0; kh < kh_n; ++kh) {
      const int ih = oh * sh + kh * dh - ph;
      if (ih < 0 || ih >= hin) continue;
      const int xrow = xplane + ih * win;
      for (int kw = 0; kw < kw_n; ++kw) {
        const int iw = ow0 * sw + kw * dw - pw;
        float xv[POS_TILE];
        for (int j = 0; j < POS_TILE; ++j) {
          const int p = iw + j * sw;
          const float v = arena[xrow + clamp(p, 0, win - 1)];  // always in bounds, then masked
          xv[j] = (p >= 0 && p < win) ? v : 0.0;
        }
        for (int c = 0; c < CO_TILE; ++c) {
          const float wv = arena[wrow + c * cig * kk + kh * kw_n + kw];
          for (int j = 0; j < POS_TILE; ++j) part[c][j] = part[c][j] + wv * xv[j];
        }
      }
    }
    for (int c = 0; c < CO_TILE; ++c)  // Kahan: the channel's partial into the compensated sum
      for (int j = 0; j < POS_TILE; ++j) {
        precise float y = part[c][j] - comp[c][j];
        precise float t = acc[c][j] + y;
        comp[c][j] = (t - acc[c][j]) - y;
        acc[c][j] = t;
      }
  }
  const uint bias_at = param(CV_BIAS);
  for (int c = 0; c < CO_TILE; ++c) {
    const float b = bias_at == CV_NO_BIAS ? 0.0 : arena[bias_at + uint(co0 + c)];
    const int yrow = iparam(CV_Y) + ((n * cout + co0 + c) * hout + oh) * wout;
    for (int j = 0; j < POS_TILE; ++j) {
      precise float y = acc[c][j] + b;
      if (ow0 + j < wout) arena[yrow + ow0 + j] = y;
    }
  }
}
