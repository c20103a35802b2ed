#pragma once
#include "lockstep/lockstep.h"
namespace lockstep::cpu {
const Backend& backend();  // "cpu": float32, multithreaded
}  // namespace lockstep::cpu
