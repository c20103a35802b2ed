// Malformed and unsupported models: each is an Error with the right code whose message names
// the node, op and reason; never a crash. Run-time checks (shape, dtype, missing input) go
// through lockstep::compile on the reference and CPU backends.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>

#include "core/atomic_file.h"
#include "lockstep/lockstep.h"
#include "onnx/import.h"
#include "support/fixtures.h"
#include "support/onnx_builder.h"

namespace lockstep {
namespace {

using test::OnnxBuilder;

// Runs `fn`, expects an Error with `code` whose what() contains every string in `needles`.
void expect_error(const std::function<void()>& fn, ErrorCode code, std::vector<std::string> needles) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(error_code_name(e.code()), std::string(error_code_name(code))) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << n << " not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "no Error thrown; wanted " << error_code_name(code);
}

void expect_import_error(const OnnxBuilder& b, ErrorCode code, std::vector<std::string> needles) {
  std::string bytes = b.bytes();
  expect_error([&] { onnx::import_model_bytes(bytes, "."); }, code, std::move(needles));
}

// x[2,3] -> Relu -> y: a valid base model the tests then break.
OnnxBuilder relu_model(int64_t opset = 17) {
  OnnxBuilder b(opset);
  b.input("x", {2, 3});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y", {2, 3});
  return b;
}

TEST(OnnxBadInput, MissingFileIsIo) {
  expect_error([] { onnx::import_model(test::temp_dir() + "/no_such_model.onnx"); }, ErrorCode::Io,
               {"no_such_model.onnx"});
}

TEST(OnnxBadInput, TruncatedFile) {
  std::string bytes = read_file(test::shared_model("vits_seed_174"));
  for (size_t keep : {bytes.size() / 2, bytes.size() - 1, size_t{7}}) {
    std::string path = test::temp_dir() + "/truncated.onnx";
    write_file_atomic(path, std::string_view(bytes).substr(0, keep));
    expect_error([&] { onnx::import_model(path); }, ErrorCode::InvalidModel, {"truncated.onnx"});
  }
}

TEST(OnnxBadInput, GarbageBytes) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(static_cast<size_t>(1 + rng() % 4096), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_error([&] { onnx::import_model_bytes(bytes, "."); }, ErrorCode::InvalidModel, {});
  }
  expect_error([] { onnx::import_model_bytes("", "."); }, ErrorCode::InvalidModel, {"protobuf"});
}

TEST(OnnxBadInput, UnknownOpNamesNodeOpAndOpset) {
  OnnxBuilder b(17);
  b.input("x", {2});
  b.node("FooBar", {"x"}, {"y"}, "mystery");
  b.output("y");
  expect_import_error(b, ErrorCode::UnsupportedOp, {"mystery", "FooBar", "opset 17"});
}

TEST(OnnxBadInput, UnsupportedOpsets) {
  for (int64_t opset : {0, 6, 19, 999}) {
    SCOPED_TRACE(opset);
    expect_import_error(relu_model(opset), ErrorCode::UnsupportedOpset, {"opset " + std::to_string(opset)});
  }
  OnnxBuilder none = relu_model();
  none.proto().clear_opset_import();
  expect_import_error(none, ErrorCode::UnsupportedOpset, {"opset"});
  OnnxBuilder other = relu_model();
  other.proto().mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  expect_import_error(other, ErrorCode::UnsupportedOpset, {"relu", "com.microsoft"});
}

TEST(OnnxBadInput, CyclicGraph) {
  OnnxBuilder b(17);
  b.input("x", {2});
  b.node("Add", {"x", "c"}, {"a"}, "first");
  b.node("Relu", {"a"}, {"b"}, "second");
  b.node("Neg", {"b"}, {"c"}, "third");
  b.output("b");
  expect_import_error(b, ErrorCode::InvalidModel, {"cycle"});
}

TEST(OnnxBadInput, RawDataShorterThanShape) {
  OnnxBuilder b = relu_model();
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("weights");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_dims(3);
  t->set_raw_data(std::string(20, '\0'));  // 5 floats for 6
  expect_import_error(b, ErrorCode::InvalidModel, {"weights", "[2,3]", "24"});
}

