// RandomNormal, RandomNormalLike, RandomUniform, RandomUniformLike (random.comp): the cpu's
// generator drawn on the device, the same bits (core/random_math.h's arithmetic in double). The
// key (seed attribute, else the run's seed, mixed with the node name) is staged by every run.
#include <cstring>

#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

std::optional<std::string> random_unsupported(const ir::Graph& graph, const ir::Node& node, bool float64) {
  if (!float64)
    return std::string(ir::op_name(node.op)) + " needs shaderFloat64 (the cpu's Box-Muller in double, for the same bits), which this device lacks";
  if (graph.value(node.outputs.at(0)).dtype != DType::Float32) return std::string("random output must be float32 on vulkan");
  return std::nullopt;
}

void record_random(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const bool like = !node.inputs.empty() && node.inputs[0] != ir::kNoValue;
  const ir::RandomSpec spec = ir::random_spec(node, like ? g.value(node.inputs[0]).dtype : DType::Float32);
  const int64_t count = num_elements(g.value(node.outputs[0]).shape);
  if (count > 0) {
    const double a = spec.a, b = spec.normal ? spec.b : spec.b - spec.a;  // the host's range = high - low
    std::vector<uint32_t> p(RN_WORDS, 0);
    p[RN_COUNT] = word(count, node);
    p[RN_NORMAL] = spec.normal ? 1u : 0u;
    p[RN_KEY] = ctx.key_slot(node_index);
    std::memcpy(&p[RN_A], &a, sizeof a);
    std::memcpy(&p[RN_B], &b, sizeof b);
    p[RN_OUT] = ctx.at(node.outputs[0]);
    Dispatch d;
    d.shader = "random";
    d.base = ctx.add_params(p);
    d.groups[0] = groups_for((count + 3) / 4, 64);
    program.dispatches.push_back(d);
  }
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::vulkan
