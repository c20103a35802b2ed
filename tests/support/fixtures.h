// Paths to the shared test fixtures and the bug report's deterministic inputs.
#pragma once

#include <string>
#include <vector>

#include "lockstep/tensor.h"

namespace lockstep::test {

// /work/shared/models (the four VITS models with .ref64.npy oracles).
std::string shared_models_dir();
std::string shared_model(const std::string& stem);  // shared_models_dir()/<stem>.onnx
// The ONNX backend node tests of Debian's libonnx-testdata.
std::string onnx_node_data_dir();
// A fresh directory for this test process, removed at exit.
std::string temp_dir();

// The report's inputs: z_p[0,c,t] = 0.5 sin(2π(3c+t)/128) as [1,channels,frames], y_mask = 1 as
// [1,1,frames]; float32, in graph-input order {z_p, y_mask}.
std::vector<Tensor> seed_inputs(int64_t channels, int64_t frames);

}  // namespace lockstep::test
