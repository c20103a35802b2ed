// The hostile-model catalogue (issue 5): each model is made here, written to its own folder,
// loaded as a user would (Model::load) and compiled for the CPU backend with small shapes. Each
// must end in its expected Error code with a message fragment: never a crash, a wrong answer or
// another exception. scripts/ci-sanitizers.sh runs this under ASan/UBSan.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/atomic_file.h"
#include "core/limits.h"
#include "lockstep/lockstep.h"
#include "support/fixtures.h"
#include "support/onnx_builder.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using test::OnnxBuilder;

struct Case {
  std::string name;
  // Writes the model (and any side files) into `dir`; returns the model's path.
  std::function<std::string(const std::string& dir)> make;
  ErrorCode code;
  std::string fragment;
  limits::Limits limits{};     // process caps while this case runs
  int64_t max_memory_bytes = 0;
};

std::string write_model(const std::string& dir, const std::string& bytes) {
  std::string path = dir + "/model.onnx";
  write_file_atomic(path, bytes);
  return path;
}

// x[2,3] -> Relu -> y: the valid base most cases break.
OnnxBuilder relu_model(int64_t opset = 17) {
  OnnxBuilder b(opset);
  b.input("x", {2, 3});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y", {2, 3});
  return b;
}

// relu_model + Add(y, w) where w is an initializer [2,3] float stored as external data.
OnnxBuilder external_model(const std::vector<std::pair<std::string, std::string>>& keys) {
  OnnxBuilder b(17);
  b.input("x", {2, 3});
  b.node("Add", {"x", "w"}, {"y"}, "add");
  b.output("y", {2, 3});
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_dims(3);
  t->set_data_location(::onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : keys) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  return b;
}

std::function<std::string(const std::string&)> from(std::function<OnnxBuilder()> build) {
  return [build](const std::string& dir) { return write_model(dir, build().bytes()); };
}

// An initializer with the given dims and raw_data bytes, used by Add(x, w).
std::function<std::string(const std::string&)> initializer_case(std::vector<int64_t> dims, size_t raw_bytes) {
  return from([dims, raw_bytes] {
    OnnxBuilder b(17);
    b.input("x", {2, 3});
    b.node("Add", {"x", "w"}, {"y"}, "add");
    b.output("y");
    auto* t = b.proto().mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(raw_bytes, '\0'));
    return b;
  });
}

