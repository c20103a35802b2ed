#pragma once
#include "lockstep/lockstep.h"
namespace lockstep::cuda {
const Backend& backend();  // "cuda": float32 on an NVIDIA GPU; unavailable without one
}  // namespace lockstep::cuda
