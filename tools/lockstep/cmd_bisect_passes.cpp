// `lockstep bisect-passes`: the first pass application after which a backend's output moves
// beyond tolerance against the float64 reference of the unoptimized graph (binary search on
// --opt-bisect-limit), with the IR before and after it. Exit 0 when no application moves the
// output, 1 when one does (or when the backend is off even with no pass applied).
#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "diff/bisect.h"
#include "diff/bisect_passes.h"
#include "inputs.h"
#include "progress.h"
#include "table.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {

int cmd_bisect_passes(const BisectPassesArgs& args) {
  diff::require_backend(args.backend);
  const bool embedded = args.model.empty();
  Model model = load_model_or_default(args.model);
  ModelInputs inputs;
  if (embedded && !has_input_args(args.inputs)) inputs.tensors = zoo::seed_flow_inputs();
  else inputs = gather_inputs(model.graph(), args.inputs);
  if (inputs.drawn) std::cerr << "lockstep: no inputs given; drawing them from seed " << args.inputs.seed << '\n';

  diff::BisectPassesConfig config;
  config.backend = args.backend;
  config.options.threads = args.common.threads;
  config.options.max_memory_bytes = args.common.max_memory;
  config.options.f64_accumulate = args.common.f64_accumulate_option();
  config.options.input_shapes = inputs.bind;
  Progress progress(1);
  progress.step("bisecting pass applications on " + args.backend);
  diff::BisectPassesReport r = diff::bisect_passes(model, inputs.tensors, config);
  progress.clear();

  if (args.common.json) {
    nlohmann::json j = {{"model", embedded ? "(embedded default)" : args.model},
                        {"backend", r.backend},
                        {"applications", r.total_applications},
                        {"baseline_rel_l2", r.baseline_error},
                        {"tolerance", r.tolerance},
                        {"baseline_diverges", r.baseline_diverges},
                        {"probes", nlohmann::json::array()}};
    for (const auto& p : r.probes)
      j["probes"].push_back({{"limit", p.limit}, {"rel_l2", std::isfinite(p.error) ? nlohmann::json(p.error) : "inf"},
                             {"within", p.within}});
    if (r.found())
      j.update({{"culprit", r.culprit}, {"culprit_line", r.culprit_line}, {"ir_before", r.ir_before},
                {"ir_after", r.ir_after}});
    else j["culprit"] = nullptr;
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "backend: " << r.backend << "; pass applications: " << r.total_applications
              << "; tolerance on the outputs' rel_l2: " << fmt_sci(r.tolerance) << " (max(" << fmt_sci(diff::kAgreeRelL2)
              << ", " << config.safety << " x " << fmt_sci(r.baseline_error) << " with no pass applied))\n";
    Table table({"--opt-bisect-limit", "rel_l2", "verdict"});
    for (const auto& p : r.probes) table.add({std::to_string(p.limit), fmt_sci(p.error), p.within ? "ok" : "MOVED"});
    table.print(std::cout);
    if (r.baseline_diverges) {
      std::cout << "FAIL: " << r.backend << " is beyond tolerance even with no pass applied (rel_l2 "
                << fmt_sci(r.baseline_error) << "): not a pass problem; try `lockstep bisect`\n";
    } else if (!r.found()) {
      std::cout << "PASS: no pass application moves the output beyond tolerance (all " << r.total_applications
                << " applied: rel_l2 " << fmt_sci(r.probes.back().error) << ")\n";
    } else {
      std::cout << "first application after which the output moves: " << r.culprit_line << '\n'
                << "(reproduce: lockstep run MODEL --opt-bisect-limit " << r.culprit - 1 << " vs " << r.culprit
                << ")\n\n// IR before (--opt-bisect-limit " << r.culprit - 1 << ")\n"
                << r.ir_before << "\n// IR after (--opt-bisect-limit " << r.culprit << ")\n" << r.ir_after;
    }
  }
  return (r.found() || r.baseline_diverges) ? kExitFail : kExitOk;
}

}  // namespace lockstep::cli
