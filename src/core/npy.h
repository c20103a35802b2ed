// NumPy .npy / .npz reading and writing: float32/float64/int64/int32/bool, little-endian, C order.
// Every malformed file is an Error(InvalidModel or Io) naming the file; writes are atomic.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "lockstep/tensor.h"

namespace lockstep {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

// Parses / produces the bytes of one .npy file; `what` names the source in error messages.
Tensor parse_npy(std::string_view bytes, const std::string& what);
std::string encode_npy(const Tensor& tensor);

// .npz: a zip of <name>.npy entries (stored or deflated); keys are the names without ".npy".
std::map<std::string, Tensor> read_npz(const std::string& path);
// The bytes of one .npz file (read_npz after reading; the fuzzers call it directly).
std::map<std::string, Tensor> parse_npz(std::string_view bytes, const std::string& what);
void write_npz(const std::string& path, const std::map<std::string, Tensor>& tensors);

}  // namespace lockstep
