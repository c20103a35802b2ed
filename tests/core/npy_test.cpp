// .npy/.npz against files written by numpy itself (generated at test time with python3).
#include "core/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_npy_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Runs a python3 snippet with `d` = the temp dir; returns false when python3/numpy are missing.
  bool python(const std::string& code) const {
    std::string script = path("gen.py");
    std::ofstream(script) << "import numpy as np, os\nd = '" << dir_.string() << "'\n" << code << "\n";
    return std::system(("python3 " + script + " >/dev/null 2>&1").c_str()) == 0;
  }
  void write_raw(const std::string& name, const std::string& bytes) const { std::ofstream(path(name), std::ios::binary) << bytes; }
  fs::path dir_;
};

TEST_F(NpyTest, ReadsEveryDtypeNumpyWrites) {
  ASSERT_TRUE(python(
      "np.save(d+'/f4.npy', np.arange(6, dtype=np.float32).reshape(2,3) * 0.5)\n"
      "np.save(d+'/f8.npy', np.array([1.25, -2.5, 1e300]))\n"
      "np.save(d+'/i8.npy', np.array([[-(2**62)], [7]], dtype=np.int64))\n"
      "np.save(d+'/i4.npy', np.array([-3, 4], dtype=np.int32))\n"
      "np.save(d+'/b1.npy', np.array([True, False, True]))\n"
      "np.save(d+'/scalar.npy', np.float32(3.5))\n"
      "np.save(d+'/empty.npy', np.zeros((0, 4), np.float32))\n"))
      << "python3 with numpy is required";
  Tensor f4 = read_npy(path("f4.npy"));
  EXPECT_EQ(f4.dtype(), DType::Float32);
  EXPECT_EQ(f4.shape(), (Shape{2, 3}));
  EXPECT_EQ(f4.data<float>()[5], 2.5f);
  Tensor f8 = read_npy(path("f8.npy"));
  EXPECT_EQ(f8.shape(), (Shape{3}));
  EXPECT_EQ(f8.data<double>()[2], 1e300);
  Tensor i8 = read_npy(path("i8.npy"));
  EXPECT_EQ(i8.shape(), (Shape{2, 1}));
  EXPECT_EQ(i8.data<int64_t>()[0], -(int64_t{1} << 62));
  EXPECT_EQ(read_npy(path("i4.npy")).data<int32_t>()[0], -3);
  Tensor b1 = read_npy(path("b1.npy"));
  EXPECT_EQ(b1.dtype(), DType::Bool);
  EXPECT_TRUE(b1.data<bool>()[2]);
  EXPECT_FALSE(b1.data<bool>()[1]);
  Tensor s = read_npy(path("scalar.npy"));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.data<float>()[0], 3.5f);
  EXPECT_EQ(read_npy(path("empty.npy")).shape(), (Shape{0, 4}));
}

TEST_F(NpyTest, ReadsVersion2Header) {
  ASSERT_TRUE(python(
      "from numpy.lib import format as f\n"
      "with open(d+'/v2.npy','wb') as fh: f.write_array(fh, np.array([1.5, 2.5], np.float32), version=(2,0))\n"));
  Tensor t = read_npy(path("v2.npy"));
  EXPECT_EQ(t.shape(), (Shape{2}));
  EXPECT_EQ(t.data<float>()[1], 2.5f);
}

TEST_F(NpyTest, NumpyReadsWhatWeWrite) {
  write_npy(path("ours_f4.npy"), Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4.5f}));
  write_npy(path("ours_i8.npy"), Tensor::from_vector<int64_t>({3}, {-1, 0, 1}));
  write_npy(path("ours_b.npy"), Tensor::from_vector<bool>({}, {true}));
  write_npy(path("ours_f8.npy"), Tensor::from_vector<double>({1, 1, 2}, {0.1, -0.2}));
  EXPECT_TRUE(python(
      "a = np.load(d+'/ours_f4.npy'); assert a.dtype == np.float32 and a.shape == (2,2) and a[1,1] == 4.5\n"
      "b = np.load(d+'/ours_i8.npy'); assert b.dtype == np.int64 and list(b) == [-1, 0, 1]\n"
      "c = np.load(d+'/ours_b.npy'); assert c.dtype == np.bool_ and c.shape == () and bool(c)\n"
      "e = np.load(d+'/ours_f8.npy'); assert e.shape == (1,1,2) and e[0,0,1] == -0.2\n"));
}

