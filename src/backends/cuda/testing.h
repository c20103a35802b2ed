// Test-only hooks of the CUDA backend. Not part of lockstep's API; tests/gpu uses them to show
// that safe mode catches out-of-bounds writes and that channel-slice views drop their copies.
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/lockstep.h"

namespace lockstep::cuda {

// After the kernels of the node implementing ONNX node `node_name`, one extra kernel
// ("test_planted_out_of_bounds_write") writes a float just past that node's output buffer.
void plant_out_of_bounds_write(Executable& executable, const std::string& node_name);

// How many channel Slices `executable` addresses in place (channel-slice views: their launches are
// dropped). Only in CUDA builds: the tests calling it compile under LOCKSTEP_HAVE_CUDA.
int views_taken(const Executable& executable);

// How many Convs of `executable` read their LeakyRelu producer's input and apply it themselves in
// graph replay (the producer's kernel runs only in eager runs). CUDA builds only, as above.
int prologues_fused(const Executable& executable);

// How many producers of `executable` compute readers of their output in their own launch in graph
// replay (Absorption: the WN gate in a split conv's merge, the residual and skip Adds in a 1x1
// conv's store); the absorbed nodes' kernels run only in eager runs. CUDA builds only, as above.
int consumers_absorbed(const Executable& executable);

// The bytes of the memory plan `executable` laid its values out by (the graph's plan, or the
// executor's re-plan with views in place and absorbed consumers). CUDA builds only, as above.
int64_t planned_arena_bytes(const Executable& executable);

}  // namespace lockstep::cuda
