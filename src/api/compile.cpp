#include <algorithm>
#include <cstdlib>
#include <string>

#include "api/compile_lane.h"
#include "api/f64_default.h"
#include "dynamic/executable.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "passes/pipeline.h"
#include "voices/piper.h"

namespace lockstep {

ir::Graph prepare(const Model& model, const Options& options) {
  ir::Graph graph = model.graph();
  passes::bind_inputs(graph, options.input_shapes);
  passes::PipelineOptions pipeline;
  pipeline.opt_bisect_limit = options.opt_bisect_limit;
  pipeline.print_after_all = options.print_after_all;
  pipeline.fuse = options.fuse;
  pipeline.observe = options.observe;
  pipeline.max_memory_bytes = options.max_memory_bytes;
  passes::run_pipeline(graph, pipeline);
  return graph;
}

namespace {

// How many specialised segments the run-time shape stage keeps (a voice takes 2 a length, 8 when
// its selections are not predicted: dynamic/predict.h). 64 held 8 lengths at 8 a length, so a GPU
// corpus of many lengths compiled every call (bench/RESULTS.md, 2026-12-06): cuda keeps 512, its
// arenas still bounded by max_bytes; the cpu keeps 64. LOCKSTEP_SHAPE_CACHE_SEGMENTS=N overrides both (to measure what a size costs and buys).
dynamic::CacheLimits segment_cache_limits(std::string_view backend, int lanes) {
  dynamic::CacheLimits limits;
  if (backend == "cuda") limits.max_entries = 512;
  limits.max_bytes = std::max(int64_t{1} << 30, limits.max_bytes / std::max(1, lanes));
  if (const char* env = std::getenv("LOCKSTEP_SHAPE_CACHE_SEGMENTS"); env && *env) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > (1 << 20))
      throw Error(ErrorCode::InvalidArgument,
                  "LOCKSTEP_SHAPE_CACHE_SEGMENTS must be a whole number in [1, 1048576], got '" + std::string(env) + "'");
    limits.max_entries = static_cast<int>(n);
  }
  return limits;
}

}  // namespace

std::vector<std::string> default_f64_accumulate(const ir::Graph& graph) { return default_f64_accumulate_for(graph, "cpu"); }

std::vector<std::string> resolve_f64_accumulate(const ir::Graph& graph, const Options& options) {
  return resolve_f64_accumulate_for(graph, options, "cpu");
}

std::vector<std::string> default_f64_accumulate_for(const ir::Graph& graph, std::string_view backend) {
  if (!voices::is_piper_voice(graph)) return {};
  // The cpu is within 1e-5 of float64 without the flows; cuda is not (docs/accuracy.md).
  if (backend == "cuda") return {std::string(voices::kTextEncoderPrefix), std::string(voices::kFlowPrefix)};
  return {std::string(voices::kTextEncoderPrefix)};
}

std::vector<std::string> resolve_f64_accumulate_for(const ir::Graph& graph, const Options& options,
                                                    std::string_view backend) {
  return options.f64_accumulate ? *options.f64_accumulate : default_f64_accumulate_for(graph, backend);
}

bool f64_accumulates(const std::vector<std::string>& prefixes, std::string_view node_name) {
  for (const std::string& prefix : prefixes)
    if (node_name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

std::optional<std::vector<std::string>> f64_accumulate_from_flag(const std::vector<std::string>& values) {
  if (values.empty()) return std::nullopt;
  if (values == std::vector<std::string>{"none"}) return std::vector<std::string>{};
  return values;
}

std::unique_ptr<Executable> compile(const Model& model, std::string_view backend_name, const Options& given) {
  return compile_lane(model, backend_name, given, 1);
}

std::unique_ptr<Executable> compile_lane(const Model& model, std::string_view backend_name, const Options& given, int lanes) {
  // Resolved here, on the whole model: the run-time shape stage's segments no longer look like a voice.
  Options options = given;
  options.f64_accumulate = resolve_f64_accumulate_for(model.graph(), given, backend_name);
  const Backend* backend = find_backend(backend_name);
  if (!backend)
    throw Error(ErrorCode::InvalidArgument,
                "unknown backend '" + std::string(backend_name) + "' (known: reference, cpu, cuda)");
  std::string why;
  if (!backend->available(&why)) throw Error(ErrorCode::DeviceUnavailable, backend->name() + ": " + why);
  // Sizes known only at run time: the run-time shape stage specialises and compiles per call.
  if (dynamic::needs_run_time_shapes(model.graph(), options))
    return dynamic::compile_dynamic(model.graph(), *backend, options, segment_cache_limits(backend->name(), lanes));
  ir::Graph graph = prepare(model, options);
  for (const auto& node : graph.nodes)
    if (auto reason = backend->unsupported_reason(graph, node))
      throw Error(ErrorCode::UnsupportedOp, backend->name() + " backend: " + *reason, node.name, ir::op_name(node.op));
  return backend->compile(graph, options);
}

}  // namespace lockstep
