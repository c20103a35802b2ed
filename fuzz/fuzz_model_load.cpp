// libFuzzer target: bytes -> ONNX import -> bind small input shapes -> pass pipeline through
// memory planning. Any lockstep::Error is a correct refusal; any other exception, crash, hang,
// leak or sanitizer report is a bug (reduce it into tests/hardening/regressions/).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>

#include "ir/graph.h"
#include "lockstep/error.h"
#include "onnx/import.h"
#include "passes/pipeline.h"

namespace {
constexpr int64_t kSymbolicDim = 2;                       // what a dim_param binds to
constexpr int64_t kFuzzArenaCap = int64_t{256} << 20;     // planned memory over this is refused
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // No folder: external data is refused, the fuzzer never touches the file system.
    lockstep::ir::Graph graph =
        lockstep::onnx::import_model_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "");
    std::map<std::string, lockstep::Shape> shapes;
    for (lockstep::ir::ValueId id : graph.inputs) {
      const auto& v = graph.value(id);
      lockstep::Shape s = v.shape;
      for (int64_t& d : s)
        if (d < 0) d = kSymbolicDim;
      shapes[v.name] = s;
    }
    lockstep::passes::bind_inputs(graph, shapes);
    lockstep::passes::PipelineOptions options;
    options.max_memory_bytes = kFuzzArenaCap;
    lockstep::passes::run_pipeline(graph, options);
  } catch (const lockstep::Error&) {
  }
  return 0;
}