std::vector<Case> catalogue() {
  const std::string secret = test::temp_dir() + "/catalogue_secret.bin";  // outside every case folder
  write_file_atomic(secret, std::string(24, '\x01'));
  std::vector<Case> c;
  // ---- protobuf level ----
  c.push_back({"truncated_protobuf", [](const std::string& d) {
                 std::string b = relu_model().bytes();
                 return write_model(d, b.substr(0, b.size() / 2));
               }, ErrorCode::InvalidModel, "protobuf cannot be parsed"});
  c.push_back({"empty_file", [](const std::string& d) { return write_model(d, ""); }, ErrorCode::InvalidModel,
               "protobuf"});
  c.push_back({"garbage_bytes", [](const std::string& d) { return write_model(d, std::string("\xff\xff\xff\xff\x0f", 5)); },
               ErrorCode::InvalidModel, "protobuf"});
  // Field 7 (graph) sent as a varint: protobuf keeps it as an unknown field, so no graph.
  c.push_back({"wrong_wire_type_graph", [](const std::string& d) {
                 return write_model(d, std::string("\x08\x08\x38\x01", 4));
               }, ErrorCode::InvalidModel, "no graph"});
  // Field 7 claims 200 bytes that are not there.
  c.push_back({"length_past_end", [](const std::string& d) {
                 return write_model(d, relu_model().bytes() + std::string("\x3a\xc8\x01\x00", 4));
               }, ErrorCode::InvalidModel, "protobuf"});
  c.push_back({"no_graph", from([] {
                 OnnxBuilder b = relu_model();
                 b.proto().clear_graph();
                 return b;
               }), ErrorCode::InvalidModel, "no graph"});
  // ---- opsets ----
  c.push_back({"opset_0", from([] { return relu_model(0); }), ErrorCode::UnsupportedOpset, "opset 0"});
  c.push_back({"opset_999", from([] { return relu_model(999); }), ErrorCode::UnsupportedOpset, "opset 999"});
  c.push_back({"no_default_opset", from([] {
                 OnnxBuilder b = relu_model();
                 b.proto().mutable_opset_import(0)->set_domain("com.example");
                 return b;
               }), ErrorCode::UnsupportedOpset, "no default-domain"});
  c.push_back({"custom_domain_node", from([] {
                 OnnxBuilder b = relu_model();
                 b.proto().mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
                 return b;
               }), ErrorCode::UnsupportedOpset, "com.microsoft"});
  // ---- ops and attributes ----
  c.push_back({"unsupported_op", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2});
                 b.node("NonMaxSuppression", {"x"}, {"y"}, "nms");
                 b.output("y");
                 return b;
               }), ErrorCode::UnsupportedOp, "NonMaxSuppression"});
  // Subgraph ops (recursion) are refused outright: lockstep has no control flow.
  c.push_back({"subgraph_if", from([] {
                 OnnxBuilder b(17);
                 b.input("c", {}, ::onnx::TensorProto::BOOL);
                 auto& n = b.node("If", {"c"}, {"y"}, "branch");
                 auto* a = n.add_attribute();
                 a->set_name("then_branch");
                 a->set_type(::onnx::AttributeProto::GRAPH);
                 *a->mutable_g() = relu_model().proto().graph();
                 b.output("y");
                 return b;
               }), ErrorCode::UnsupportedOp, "If"});
  c.push_back({"subgraph_loop", from([] {
                 OnnxBuilder b(17);
                 b.input("n", {}, ::onnx::TensorProto::INT64);
                 b.node("Loop", {"n"}, {"y"}, "loop");
                 b.output("y");
                 return b;
               }), ErrorCode::UnsupportedOp, "Loop"});
  c.push_back({"wrong_attribute_type", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2}).input("z", {2});
                 test::set_float(b.node("Concat", {"x", "z"}, {"y"}, "cat"), "axis", 0.0f);
                 b.output("y");
                 return b;
               }), ErrorCode::UnsupportedAttribute, "axis"});
  c.push_back({"graph_attribute_on_relu", from([] {
                 OnnxBuilder b = relu_model();
                 auto* a = b.proto().mutable_graph()->mutable_node(0)->add_attribute();
                 a->set_name("body");
                 a->set_type(::onnx::AttributeProto::GRAPH);
                 return b;
               }), ErrorCode::UnsupportedAttribute, "body"});
  c.push_back({"missing_required_attribute_cast_to", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2});
                 b.node("Cast", {"x"}, {"y"}, "caster");
                 b.output("y");
                 return b;
               }), ErrorCode::InvalidModel, "to"});
  c.push_back({"conv_without_weights", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {1, 1, 8});
                 b.node("Conv", {"x"}, {"y"}, "conv");
                 b.output("y");
                 return b;
               }), ErrorCode::InvalidModel, "conv"});
  c.push_back({"gather_of_missing_input", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {4});
                 b.node("Gather", {"x", "nowhere"}, {"y"}, "gather");
                 b.output("y");
                 return b;
               }), ErrorCode::InvalidModel, "'nowhere' is produced by no node"});
  // ---- structure ----
  c.push_back({"duplicate_value_names", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2});
                 b.node("Relu", {"x"}, {"y"}, "one");
                 b.node("Neg", {"x"}, {"y"}, "two");
                 b.output("y");
                 return b;
               }), ErrorCode::InvalidModel, "produced twice"});
  c.push_back({"duplicate_graph_input", from([] {
                 OnnxBuilder b = relu_model();
                 b.input("x", {2, 3});
                 return b;
               }), ErrorCode::InvalidModel, "listed twice"});
  c.push_back({"dangling_graph_output", from([] {
                 OnnxBuilder b = relu_model();
                 b.output("ghost");
                 return b;
               }), ErrorCode::InvalidModel, "'ghost'"});
  c.push_back({"cycle", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2});
                 b.node("Add", {"x", "b"}, {"a"}, "first");
                 b.node("Neg", {"a"}, {"b"}, "second");
                 b.output("b");
                 return b;
               }), ErrorCode::InvalidModel, "cycle"});
  c.push_back({"self_loop", from([] {
                 OnnxBuilder b(17);
                 b.node("Neg", {"a"}, {"a"}, "ouroboros");
                 b.output("a");
                 return b;
               }), ErrorCode::InvalidModel, "cycle"});
  c.push_back({"no_outputs", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2});
                 b.node("Relu", {"x"}, {"y"}, "relu");
                 return b;
               }), ErrorCode::InvalidModel, "no outputs"});
  c.push_back({"nameless_initializer", from([] {
                 OnnxBuilder b = relu_model();
                 b.initializer("", Tensor::from_vector<float>({1}, {1.0f}));
                 return b;
               }), ErrorCode::InvalidModel, "no name"});
  // ---- tensor data ----
  c.push_back({"negative_dim_initializer", initializer_case({2, -3}, 24), ErrorCode::InvalidModel, "negative dim"});
  c.push_back({"huge_dims_tiny_data", initializer_case({1 << 30, 1 << 30}, 24), ErrorCode::InvalidModel, "raw_data"});
  c.push_back({"dim_product_overflows_int64",
               initializer_case({int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40}, 24), ErrorCode::LimitExceeded,
               "overflows int64"});
  c.push_back({"raw_data_too_long", initializer_case({2, 3}, 25), ErrorCode::InvalidModel, "25 bytes of raw_data"});
  c.push_back({"raw_data_too_short", initializer_case({2, 3}, 23), ErrorCode::InvalidModel, "23 bytes of raw_data"});
  c.push_back({"typed_data_count_mismatch", from([] {
                 OnnxBuilder b = relu_model();
                 auto* t = b.proto().mutable_graph()->add_initializer();
                 t->set_name("w");
                 t->set_data_type(::onnx::TensorProto::FLOAT);
                 t->add_dims(4);
                 t->add_float_data(1.0f);
                 return b;
               }), ErrorCode::InvalidModel, "needs 4"});
  c.push_back({"unsupported_dtype_float16", from([] {
                 OnnxBuilder b = relu_model();
                 auto* t = b.proto().mutable_graph()->add_initializer();
                 t->set_name("half");
                 t->set_data_type(::onnx::TensorProto::FLOAT16);
                 t->add_dims(1);
                 t->set_raw_data(std::string(2, '\0'));
                 return b;
               }), ErrorCode::UnsupportedAttribute, "FLOAT16"});
  c.push_back({"sparse_initializer", from([] {
                 OnnxBuilder b = relu_model();
                 b.proto().mutable_graph()->add_sparse_initializer()->mutable_values()->set_name("sp");
                 return b;
               }), ErrorCode::UnsupportedAttribute, "sparse"});
  // ---- input shapes ----
  c.push_back({"negative_input_dim", from([] {
                 OnnxBuilder b = relu_model();
                 b.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
                     ->mutable_dim(0)->set_dim_value(-5);
                 return b;
               }), ErrorCode::InvalidModel, "-5"});
  c.push_back({"huge_input_dims_overflow", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {int64_t{1} << 40, int64_t{1} << 40});
                 b.node("Relu", {"x"}, {"y"}, "relu");
                 b.output("y");
                 return b;
               }), ErrorCode::LimitExceeded, "overflow"});
  // ---- external data ----
  c.push_back({"external_absolute_path", [secret](const std::string& d) {
                 return write_model(d, external_model({{"location", secret}}).bytes());
               }, ErrorCode::InvalidModel, "absolute paths are refused"});
  c.push_back({"external_dotdot_traversal", [](const std::string& d) {
                 return write_model(d, external_model({{"location", "../catalogue_secret.bin"}}).bytes());
               }, ErrorCode::InvalidModel, "'..' components are refused"});
  c.push_back({"external_dotdot_inside", [](const std::string& d) {
                 fs::create_directories(d + "/sub");
                 return write_model(d, external_model({{"location", "sub/../w.bin"}}).bytes());
               }, ErrorCode::InvalidModel, "'..'"});
  c.push_back({"external_symlink_escape", [secret](const std::string& d) {
                 fs::create_symlink(secret, d + "/w.bin");
                 return write_model(d, external_model({{"location", "w.bin"}}).bytes());
               }, ErrorCode::InvalidModel, "outside the model's folder"});
  c.push_back({"external_dir_symlink_escape", [secret](const std::string& d) {
                 fs::create_directory_symlink(fs::path(secret).parent_path(), d + "/up");
                 return write_model(d, external_model({{"location", "up/catalogue_secret.bin"}}).bytes());
               }, ErrorCode::InvalidModel, "outside the model's folder"});
  c.push_back({"external_offset_past_end", [](const std::string& d) {
                 write_file_atomic(d + "/w.bin", std::string(24, '\0'));
                 return write_model(d, external_model({{"location", "w.bin"}, {"offset", "100"}}).bytes());
               }, ErrorCode::InvalidModel, "past the end"});
  c.push_back({"external_length_past_end", [](const std::string& d) {
                 write_file_atomic(d + "/w.bin", std::string(24, '\0'));
                 return write_model(d, external_model({{"location", "w.bin"}, {"offset", "8"}, {"length", "24"}}).bytes());
               }, ErrorCode::InvalidModel, "runs past the end"});
  c.push_back({"external_length_wrong_for_shape", [](const std::string& d) {
                 write_file_atomic(d + "/w.bin", std::string(64, '\0'));
                 return write_model(d, external_model({{"location", "w.bin"}, {"length", "16"}}).bytes());
               }, ErrorCode::InvalidModel, "needs 24"});
  c.push_back({"external_negative_offset", [](const std::string& d) {
                 write_file_atomic(d + "/w.bin", std::string(24, '\0'));
                 return write_model(d, external_model({{"location", "w.bin"}, {"offset", "-8"}}).bytes());
               }, ErrorCode::InvalidModel, "not a non-negative integer"});
  c.push_back({"external_missing_file", [](const std::string& d) {
                 return write_model(d, external_model({{"location", "absent.bin"}}).bytes());
               }, ErrorCode::Io, "absent.bin"});
  c.push_back({"external_no_location", [](const std::string& d) {
                 return write_model(d, external_model({{"offset", "0"}}).bytes());
               }, ErrorCode::InvalidModel, "names no 'location'"});
  c.push_back({"external_is_directory", [](const std::string& d) {
                 fs::create_directories(d + "/w.bin");
                 return write_model(d, external_model({{"location", "w.bin"}}).bytes());
               }, ErrorCode::InvalidModel, "not a regular file"});
  // ---- limits ----
  c.push_back({"node_count_over_cap", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {2});
                 std::string prev = "x";
                 for (int i = 0; i < 11; ++i) {
                   std::string next = "v" + std::to_string(i);
                   b.node("Relu", {prev}, {next});
                   prev = next;
                 }
                 b.output(prev);
                 return b;
               }), ErrorCode::LimitExceeded, "11 nodes; the cap is 10", limits::Limits{0, 10}});
  c.push_back({"model_bytes_over_cap", from([] { return relu_model(); }), ErrorCode::LimitExceeded,
               "the cap is 16 bytes", limits::Limits{16, 0}});
  c.push_back({"external_bytes_over_cap", [](const std::string& d) {
                 write_file_atomic(d + "/w.bin", std::string(24, '\0'));
                 OnnxBuilder b = external_model({{"location", "w.bin"}});
                 return write_model(d, b.bytes());
               }, ErrorCode::LimitExceeded, "the model plus its external data", limits::Limits{0, 0}});  // cap set below
  c.push_back({"planned_memory_over_cap", from([] {
                 OnnxBuilder b(17);
                 b.input("x", {1024, 1024});
                 b.node("Relu", {"x"}, {"y"}, "relu");
                 b.output("y");
                 return b;
               }), ErrorCode::LimitExceeded, "1048576", limits::Limits{}, int64_t{1} << 20});
  return c;
}

