#include "passes/pipeline.h"
namespace lockstep::passes {
bool PassContext::should_apply(const char*, const std::string&) { return true; }
void bind_inputs(ir::Graph&, const std::map<std::string, Shape>&) { throw Error(ErrorCode::Internal, "passes: not implemented yet"); }
std::vector<std::string> run_pipeline(ir::Graph&, const PipelineOptions&) { throw Error(ErrorCode::Internal, "passes: not implemented yet"); }
}  // namespace lockstep::passes
