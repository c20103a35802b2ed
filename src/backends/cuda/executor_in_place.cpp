// The CUDA executor's in-place decisions, taken once the arena is laid out: channel-slice views
// (a Slice's value addressed inside its input) and prologue fusion (a node reading a unary
// producer's input and applying it itself). Both only re-point values or choose launches; no
// kernel changes.

#include "backends/channel_views.h"
#include "backends/cuda/executor.h"

namespace lockstep::cuda {

// Channel-slice views: a batch-1 NCW channel Slice is a dense sub-range of its input, so its
// value is pointed into the input's bytes and its launches are dropped. Every launch resolves
// pointers when it runs, so re-pointing after recording is safe. Safe mode keeps every value in
// its own guarded slot; LOCKSTEP_CUDA_VIEWS=0 turns views off (A/B timing).
void CudaExecutable::take_views() {
  if (options_.safe || env_is("LOCKSTEP_CUDA_VIEWS", "0")) return;
  std::vector<const std::byte*> ptr(ctx_->value_ptr_.size());
  for (size_t v = 0; v < ptr.size(); ++v) ptr[v] = static_cast<const std::byte*>(ctx_->value_ptr_[v]);
  // The offset is a multiple of the arena alignment: a view is as aligned as its input.
  for (const auto& view : backends::choose_dense_views(graph_, ptr, value_bytes_, kArenaAlign)) {
    ctx_->value_ptr_[static_cast<size_t>(view.view)] = static_cast<std::byte*>(ctx_->ptr(view.input)) + view.byte_offset;
    programs_[view.slice].launches.clear();
    ++views_taken_;
  }
}

// Prologue fusion (PrologueFusion in device.h): in graph replay a consumer (a Conv and its
// LeakyRelu producer, an element-wise kernel and the unary producer of an operand) reads the
// producer's input and applies it itself, and the producer does not run, where nothing from the
// producer to the consumer writes over that input. Eager runs keep both kernels (taps see the value).
void CudaExecutable::fuse_prologues() {
  const bool off = options_.safe;  // safe mode runs every node's own kernel
  auto span = [&](ir::ValueId v) {
    const auto* p = static_cast<const std::byte*>(ctx_->value_ptr_[static_cast<size_t>(v)]);
    return backends::ByteSpan{p, p ? p + value_bytes_[static_cast<size_t>(v)] : p};
  };
  // Later entries first: erasing a fused launch must not shift another entry's indices.
  for (auto it = ctx_->prologues.rbegin(); it != ctx_->prologues.rend(); ++it) {
    const PrologueFusion& f = *it;
    auto& launches = programs_[static_cast<size_t>(f.consumer)].launches;
    const bool ok = !off && !backends::overwritten_between(graph_, static_cast<size_t>(f.producer),
                                                            static_cast<size_t>(f.consumer), span(f.source), span);
    if (!ok) {
      launches.erase(launches.begin() + static_cast<std::ptrdiff_t>(f.fused));
      continue;
    }
    launches[f.plain].when = Launch::When::kEagerOnly;
    for (auto& l : programs_[static_cast<size_t>(f.producer)].launches) l.when = Launch::When::kEagerOnly;
    ++prologues_fused_;
  }
}

}  // namespace lockstep::cuda
