// The one exception type of lockstep: a code, the ONNX node (when there is one) and an
// actionable message.
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep {

enum class ErrorCode {
  InvalidArgument,       // bad CLI/API argument
  InvalidModel,          // malformed protobuf, dangling names, cycles, bad tensor data
  UnsupportedOp,         // op not in ops.inc
  UnsupportedOpset,      // opset outside the supported range
  UnsupportedAttribute,  // attribute or attribute value lockstep does not implement
  ShapeMismatch,         // wrong input shape, or shapes that do not broadcast
  DTypeMismatch,         // wrong input dtype
  MissingInput,          // a graph input was not provided
  Io,                    // file could not be read or written
  LimitExceeded,         // model or memory over a configured cap
  OutOfMemory,
  DeviceUnavailable,     // no usable GPU, driver problem
  Divergence,            // a comparison found outputs that disagree beyond tolerance
  Internal,              // a lockstep bug
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, std::string node = {}, std::string op = {});

  ErrorCode code() const { return code_; }
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string node_;
  std::string op_;
  std::string message_;
};

}  // namespace lockstep
