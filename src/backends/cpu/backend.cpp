#include "backends/cpu/backend.h"
namespace lockstep::cpu {
const Backend& backend() { throw Error(ErrorCode::Internal, "cpu: not implemented yet"); }
}  // namespace lockstep::cpu
