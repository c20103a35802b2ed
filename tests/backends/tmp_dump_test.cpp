#include <gtest/gtest.h>
#include <iostream>
#include "ir/print.h"
#include "onnx/import.h"
#include "passes/pipeline.h"
#include "support/fixtures.h"
namespace lockstep {
TEST(TmpDump, Low) {
  ir::Graph g = onnx::import_model(test::shared_model("vits_low_dec_T128"));
  passes::bind_inputs(g, {});
  passes::run_pipeline(g, {});
  std::cout << ir::to_string(g);
}
}
