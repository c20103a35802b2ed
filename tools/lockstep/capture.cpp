#include "capture.h"

#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"
#include "core/npy.h"
#include "dynamic/executable.h"
#include "ir/graph.h"
#include "reference/evaluate.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {

namespace fs = std::filesystem;

constexpr int kSpacedAnchors = 8;

std::vector<Anchor> choose_anchors(const ir::Graph& graph, bool embedded_default) {
  std::vector<Anchor> out;
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> indices;
  if (embedded_default) indices = zoo::seed_flow_anchors();
  else
    for (int j = 1; j <= kSpacedAnchors && n > 0; ++j) {
      int index = std::max(1, (n * j + kSpacedAnchors / 2) / kSpacedAnchors);
      if (indices.empty() || indices.back() != index) indices.push_back(index);
    }
  for (int index : indices)
    if (index >= 1 && index <= n) out.push_back({index, graph.nodes[index - 1].name});
  return out;
}

Capture run_with_taps(Executable& exe, const std::vector<Tensor>& inputs, const std::vector<Anchor>& anchors,
                      uint64_t seed) {
  const ir::Graph& g = exe.graph();
  Capture c;
  c.anchors.resize(anchors.size());
  c.status.resize(anchors.size(), kAnchorRemoved);
  // kernel (compiled node name) -> anchors whose value it produces
  std::vector<std::pair<std::string, size_t>> wanted;
  for (size_t k = 0; k < anchors.size(); ++k) {
    int node = g.find_node(anchors[k].name);
    if (node < 0) continue;
    if (g.nodes[node].result_onnx_name() == anchors[k].name) {
      c.status[k] = kAnchorOk;
      wanted.emplace_back(g.nodes[node].name, k);
    } else {
      c.status[k] = std::string(kAnchorFused) + " into " + g.nodes[node].result_onnx_name();
    }
  }
  RunOptions options;
  options.seed = seed;
  options.tap = [&](const ir::Node& node, int output_index, const Tensor& value) {
    if (output_index != 0) return;
    for (const auto& [name, k] : wanted)
      if (name == node.name) c.anchors[k] = value.clone();
  };
  c.outputs = exe.run(inputs, options);
  // With run-time shapes, exe.graph() is the model's graph: an anchor the call's specialisation
  // folded (shape arithmetic) or fused away is only known to be gone after the run.
  const bool run_time_shapes = dynamic::stats(exe) != nullptr;
  for (size_t k = 0; k < anchors.size(); ++k)
    if (c.status[k] == kAnchorOk && !c.anchors[k].defined()) {
      if (run_time_shapes) c.status[k] = kAnchorRemoved;
      else throw Error(ErrorCode::Internal, exe.backend_name() + " backend: no tap for anchor '" + anchors[k].name + "'");
    }
  return c;
}

Capture reference_capture(const Model& model, const Options& options, const std::vector<Tensor>& inputs,
                          const std::vector<Anchor>& anchors, uint64_t seed) {
  Options unfused = options;
  unfused.fuse = false;
  // Through compile(): a model with run-time shapes (a voice) goes through the shape stage.
  std::unique_ptr<Executable> exe = compile(model, "reference", unfused);
  Capture c;
  c.anchors.resize(anchors.size());
  c.status.resize(anchors.size(), kAnchorRemoved);
  auto tap = [&](const ir::Node& node, int output_index, const Tensor& value) {
    if (output_index != 0) return;
    for (size_t k = 0; k < anchors.size(); ++k)
      if (node.result_onnx_name() == anchors[k].name) {
        c.anchors[k] = value.clone();
        c.status[k] = kAnchorOk;
      }
  };
  RunOptions run;
  run.tap = tap;
  run.seed = seed;
  c.outputs = exe->run(inputs, run);
  return c;
}

void write_capture(const std::string& dir, const Capture& capture) {
  std::ostringstream status;
  for (size_t k = 0; k < capture.anchors.size(); ++k) {
    status << capture.status[k] << '\n';
    if (capture.anchors[k].defined())
      write_npy((fs::path(dir) / ("anchor_" + std::to_string(k) + ".npy")).string(), capture.anchors[k]);
  }
  for (size_t i = 0; i < capture.outputs.size(); ++i)
    write_npy((fs::path(dir) / ("output_" + std::to_string(i) + ".npy")).string(), capture.outputs[i]);
  // Written last: its presence says the capture is complete.
  write_file_atomic((fs::path(dir) / "status.txt").string(), status.str());
}

Capture read_capture(const std::string& dir, size_t anchor_count, size_t output_count) {
  Capture c;
  std::istringstream status(read_file((fs::path(dir) / "status.txt").string()));
  std::string line;
  while (std::getline(status, line)) c.status.push_back(line);
  if (c.status.size() != anchor_count)
    throw Error(ErrorCode::Internal, "worker in '" + dir + "' reported " + std::to_string(c.status.size()) +
                                         " anchors, expected " + std::to_string(anchor_count));
  c.anchors.resize(anchor_count);
  for (size_t k = 0; k < anchor_count; ++k)
    if (c.status[k] == kAnchorOk) c.anchors[k] = read_npy((fs::path(dir) / ("anchor_" + std::to_string(k) + ".npy")).string());
  for (size_t i = 0; i < output_count; ++i)
    c.outputs.push_back(read_npy((fs::path(dir) / ("output_" + std::to_string(i) + ".npy")).string()));
  return c;
}

}  // namespace lockstep::cli
