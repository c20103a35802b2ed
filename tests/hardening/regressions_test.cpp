// Every file under tests/hardening/regressions/ (inputs that once crashed or misbehaved under a
// fuzzer, minimized) must load as a fuzzer would and end in a lockstep::Error or succeed:
// *.onnx through import + pipeline, *.npy/*.npz (and other names) through the npy/npz parsers.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/npy.h"
#include "onnx/import.h"
#include "passes/pipeline.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

void load_like_fuzz_model(const std::string& bytes) {
  ir::Graph graph = onnx::import_model_bytes(bytes, "");
  std::map<std::string, Shape> shapes;
  for (ir::ValueId id : graph.inputs) {
    Shape s = graph.value(id).shape;
    for (int64_t& d : s)
      if (d < 0) d = 2;
    shapes[graph.value(id).name] = s;
  }
  passes::bind_inputs(graph, shapes);
  passes::PipelineOptions options;
  options.max_memory_bytes = int64_t{256} << 20;
  passes::run_pipeline(graph, options);
}

TEST(FuzzRegressions, EveryCheckedInCaseIsRefusedCleanly) {
  const fs::path dir = fs::path(lockstep_test::source_dir()) / "tests/hardening/regressions";
  int cases = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() == "README.md") continue;
    ++cases;
    const std::string bytes = read_file(e.path().string());
    SCOPED_TRACE(e.path().filename().string());
    try {
      if (e.path().extension() == ".onnx") {
        load_like_fuzz_model(bytes);
      } else {
        try {
          parse_npy(bytes, e.path().string());
        } catch (const Error&) {
        }
        parse_npz(bytes, e.path().string());
      }
    } catch (const Error&) {
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "non-lockstep exception: " << ex.what();
    }
  }
  std::cout << "[ regress ] " << cases << " checked-in fuzz cases\n";
}

}  // namespace
}  // namespace lockstep