class Catalogue : public ::testing::TestWithParam<Case> {};

TEST_P(Catalogue, RefusedWithExpectedError) {
  Case c = GetParam();
  const std::string dir = test::temp_dir() + "/catalogue/" + c.name;
  fs::create_directories(dir);
  const std::string path = c.make(dir);
  if (c.name == "external_bytes_over_cap")  // the model itself fits; its 24 external bytes do not
    c.limits.max_model_bytes = static_cast<int64_t>(fs::file_size(path)) + 8;
  limits::set(c.limits);
  std::string what;
  ErrorCode code = ErrorCode::Internal;
  bool thrown = false;
  try {
    Model model = Model::load(path);
    Options options;
    options.threads = 1;
    options.max_memory_bytes = c.max_memory_bytes;
    auto exe = compile(model, "cpu", options);
  } catch (const Error& e) {
    thrown = true;
    code = e.code();
    what = e.what();
  } catch (const std::exception& e) {
    limits::set({});
    FAIL() << "a non-lockstep exception escaped: " << e.what();
  }
  limits::set({});
  std::cout << "[ catalogue ] " << c.name << " -> " << what << "\n";
  ASSERT_TRUE(thrown) << c.name << " was accepted";
  EXPECT_STREQ(error_code_name(code), error_code_name(c.code)) << what;
  EXPECT_NE(what.find(c.fragment), std::string::npos) << "'" << c.fragment << "' not in: " << what;
}

