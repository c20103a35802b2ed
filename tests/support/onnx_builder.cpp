#include "support/onnx_builder.h"

#include "onnx/proto_tensor.h"

namespace lockstep::test {

namespace {
void fill_value_info(::onnx::ValueInfoProto* info, const std::string& name, const std::vector<int64_t>& shape,
                     int32_t type) {
  info->set_name(name);
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  auto* s = tt->mutable_shape();
  for (int64_t d : shape) {
    auto* dim = s->add_dim();
    if (d < 0) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}
::onnx::AttributeProto* add_attr(::onnx::NodeProto& node, const std::string& name,
                                 ::onnx::AttributeProto::AttributeType type) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
}  // namespace

OnnxBuilder::OnnxBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("lockstep-test");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

OnnxBuilder& OnnxBuilder::input(const std::string& name, std::vector<int64_t> shape, int32_t type) {
  fill_value_info(model_.mutable_graph()->add_input(), name, shape, type);
  return *this;
}

OnnxBuilder& OnnxBuilder::output(const std::string& name, std::vector<int64_t> shape, int32_t type) {
  fill_value_info(model_.mutable_graph()->add_output(), name, shape, type);
  return *this;
}

OnnxBuilder& OnnxBuilder::initializer(const std::string& name, const Tensor& tensor) {
  auto* t = model_.mutable_graph()->add_initializer();
  onnx::tensor_to_proto(tensor, t);
  t->set_name(name);
  return *this;
}

::onnx::NodeProto& OnnxBuilder::node(const std::string& op, std::vector<std::string> inputs,
                                     std::vector<std::string> outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return *n;
}

std::string OnnxBuilder::bytes() const { return model_.SerializeAsString(); }

void set_ints(::onnx::NodeProto& node, const std::string& name, std::vector<int64_t> values) {
  auto* a = add_attr(node, name, ::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}
void set_int(::onnx::NodeProto& node, const std::string& name, int64_t value) {
  add_attr(node, name, ::onnx::AttributeProto::INT)->set_i(value);
}
void set_float(::onnx::NodeProto& node, const std::string& name, float value) {
  add_attr(node, name, ::onnx::AttributeProto::FLOAT)->set_f(value);
}
void set_string(::onnx::NodeProto& node, const std::string& name, const std::string& value) {
  add_attr(node, name, ::onnx::AttributeProto::STRING)->set_s(value);
}

}  // namespace lockstep::test
