// CPU: the random ops fill their output from the one generator of every backend
// (src/core/random.h). Element i depends on (seed, node name, i) alone, so the chunks that the
// threads fill give the same bits for any thread count; the run's seed is read in run().
#include <algorithm>

#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"
#include "core/random.h"
#include "ir/infer_rules.h"

namespace lockstep::cpu {

namespace {

constexpr int64_t kChunk = 16384;  // elements per parallel task (a multiple of the Philox block of 4)

class RandomKernel final : public Kernel {
 public:
  RandomKernel(CompileContext& ctx, const ir::Node& node) : name_(node.name), run_seed_(ctx.run_seed) {
    const bool like = !node.inputs.empty() && node.inputs[0] != ir::kNoValue;
    spec_ = ir::random_spec(node, like ? ctx.value(node.inputs[0]).dtype : DType::Float32);
    const ir::Value& out = ctx.value(node.outputs.at(0));
    if (storage_dtype(out.dtype) != DType::Float32)
      throw Error(ErrorCode::DTypeMismatch, "cpu: random output must be float32", node.name, ir::op_name(node.op));
    count_ = num_elements(out.shape);
    out_ = ctx.fptr(node.outputs[0]);
  }
  void run() override {
    const uint64_t key = random::stream_key(random::op_seed(spec_.has_seed, spec_.seed, run_seed_ ? *run_seed_ : 0), name_);
    const int64_t chunks = (count_ + kChunk - 1) / kChunk;
    parallel_for(
        chunks, [&](int64_t c, int) {
      const int64_t first = c * kChunk, n = std::min(kChunk, count_ - first);
      if (spec_.normal) random::fill_normal(out_ + first, first, n, key, spec_.a, spec_.b);
      else random::fill_uniform(out_ + first, first, n, key, spec_.a, spec_.b);
    },
        chunks > 1);
  }

 private:
  std::string name_;
  const uint64_t* run_seed_;
  ir::RandomSpec spec_;
  int64_t count_ = 0;
  float* out_ = nullptr;
};

}  // namespace

KernelPtr make_random_kernel(CompileContext& ctx, const ir::Node& node) {
  return std::make_unique<RandomKernel>(ctx, node);
}

}  // namespace lockstep::cpu