TEST(OnnxBadInput, TypedDataLongerThanShape) {
  OnnxBuilder b = relu_model();
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("k");
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(2);
  for (int i = 0; i < 3; ++i) t->add_int64_data(i);
  expect_import_error(b, ErrorCode::InvalidModel, {"k", "3 values"});
}

TEST(OnnxBadInput, HugeShapeWithTinyDataDoesNotAllocate) {
  OnnxBuilder b = relu_model();
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("huge");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int i = 0; i < 3; ++i) t->add_dims(1 << 20);
  t->set_raw_data("abcd");
  expect_import_error(b, ErrorCode::InvalidModel, {"huge"});
}

TEST(OnnxBadInput, UnsupportedTensorDtypeAndExternalData) {
  OnnxBuilder half = relu_model();
  auto* t = half.proto().mutable_graph()->add_initializer();
  t->set_name("half_weights");
  t->set_data_type(::onnx::TensorProto::FLOAT16);
  t->add_dims(1);
  t->set_raw_data(std::string(2, '\0'));
  expect_import_error(half, ErrorCode::UnsupportedAttribute, {"half_weights", "FLOAT16"});

  OnnxBuilder ext = relu_model();
  auto* e = ext.proto().mutable_graph()->add_initializer();
  e->set_name("far_away");
  e->set_data_type(::onnx::TensorProto::FLOAT);
  e->add_dims(1);
  e->set_data_location(::onnx::TensorProto::EXTERNAL);
  expect_import_error(ext, ErrorCode::InvalidModel, {"far_away", "names no 'location'"});

  OnnxBuilder u8(17);
  u8.input("x", {2}, ::onnx::TensorProto::UINT8);
  u8.node("Relu", {"x"}, {"y"});
  u8.output("y");
  expect_import_error(u8, ErrorCode::UnsupportedAttribute, {"'x'", "UINT8"});
}

TEST(OnnxBadInput, DanglingInputName) {
  OnnxBuilder b(17);
  b.input("x", {2});
  b.node("Add", {"x", "ghost"}, {"y"}, "adder");
  b.output("y");
  expect_import_error(b, ErrorCode::InvalidModel, {"adder", "Add", "ghost"});
  OnnxBuilder out = relu_model();
  out.output("nowhere");
  expect_import_error(out, ErrorCode::InvalidModel, {"nowhere"});
}

TEST(OnnxBadInput, ValueProducedTwice) {
  OnnxBuilder b(17);
  b.input("x", {2});
  b.node("Relu", {"x"}, {"y"}, "one");
  b.node("Neg", {"x"}, {"y"}, "two");
  b.output("y");
  expect_import_error(b, ErrorCode::InvalidModel, {"'y'", "produced twice", "two"});
}

TEST(OnnxBadInput, WrongAttributeType) {
  OnnxBuilder b(17);
  b.input("x", {2}).input("z", {2});
  test::set_float(b.node("Concat", {"x", "z"}, {"y"}, "cat"), "axis", 0.0f);
  b.output("y");
  expect_import_error(b, ErrorCode::UnsupportedAttribute, {"cat", "Concat", "axis", "int", "float", "opset 17"});
}

TEST(OnnxBadInput, UnknownAttribute) {
  OnnxBuilder b = relu_model();
  test::set_int(*b.proto().mutable_graph()->mutable_node(0), "bogus", 1);
  expect_import_error(b, ErrorCode::UnsupportedAttribute, {"relu", "Relu", "bogus", "opset 17"});
}

TEST(OnnxBadInput, UnsupportedAttributeValues) {
  OnnxBuilder pad(17);
  pad.input("x", {2, 3});
  pad.initializer("pads", Tensor::from_vector<int64_t>({4}, {0, 1, 0, 1}));
  test::set_string(pad.node("Pad", {"x", "pads"}, {"y"}, "padder"), "mode", "wrap");
  pad.output("y");
  expect_import_error(pad, ErrorCode::UnsupportedAttribute, {"padder", "Pad", "wrap"});

  OnnxBuilder conv(17);
  conv.input("x", {1, 1, 4}).input("w", {1, 1, 3});
  test::set_string(conv.node("Conv", {"x", "w"}, {"y"}, "conv"), "auto_pad", "SAME_SIDEWAYS");
  conv.output("y");
  expect_import_error(conv, ErrorCode::UnsupportedAttribute, {"conv", "Conv", "SAME_SIDEWAYS"});

  OnnxBuilder cast(17);
  cast.input("x", {2});
  test::set_int(cast.node("Cast", {"x"}, {"y"}, "caster"), "to", ::onnx::TensorProto::FLOAT16);
  cast.output("y");
  expect_import_error(cast, ErrorCode::UnsupportedAttribute, {"caster", "Cast", "FLOAT16"});

  OnnxBuilder softmax(11);
  softmax.input("x", {2, 3});
  test::set_int(softmax.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 0);
  softmax.output("y");
  expect_import_error(softmax, ErrorCode::UnsupportedAttribute, {"sm", "Softmax", "axis 0", "opset 11"});
}

