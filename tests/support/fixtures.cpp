#include "support/paths.h"
#include "support/fixtures.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numbers>

namespace lockstep::test {

namespace {
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("lockstep_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};
}  // namespace

// LOCKSTEP_MODELS_DIR points elsewhere on machines without ../shared (the GPU machine).
std::string shared_models_dir() {
  const char* dir = std::getenv("LOCKSTEP_MODELS_DIR");
  return dir && *dir ? dir : lockstep_test::source_dir() + "/../shared/models";
}
std::string shared_model(const std::string& stem) { return shared_models_dir() + "/" + stem + ".onnx"; }
// Debian's libonnx-testdata; LOCKSTEP_ONNX_NODE_DATA_DIR points elsewhere (e.g. the onnx wheel's
// onnx/backend/test/data/node on a Mac).
std::string onnx_node_data_dir() {
  const char* dir = std::getenv("LOCKSTEP_ONNX_NODE_DATA_DIR");
  return dir && *dir ? dir : "/usr/share/libonnx-testdata/data/node";
}

std::string temp_dir() {
  static TempDir dir;
  return dir.path.string();
}

std::vector<Tensor> seed_inputs(int64_t channels, int64_t frames) {
  Tensor z_p(DType::Float32, {1, channels, frames});
  float* z = z_p.data<float>();
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < frames; ++t)
      z[c * frames + t] = static_cast<float>(0.5 * std::sin(2.0 * std::numbers::pi * double(3 * c + t) / 128.0));
  Tensor y_mask(DType::Float32, {1, 1, frames});
  float* y = y_mask.data<float>();
  for (int64_t t = 0; t < frames; ++t) y[t] = 1.0f;
  return {z_p, y_mask};
}

}  // namespace lockstep::test
