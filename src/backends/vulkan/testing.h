// Test-only hooks of the Vulkan backend (not lockstep's API): tests/vulkan uses them to show that
// safe mode catches an out-of-bounds write.
#pragma once

#include <string>

#include "lockstep/lockstep.h"

namespace lockstep::vulkan {

// After the dispatches of the node implementing ONNX node `node_name`, one extra dispatch
// ("planted_write") writes a word just past that node's output.
void plant_out_of_bounds_write(Executable& executable, const std::string& node_name);

}  // namespace lockstep::vulkan