TEST(OnnxBadInput, OldAttributeFormAtNewOpset) {
  OnnxBuilder b(13);
  b.input("x", {4});
  auto& s = b.node("Slice", {"x"}, {"y"}, "old_slice");
  test::set_ints(s, "starts", {0});
  test::set_ints(s, "ends", {2});
  b.output("y");
  expect_import_error(b, ErrorCode::UnsupportedAttribute, {"old_slice", "starts", "opset 13"});
}

// ---- Run-time checks by Executable::run (owned by the backends) ----

class RunTimeBadInput : public ::testing::TestWithParam<std::string> {
 protected:
  // Add(x[2,3], z[2,3]) written to a file and loaded as a user would.
  std::unique_ptr<Executable> compile_add() {
    OnnxBuilder b(17);
    b.input("x", {2, 3}).input("z", {2, 3});
    b.node("Add", {"x", "z"}, {"y"}, "add");
    b.output("y", {2, 3});
    std::string path = test::temp_dir() + "/add_" + GetParam() + ".onnx";
    write_file_atomic(path, b.bytes());
    return lockstep::compile(Model::load(path), GetParam());
  }
};

TEST_P(RunTimeBadInput, WrongInputShape) {
  auto exe = compile_add();
  Tensor good(DType::Float32, {2, 3});
  Tensor bad(DType::Float32, {3, 2});
  expect_error([&] { exe->run({good, bad}); }, ErrorCode::ShapeMismatch, {"z"});
}

TEST_P(RunTimeBadInput, WrongInputDtype) {
  auto exe = compile_add();
  Tensor good(DType::Float32, {2, 3});
  Tensor bad(DType::Int64, {2, 3});
  expect_error([&] { exe->run({bad, good}); }, ErrorCode::DTypeMismatch, {"x"});
}

TEST_P(RunTimeBadInput, MissingInput) {
  auto exe = compile_add();
  expect_error([&] { exe->run({Tensor(DType::Float32, {2, 3})}); }, ErrorCode::MissingInput, {"z"});
}

TEST_P(RunTimeBadInput, GoodInputsRun) {
  auto exe = compile_add();
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = exe->run({x, x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(out[0].element_as_double(5), 12.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, RunTimeBadInput, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// Random byte flips of a small valid model: the importer either succeeds or throws Error,
// never anything else (the fuzz seed is printed on failure).
TEST(OnnxBadInput, MutatedModelsNeverCrash) {
  test::OnnxBuilder b(11);
  b.input("x", {1, 2, 8});
  b.initializer("w", Tensor::from_vector<float>({2, 2, 3}, std::vector<float>(12, 0.5f)));
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  test::set_ints(conv, "pads", {1, 1});
  b.initializer("starts", Tensor::from_vector<int64_t>({1}, {1}));
  b.initializer("ends", Tensor::from_vector<int64_t>({1}, {5}));
  b.initializer("axes", Tensor::from_vector<int64_t>({1}, {2}));
  b.node("Slice", {"c", "starts", "ends", "axes"}, {"s"}, "slice");
  auto& split = b.node("Split", {"s"}, {"a", "d"}, "split");
  test::set_int(split, "axis", 1);
  b.node("Mul", {"a", "d"}, {"y"}, "mul");
  b.output("y");
  const std::string good = b.bytes();
  ASSERT_NO_THROW(onnx::import_model_bytes(good, "."));
  const uint32_t seed = 20240601;
  std::mt19937 rng(seed);
  int errors = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = good;
    for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    if (rng() % 8 == 0) bytes.resize(rng() % bytes.size());
    try {
      onnx::import_model_bytes(bytes, ".");
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << " trial " << trial << ": non-lockstep exception " << e.what();
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace lockstep
