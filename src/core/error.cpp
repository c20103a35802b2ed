#include "lockstep/error.h"

namespace lockstep {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::InvalidModel: return "invalid model";
    case ErrorCode::UnsupportedOp: return "unsupported op";
    case ErrorCode::UnsupportedOpset: return "unsupported opset";
    case ErrorCode::UnsupportedAttribute: return "unsupported attribute";
    case ErrorCode::ShapeMismatch: return "shape mismatch";
    case ErrorCode::DTypeMismatch: return "dtype mismatch";
    case ErrorCode::MissingInput: return "missing input";
    case ErrorCode::Io: return "i/o error";
    case ErrorCode::LimitExceeded: return "limit exceeded";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::DeviceUnavailable: return "device unavailable";
    case ErrorCode::Divergence: return "divergence";
    case ErrorCode::Internal: return "internal error";
  }
  return "error";
}

static std::string format_error(ErrorCode code, const std::string& message, const std::string& node,
                                const std::string& op) {
  std::string text = error_code_name(code);
  if (!node.empty() || !op.empty()) {
    text += " at node '" + node + "'";
    if (!op.empty()) text += " (" + op + ")";
  }
  return text + ": " + message;
}

Error::Error(ErrorCode code, std::string message, std::string node, std::string op)
    : std::runtime_error(format_error(code, message, node, op)),
      code_(code),
      node_(std::move(node)),
      op_(std::move(op)),
      message_(std::move(message)) {}

}  // namespace lockstep