INSTANTIATE_TEST_SUITE_P(Hostile, Catalogue, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(CatalogueSize, AtLeastThirtyCases) { EXPECT_GE(catalogue().size(), 30u); }

// A valid model with external data inside its folder loads and gives the stored values.
TEST(ExternalData, InsideTheFolderLoadsAndRuns) {
  const std::string dir = test::temp_dir() + "/external_ok";
  fs::create_directories(dir + "/weights");
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::string bytes(8, '\x7f');  // 8 bytes of padding before the tensor, skipped by offset
  bytes.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  write_file_atomic(dir + "/weights/w.bin", bytes);
  write_file_atomic(dir + "/model.onnx",
                    external_model({{"location", "weights/w.bin"}, {"offset", "8"}, {"length", "24"}}).bytes());
  auto exe = compile(Model::load(dir + "/model.onnx"), "reference");
  Tensor x = Tensor::from_vector<float>({2, 3}, {10, 20, 30, 40, 50, 60});
  Tensor y = exe->run({x})[0];
  ASSERT_EQ(y.numel(), 6);
  const std::vector<double> want = {11, 22, 33, 44, 55, 66};  // x + w, worked by hand
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<double>()[i], want[static_cast<size_t>(i)]);
}

// A symlink that stays inside the folder is fine; only escapes are refused.
TEST(ExternalData, SymlinkInsideTheFolderIsAccepted) {
  const std::string dir = test::temp_dir() + "/external_symlink_ok";
  fs::create_directories(dir + "/data");
  std::vector<float> w(6, 0.5f);
  write_file_atomic(dir + "/data/real.bin", std::string(reinterpret_cast<const char*>(w.data()), 24));
  fs::create_symlink("data/real.bin", dir + "/w.bin");
  write_file_atomic(dir + "/model.onnx", external_model({{"location", "w.bin"}}).bytes());
  EXPECT_NO_THROW(compile(Model::load(dir + "/model.onnx"), "cpu"));
}

}  // namespace
}  // namespace lockstep
