// Values at anchor nodes, captured through taps (which never change the compiled program).
// Anchors are ONNX node names; fusion may fold an anchor into another kernel, which is reported.
#pragma once

#include <string>
#include <vector>

#include "lockstep/lockstep.h"

namespace lockstep::cli {

struct Anchor {
  int index = 0;     // 1-based position in the model's (imported) node list
  std::string name;  // the ONNX node name
};

inline const char* kAnchorOk = "ok";
inline const char* kAnchorFused = "fused (no boundary)";
inline const char* kAnchorRemoved = "removed by passes";

struct Capture {
  std::vector<Tensor> anchors;       // per anchor; undefined where there is no value
  std::vector<std::string> status;   // per anchor: kAnchorOk, kAnchorRemoved or "fused (no boundary) into <kernel result>"
  std::vector<Tensor> outputs;
};

// The embedded default's anchors are the report's; other models get evenly spaced nodes
// (the last node included).
std::vector<Anchor> choose_anchors(const ir::Graph& graph, bool embedded_default);

// Runs `exe` once, tapping output 0 of the kernels whose result is an anchor.
// `seed`: the run seed of the model's random ops (RunOptions::seed).
Capture run_with_taps(Executable& exe, const std::vector<Tensor>& inputs, const std::vector<Anchor>& anchors,
                      uint64_t seed = 0);

// Float64 reference values: the model prepared without fusion, evaluated node by node.
Capture reference_capture(const Model& model, const Options& options, const std::vector<Tensor>& inputs,
                          const std::vector<Anchor>& anchors, uint64_t seed = 0);

// A capture as files in `dir` (anchor_K.npy, output_I.npy, status.txt) and back.
void write_capture(const std::string& dir, const Capture& capture);
Capture read_capture(const std::string& dir, size_t anchor_count, size_t output_count);

}  // namespace lockstep::cli
