// The tensor-core conv's split weights made on the device: the same bits as the host split
// (tc::split_weights_host, wg::split_weights_host; tests/gpu/conv_tc_test.cpp compares them) in a
// fraction of the time — the host split took 2-5 ms a 192x192x5 conv, paid again for every conv
// whose layout a new length needs (H200, 600 phonemes: 16 of them, ~80 ms of a first call).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device.h"

namespace lockstep::cuda {

// float32 w[cout, cin, ks] split into the mma.sync layout (hopper false: tc::split_weight_floats
// entries) or the wgmma one (hopper true: wg::weight_floats), zeros in the padding rows.
// Synchronous: the copy is complete and the upload's staging freed when it returns.
std::shared_ptr<DeviceFloats> split_weights_on_device(const std::vector<float>& w, int cout, int cin, int ks, bool hopper,
                                                      const std::string& node);

}  // namespace lockstep::cuda
