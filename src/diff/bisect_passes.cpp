#include "diff/bisect_passes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "diff/bisect.h"
#include "diff/metrics.h"
#include "ir/print.h"
#include "passes/pipeline.h"
#include "reference/evaluate.h"

namespace lockstep::diff {

ir::Graph prepare_with_limit(const Model& model, const BisectPassesConfig& config, int limit,
                             std::vector<std::string>* log) {
  ir::Graph graph = model.graph();
  passes::bind_inputs(graph, config.options.input_shapes);
  passes::PipelineOptions pipeline;
  pipeline.opt_bisect_limit = limit;
  pipeline.fuse = config.options.fuse;
  pipeline.observe = config.options.observe;
  pipeline.max_memory_bytes = config.options.max_memory_bytes;
  pipeline.fault_application = config.fault_application;
  pipeline.fault = config.fault;
  std::vector<std::string> made = passes::run_pipeline(graph, pipeline);
  if (log) *log = std::move(made);
  return graph;
}

namespace {

double output_error(const std::vector<Tensor>& test, const std::vector<Tensor>& ref) {
  if (test.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < test.size(); ++i) {
    Metrics m = compare(test[i], ref[i]);
    double e = (!m.shape_match || m.nan_count_test > 0 || std::isnan(m.rel_l2)) ? std::numeric_limits<double>::infinity()
                                                                                  : m.rel_l2;
    worst = std::max(worst, e);
  }
  return worst;
}

}  // namespace

BisectPassesReport bisect_passes(const Model& model, const std::vector<Tensor>& inputs,
                                 const BisectPassesConfig& config) {
  const Backend& backend = require_backend(config.backend);
  BisectPassesReport report;
  report.backend = backend.name();
  prepare_with_limit(model, config, -1, &report.log);
  report.total_applications = static_cast<int>(report.log.size());

  // The float64 reference of the unoptimized graph (no application at all).
  const std::vector<Tensor> ref = reference::evaluate(prepare_with_limit(model, config, 0), inputs);

  auto probe = [&](int limit) {
    ir::Graph graph = prepare_with_limit(model, config, limit);
    for (const auto& node : graph.nodes)
      if (auto reason = backend.unsupported_reason(graph, node))
        throw Error(ErrorCode::UnsupportedOp, backend.name() + " backend: " + *reason, node.name, ir::op_name(node.op));
    auto exe = backend.compile(graph, config.options);
    PassProbe p{limit, output_error(exe->run(inputs), ref), true};
    return p;
  };
  PassProbe base = probe(0);
  report.baseline_error = base.error;
  report.tolerance = std::max(kAgreeRelL2, std::isfinite(base.error) ? config.safety * base.error : 0.0);
  base.within = !exceeds(base.error, report.tolerance);
  report.probes.push_back(base);
  if (!base.within) {
    report.baseline_diverges = true;
    return report;
  }
  PassProbe full = probe(report.total_applications);
  full.within = !exceeds(full.error, report.tolerance);
  report.probes.push_back(full);
  if (full.within) return report;

  // Invariant: limit lo is within tolerance, limit hi is not.
  int lo = 0, hi = report.total_applications;
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    PassProbe p = probe(mid);
    p.within = !exceeds(p.error, report.tolerance);
    report.probes.push_back(p);
    (p.within ? lo : hi) = mid;
  }
  report.culprit = hi;
  report.culprit_line = report.log.at(static_cast<size_t>(hi - 1));
  report.ir_before = ir::to_string(prepare_with_limit(model, config, hi - 1));
  report.ir_after = ir::to_string(prepare_with_limit(model, config, hi));
  return report;
}

}  // namespace lockstep::diff
