// numpy arrays <-> lockstep tensors, without copies where the memory allows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "diff/runner.h"
#include "lockstep/lockstep.h"

namespace lockstep::python {

namespace nb = nanobind;

// How many input arrays were shared and how many copied (a test observes zero-copy through it).
struct ConversionStats {
  uint64_t shared = 0;
  uint64_t copied = 0;
  uint64_t bytes_copied = 0;
};
ConversionStats& conversion_stats();

// An array-like (numpy array, DLPack/buffer object on the CPU, scalar, nested list) as a Tensor.
// A C-contiguous array of float32/float64/int64/int32/bool is shared: the tensor keeps a reference
// to the array (released under the GIL). Anything else is converted by numpy (a counted copy).
// `what` names the value in errors.
Tensor to_tensor(nb::handle value, const std::string& what);

// A numpy array over the tensor's storage (zero copy; the array keeps the storage alive).
nb::object to_numpy(Tensor tensor);

// A device buffer as a DLPack-capable array (__dlpack__, __dlpack_device__: CUDA) that keeps the
// buffer alive: torch.from_dlpack / cupy.from_dlpack take it without a copy.
nb::object to_device_array(DeviceTensor tensor);

diff::NamedTensors to_named_tensors(nb::handle mapping, const std::string& what);
nb::dict to_dict(const diff::NamedTensors& tensors);

}  // namespace lockstep::python
