#include "passes/pipeline.h"

#include <algorithm>
#include <iostream>

#include "ir/print.h"
#include "ir/verify.h"
#include "passes/check_memory_plan.h"
#include "passes/eliminate_dead_code.h"
#include "passes/fold_constants.h"
#include "passes/fuse_epilogues.h"
#include "passes/infer_shapes.h"
#include "passes/plan_memory.h"
#include "passes/simplify_algebra.h"

namespace lockstep::passes {

bool PassContext::should_apply(const char* pass, const std::string& what) {
  if (options_.opt_bisect_limit >= 0 && applications_ >= options_.opt_bisect_limit) return false;
  ++applications_;
  log_.push_back("#" + std::to_string(applications_) + " " + pass + ": " + what);
  return true;
}

void bind_inputs(ir::Graph& graph, const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, shape] : shapes) {
    ir::ValueId id = graph.find_value(name);
    if (id == ir::kNoValue || std::find(graph.inputs.begin(), graph.inputs.end(), id) == graph.inputs.end()) {
      std::string known;
      for (ir::ValueId in : graph.inputs) known += (known.empty() ? "" : ", ") + graph.value(in).name;
      throw Error(ErrorCode::InvalidArgument, "a shape was given for '" + name + "', which is no graph input (inputs: " +
                                                  known + ")");
    }
    ir::Value& value = graph.value(id);
    if (shape.size() != value.shape.size())
      throw Error(ErrorCode::ShapeMismatch, "input '" + name + "' has rank " + std::to_string(value.shape.size()) +
                                                ", the given shape " + shape_str(shape) + " has rank " +
                                                std::to_string(shape.size()));
    for (int64_t d : shape)
      if (d < 0) throw Error(ErrorCode::InvalidArgument, "input '" + name + "': negative dim in " + shape_str(shape));
    value.shape = shape;
  }
  for (ir::ValueId id : graph.inputs) {
    const ir::Value& value = graph.value(id);
    for (size_t d = 0; d < value.shape.size(); ++d) {
      if (value.shape[d] >= 0) continue;
      std::string param = d < value.dim_params.size() && !value.dim_params[d].empty() ? value.dim_params[d] : "?";
      throw Error(ErrorCode::ShapeMismatch, "input '" + value.name + "' dim " + std::to_string(d) + " ('" + param +
                                                "') is unknown: give it with --input-shape " + value.name +
                                                "=d0,d1,...");
    }
  }
}

bool has_run_time_shapes(const ir::Graph& graph) {
  for (const auto& node : graph.nodes)
    for (ir::ValueId id : node.outputs)
      if (id != ir::kNoValue && !graph.value(id).shape_known()) return true;
  return false;
}

bool plan_when_shapes_known(ir::Graph& graph, int64_t max_memory_bytes) {
  if (has_run_time_shapes(graph)) return false;
  plan_memory(graph, max_memory_bytes);
  check_memory_plan(graph);
  return true;
}

namespace {

// Dumps and hands the graph to the test hook after each pass.
class PassLogger {
 public:
  PassLogger(const PipelineOptions& options, const PassContext& ctx) : options_(options), ctx_(ctx) {}
  void after(const std::string& pass, ir::Graph& graph) {
    if (options_.fault && !faulted_ && options_.fault_application > 0 &&
        ctx_.applications() >= options_.fault_application) {
      options_.fault(graph);  // test-only corruption (PipelineOptions::fault)
      faulted_ = true;
    }
    if (options_.print_after_all) {
      std::ostream& out = options_.dump ? *options_.dump : std::cerr;
      out << "// IR after " << pass << " (applications so far: " << ctx_.applications() << ")\n";
      ir::print(graph, out);
    }
    if (options_.after_pass) options_.after_pass(pass, graph, ctx_.applications());
  }

 private:
  const PipelineOptions& options_;
  const PassContext& ctx_;
  bool faulted_ = false;
};

}  // namespace

std::vector<std::string> run_pipeline(ir::Graph& graph, const PipelineOptions& options) {
  PassContext ctx(options);
  PassLogger logger(options, ctx);
  ir::verify(graph);
  infer_shapes(graph, options.fold_moved_max_bytes);
  logger.after("infer_shapes", graph);
  fold_constants(graph, ctx);
  logger.after("fold_constants", graph);
  eliminate_dead_code(graph, ctx);
  logger.after("eliminate_dead_code", graph);
  simplify_algebra(graph, ctx);
  logger.after("simplify_algebra", graph);
  if (options.fuse) {
    fuse_epilogues(graph, ctx);
    logger.after("fuse_epilogues", graph);
  }
  eliminate_dead_code(graph, ctx);
  logger.after("eliminate_dead_code", graph);
  // A value whose shape is known only at run time (a NonZero output) cannot be planned: such a
  // graph runs on the reference, or in segments through the run-time shape stage.
  if (options.plan && plan_when_shapes_known(graph, options.max_memory_bytes)) logger.after("plan_memory", graph);
  ir::verify(graph);
  return ctx.log();
}

}  // namespace lockstep::passes
