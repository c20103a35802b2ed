// ONNX external data (TensorProto.data_location = EXTERNAL, keys location/offset/length): the
// bytes live in a side file that must stay inside the model's folder (CVE-2022-25882 was a
// `location` escaping it). See docs/security.md.
#pragma once

#include <cstdint>
#include <string>

#include "onnx/onnx.pb.h"

namespace lockstep::onnx {

// True when `proto` keeps its bytes in a side file.
bool has_external_data(const ::onnx::TensorProto& proto);

// Returns a copy of `proto` (name, dims, data_type) whose raw_data holds the external bytes.
// `base_dir` is the model's folder; empty means the model came from memory and has no folder,
// so external data is refused. Refused with Error(InvalidModel) naming the tensor and the path:
// absolute locations, `..` components, symlinks resolving outside the folder, non-regular
// files, offset/length outside the file, length not matching dims x dtype. `total_bytes`
// accumulates the external bytes read so far (checked against limits::max_model_bytes).
::onnx::TensorProto load_external_data(const ::onnx::TensorProto& proto, const std::string& base_dir,
                                       const std::string& what, int64_t& total_bytes);

}  // namespace lockstep::onnx
