// Builds small ONNX models in C++ for tests (bad inputs, old opset forms, round trips).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "lockstep/tensor.h"
#include "onnx/onnx.pb.h"

namespace lockstep::test {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 17);

  // A graph input / output of elem type `type` (TensorProto code); dim -1 becomes dim_param "N".
  OnnxBuilder& input(const std::string& name, std::vector<int64_t> shape, int32_t type = 1);
  OnnxBuilder& output(const std::string& name, std::vector<int64_t> shape = {}, int32_t type = 1);
  OnnxBuilder& initializer(const std::string& name, const Tensor& tensor);
  // Adds a node; attributes are added through the returned proto.
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                          const std::string& name = "");

  ::onnx::ModelProto& proto() { return model_; }
  std::string bytes() const;

 private:
  ::onnx::ModelProto model_;
};

void set_ints(::onnx::NodeProto& node, const std::string& name, std::vector<int64_t> values);
void set_int(::onnx::NodeProto& node, const std::string& name, int64_t value);
void set_float(::onnx::NodeProto& node, const std::string& name, float value);
void set_string(::onnx::NodeProto& node, const std::string& name, const std::string& value);

}  // namespace lockstep::test
