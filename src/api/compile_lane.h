// A voice compiled as one of a batch's lanes (voices/piper_batch.h).
#pragma once

#include <memory>
#include <string_view>

#include "lockstep/lockstep.h"

namespace lockstep {

// As compile(), with the run-time shape stage's arena bound (4 GiB) shared out between `lanes`
// lanes, at least 1 GiB each: a batcher sends each length to the lane that has it, so the lanes
// together hold about what one executable would.
std::unique_ptr<Executable> compile_lane(const Model& model, std::string_view backend, const Options& options, int lanes);

}  // namespace lockstep
