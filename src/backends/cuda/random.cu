// Random family (the CPU's random.cpp): RandomNormal, RandomNormalLike, RandomUniform,
// RandomUniformLike drawn on the device from the one generator of every backend, with the
// host's per-element code (core/random_math.h: Philox4x32-10 and transforms in IEEE operations
// only), so the values are the cpu's and the reference's bit for bit. One thread per Philox
// block of four elements. The key is (seed, node name); an op without a `seed` attribute reads
// the run's seed from the arena (Context::run_seed), so a captured graph draws each run's noise.
#include <cstdint>

#include "backends/cuda/families.h"
#include "core/random.h"
#include "core/random_math.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

struct RandomParams {
  int normal = 1;
  int64_t count = 0;
  uint64_t key = 0;        // when run_seed is null (a `seed` attribute)
  uint64_t name_hash = 0;  // FNV-1a of the node name, mixed with *run_seed otherwise
  const unsigned long long* run_seed = nullptr;
  double a = 0, b = 1;     // normal: mean, scale; uniform: low, high - low
  float* out = nullptr;
};

__global__ void random_kernel(RandomParams p) {
  const uint64_t key = p.run_seed ? random::math::stream_key(*p.run_seed, p.name_hash) : p.key;
  const int64_t blocks = (p.count + 3) / 4;
  for (int64_t blk = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; blk < blocks;
       blk += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const random::math::Block w = random::math::stream_block(static_cast<uint64_t>(blk), key);
    float v[4];
    if (p.normal) {
      random::math::normal_values(w, p.a, p.b, v);
    } else {
      for (int k = 0; k < 4; ++k) v[k] = random::math::uniform_value(w, k, p.a, p.b);
    }
    const int64_t first = blk * 4;
    for (int k = 0; k < 4 && first + k < p.count; ++k) p.out[first + k] = v[k];
  }
}

}  // namespace

std::optional<std::string> random_unsupported(const ir::Graph& graph, const ir::Node& node) {
  if (device_dtype(graph.value(node.outputs.at(0)).dtype) != DType::Float32) return "random output must be float32 on CUDA";
  return std::nullopt;
}

void record_random(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const bool like = !node.inputs.empty() && node.inputs[0] != ir::kNoValue;
  const ir::RandomSpec spec = ir::random_spec(node, like ? g.value(node.inputs[0]).dtype : DType::Float32);
  RandomParams p;
  p.normal = spec.normal ? 1 : 0;
  p.count = num_elements(g.value(node.outputs[0]).shape);
  p.a = spec.a;
  p.b = spec.normal ? spec.b : spec.b - spec.a;  // the host's range = high - low
  p.name_hash = random::fnv1a64(node.name);
  const bool per_run = !spec.has_seed;
  if (!per_run) p.key = random::stream_key(random::op_seed(true, spec.seed, 0), node.name);
  else ctx.need_run_seed();
  const ir::ValueId out = node.outputs[0];
  const Context* c = &ctx;
  program.launches.push_back({spec.normal ? "random_normal" : "random_uniform", [=](cudaStream_t s) {
    if (p.count == 0) return;
    RandomParams q = p;
    if (per_run) q.run_seed = c->run_seed();
    q.out = c->fptr(out);
    random_kernel<<<grid_for((q.count + 3) / 4), kBlock, 0, s>>>(q);
  }});
  record_epilogue(ctx, node_index, program);
}

}  // namespace lockstep::cuda
