// An in-process test runner: lockstep's cpu backend on the model it is given, with a fault
// planted at one ONNX node when the model contains it (kept a kernel boundary via observe).
#pragma once

#include <string>
#include <vector>

#include "diff/fault.h"
#include "diff/runner.h"
#include "lockstep/lockstep.h"

namespace lockstep::test {

inline diff::Runner faulty_cpu(const diff::FaultSpec& spec) {
  return diff::Runner::function("cpu+fault@" + spec.node,
                                [spec](const std::string& path, const diff::NamedTensors& inputs,
                                       const std::vector<std::string>&) {
                                  Model model = Model::load(path);
                                  const ir::Graph& g = model.graph();
                                  Options options;
                                  options.threads = 1;
                                  options.observe = {spec.node};
                                  std::vector<Tensor> feeds;
                                  for (ir::ValueId v : g.inputs) {
                                    Tensor t = inputs.at(g.value(v).name);
                                    options.input_shapes[g.value(v).name] = t.shape();
                                    feeds.push_back(t);
                                  }
                                  auto exe = compile(model, "cpu", options);
                                  RunOptions run;
                                  run.fault_for_testing = diff::make_fault(spec);
                                  std::vector<Tensor> outs = exe->run(feeds, run);
                                  diff::NamedTensors result;
                                  for (size_t i = 0; i < g.outputs.size(); ++i)
                                    result[g.value(g.outputs[i]).name] = outs[i];
                                  return result;
                                });
}

}  // namespace lockstep::test