TEST_F(NpyTest, RoundTripsEveryDtype) {
  for (const Tensor& t : {Tensor::from_vector<float>({3}, {1, -2, 3}), Tensor::from_vector<double>({1, 2}, {4, 5}),
                          Tensor::from_vector<int32_t>({2}, {7, -8}), Tensor::from_vector<bool>({2}, {false, true})}) {
    write_npy(path("rt.npy"), t);
    Tensor back = read_npy(path("rt.npy"));
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(std::string(static_cast<const char*>(back.raw()), back.nbytes()),
              std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }
}

TEST_F(NpyTest, ReadsNpzStoredAndDeflated) {
  ASSERT_TRUE(python(
      "np.savez(d+'/s.npz', x=np.arange(4, dtype=np.float32), m=np.ones((1,1,3), np.float32))\n"
      "np.savez_compressed(d+'/c.npz', y=np.arange(1000, dtype=np.int64), z=np.array([0.25]))\n"));
  auto s = read_npz(path("s.npz"));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.at("x").data<float>()[3], 3.0f);
  EXPECT_EQ(s.at("m").shape(), (Shape{1, 1, 3}));
  auto c = read_npz(path("c.npz"));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.at("y").data<int64_t>()[999], 999);
  EXPECT_EQ(c.at("z").data<double>()[0], 0.25);
}

TEST_F(NpyTest, NumpyReadsOurNpz) {
  write_npz(path("ours.npz"), {{"a", Tensor::from_vector<float>({2}, {1, 2})}, {"b", Tensor::from_vector<int64_t>({1}, {9})}});
  EXPECT_TRUE(python(
      "z = np.load(d+'/ours.npz'); assert sorted(z.files) == ['a','b'] and z['a'][1] == 2 and z['b'][0] == 9\n"));
  auto back = read_npz(path("ours.npz"));
  EXPECT_EQ(back.at("b").data<int64_t>()[0], 9);
}

void expect_error(const std::string& file, ErrorCode code) {
  try {
    read_npy(file);
    ADD_FAILURE() << "no error for " << file;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << "message must name the file: " << e.what();
  }
}

TEST_F(NpyTest, MalformedFilesAreErrorsNamingTheFile) {
  ASSERT_TRUE(python(
      "np.save(d+'/good.npy', np.arange(100, dtype=np.float32))\n"
      "np.save(d+'/fortran.npy', np.asfortranarray(np.ones((2,3), np.float32)))\n"
      "np.save(d+'/big.npy', np.arange(3, dtype='>f4'))\n"
      "np.save(d+'/u8.npy', np.arange(3, dtype=np.uint8))\n"));
  std::string good = read_file(path("good.npy"));
  expect_error(path("missing.npy"), ErrorCode::Io);
  expect_error(path("fortran.npy"), ErrorCode::InvalidModel);
  expect_error(path("big.npy"), ErrorCode::InvalidModel);
  expect_error(path("u8.npy"), ErrorCode::InvalidModel);
  // Every truncation of a valid file, and bytes flipped in the header, is an error, not a crash.
  for (size_t n = 0; n < good.size(); n += (n < 140 ? 1 : 37)) {
    write_raw("trunc.npy", good.substr(0, n));
    expect_error(path("trunc.npy"), ErrorCode::InvalidModel);
  }
  write_raw("long.npy", good + "xx");
  expect_error(path("long.npy"), ErrorCode::InvalidModel);
  write_raw("garbage.npy", std::string(300, '\x93'));
  expect_error(path("garbage.npy"), ErrorCode::InvalidModel);
  std::string huge = good;
  size_t at = huge.find("(100,)");
  huge.replace(at, 6, "(999999999999, 999999999999)");
  write_raw("huge.npy", huge);
  try {
    read_npy(path("huge.npy"));
    ADD_FAILURE() << "no error";
  } catch (const Error&) {
  }
  for (size_t i = 8; i < 80; ++i) {
    std::string flipped = good;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    write_raw("flip.npy", flipped);
    try {
      read_npy(path("flip.npy"));
    } catch (const Error&) {
    }
  }
}

TEST_F(NpyTest, MalformedNpzIsAnErrorNotACrash) {
  ASSERT_TRUE(python("np.savez_compressed(d+'/c.npz', y=np.arange(1000, dtype=np.int64))\n"));
  std::string good = read_file(path("c.npz"));
  int errors = 0;
  for (size_t n = 0; n < good.size(); n += 7) {
    write_raw("t.npz", good.substr(0, n));
    try {
      read_npz(path("t.npz"));
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("t.npz"), std::string::npos);
    }
  }
  EXPECT_EQ(errors, static_cast<int>((good.size() + 6) / 7));
  for (size_t i = 0; i < good.size(); i += 3) {
    std::string flipped = good;
    flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
    write_raw("f.npz", flipped);
    try {
      read_npz(path("f.npz"));
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace lockstep
