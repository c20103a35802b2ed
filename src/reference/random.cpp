// Reference: the random ops draw from the one generator of every backend (src/core/random.h) and
// widen its float32 values to double, so the reference and the backends agree bit for bit.
#include "core/random.h"
#include "reference/kernels.h"

namespace lockstep::reference {

namespace {

std::vector<Tensor> eval_random(const NodeContext& ctx) {
  const ir::RandomSpec spec = ir::random_spec(ctx.node, ctx.has(0) ? ctx.in(0).dtype() : DType::Float32);
  const Shape shape = ctx.has(0) ? ctx.in(0).shape() : Shape(ctx.node.attrs.get_ints("shape"));
  const uint64_t key = random::stream_key(random::op_seed(spec.has_seed, spec.seed, ctx.seed), ctx.node.name);
  Tensor values(DType::Float32, shape);
  if (spec.normal) random::fill_normal(values.data<float>(), 0, values.numel(), key, spec.a, spec.b);
  else random::fill_uniform(values.data<float>(), 0, values.numel(), key, spec.a, spec.b);
  return {values.to(DType::Float64)};
}

}  // namespace

std::vector<Tensor> eval_RandomNormal(const NodeContext& ctx) { return eval_random(ctx); }
std::vector<Tensor> eval_RandomNormalLike(const NodeContext& ctx) { return eval_random(ctx); }
std::vector<Tensor> eval_RandomUniform(const NodeContext& ctx) { return eval_random(ctx); }
std::vector<Tensor> eval_RandomUniformLike(const NodeContext& ctx) { return eval_random(ctx); }

}  // namespace lockstep::reference
