#version 450
// Direct ConvTranspose (1-D, and 2-D with H > 1) as a gather: output position ow = i*s + kw*d - p.
// Each invocation computes 4 outputs of one phase r = ow mod s (ow = r + s*(q0 + j)), which read
// the same taps at consecutive inputs, for CO_TILE output channels of one group. Every output sums
// (input channel, kh, kw) in that order: each channel's taps from zero, that partial then into a
// Kahan-compensated sum over the channels; then the bias. No atomics.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
#include "bindings.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int CO_TILE = 4;
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
  const int qb = ((wout + sw - 1) / sw + 3) / 4;  // 4-output blocks per phase
  const int r = xt / qb, q0 = (xt % qb) * 4;
  const int co0 = int(gl_WorkGroupID.y) * CO_TILE;
  const int n = int(gl_WorkGroupID.z) / hout, oh = int(gl_WorkGroupID.z) % hout;
  const int g = co0 / mg;
  // Offsets that keep the numerators below non-negative (GLSL's % of a negative is undefined).
  const int offw = ((kw_n - 1) * dw + abs(pw) + sw - 1) / sw * sw;
  const int offh = ((kh_n - 1) * dh + abs(ph) + sh - 1) / sh * sh;

  // The taps this output row and phase read: the first in [0, kstep), then every kstep-th.
  const int kstep_h = iparam(CV_KSTEP_H), kstep_w = iparam(CV_KSTEP_W);
  int kh0 = kh_n, kw0 = kw_n;
  for (int kh = min(kstep_h, kh_n) - 1; kh >= 0; --kh)
    if ((oh + ph - kh * dh + offh) % sh == 0) kh0 = kh;
  for (int kw = min(kstep_w, kw_n) - 1; kw >= 0; --kw)
    if ((r + pw - kw * dw + offw) % sw == 0) kw0 = kw;

  precise float acc[CO_TILE][4], comp[CO_TILE][4], part[CO_TILE][4];
  for (int c = 0; c < CO_TILE; ++c)
    for (int j = 0; j < 4; ++j) acc[c][j] = 0.0, comp[c][j] = 0.0;
  for (int ci = 0; ci < cig; ++ci) {
    for (int c = 0; c < CO_TILE; ++c)
      for (int j = 0; j < 4; ++j) part[c][j] = 0.0;
    const int c_in = g * cig + ci;
    const int xplane = iparam(CV_X) + ((n * cin + c_in) * hin) * win;
    const int wrow = iparam(CV_W) + (c_in * mg + (co0 - g * mg)) * kk;
    for (int kh = kh0; kh < kh_n; kh += kstep_h) {
      const int ih = (oh + ph - kh * dh + offh) / sh - offh / sh;
      if (ih < 0 || ih >= hin) continue;
      const int xrow = xplane + ih * win;
      for (int kw = kw0; kw < kw_n; kw += kstep_w) {
        const int ib = (r + pw - kw * dw + offw) / sw - offw / sw + q0;
        float xv[4];
        for (int j = 0; j < 4; ++j) {
          const int p = ib + j;
          const float v = arena[xrow + clamp(p, 0, win - 1)];
          xv[j] = (p >= 0 && p < win) ? v : 0.0;
        }
        for (int c = 0; c < CO_TILE; ++c) {
          const float wv = arena[wrow + c * kk + kh * kw_n + kw];
          for (int j = 0; j < 4; ++j) part[c][j] = part[c][j] + wv * xv[j];
        }
      }
    }
    for (int c = 0; c < CO_TILE; ++c)  // Kahan: the channel's partial into the compensated sum
      for (int j = 0; j < 4; ++j) {
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
    for (int j = 0; j < 4; ++j) {
      const int ow = r + sw * (q0 + j);
      precise float y = acc[c][j] + b;
      if (r < sw && ow < wout) arena[yrow + ow] = y;
    }
  }
}
