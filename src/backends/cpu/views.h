// Channel-slice views: a Slice of channels [c0, c1) whose only readers are float elementwise
// kernels is not copied; its value is addressed inside its input's buffer (the gated halves of
// a WaveNet layer's conv output, the residual/skip halves of its res_skip conv). The Slice's
// kernel then does nothing; taps and planted faults gather/scatter the view.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

// Decides the views (needs ctx.pointers and ctx.nwc): points ctx.pointers[view] into the
// sliced input and returns per ValueId the distance in elements between consecutive stored
// rows of the view (0 = dense, not a view). A view is taken only while no node between the
// Slice and the view's last reader writes over the input's bytes.
std::vector<int64_t> choose_views(CompileContext& ctx);

// The Slice kernel of a view: nothing to copy.
KernelPtr view_slice_kernel();

// Copies a view's rows to/from dense storage: `rows` rows of `inner` elements, `pitch` apart.
void gather_rows(const float* view, int64_t pitch, float* dense, int64_t rows, int64_t inner);
void scatter_rows(const float* dense, float* view, int64_t pitch, int64_t rows, int64_t inner);

}  // namespace lockstep::cpu
