// The CUDA executor's in-place decisions: channel-slice views (a Slice's value addressed inside
// its input), absorbed consumers (a producer computing readers of its channel Slices; the memory
// plan is made again for them before the arena is laid out) and prologue fusion (a node reading a
// unary producer's input and applying it itself). Each only re-points values or chooses between
// launches recorded with the nodes.

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/channel_views.h"
#include "backends/cuda/executor.h"
#include "backends/cuda/families.h"
#include "backends/in_place_plan.h"
#include "passes/pipeline.h"

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
  std::vector<std::vector<int>> split_views(graph_.nodes.size());  // per Split node: its viewed outputs
  std::vector<char> taken(graph_.values.size(), 0);
  for (const auto& view : backends::choose_dense_views(graph_, ptr, value_bytes_, kArenaAlign)) {
    taken[static_cast<size_t>(view.view)] = 1;
    ctx_->value_ptr_[static_cast<size_t>(view.view)] = static_cast<std::byte*>(ctx_->ptr(view.input)) + view.byte_offset;
    if (graph_.nodes[view.slice].op == ir::Op::Split) split_views[view.slice].push_back(view.output);
    else programs_[view.slice].launches.clear();
    ++views_taken_;
  }
  // A view the plan put inside its input has no bytes of its own: its copy must go.
  for (ir::ValueId v : planned_views_)
    if (!taken[static_cast<size_t>(v)])
      throw Error(ErrorCode::Internal, "cuda: the memory plan put '" + graph_.value(v).name + "' inside its input, but it is no view");
  // A Split records one copy per output, in output order (data_movement.cu; no epilogue): drop the
  // viewed outputs' copies, last first.
  for (size_t k = 0; k < split_views.size(); ++k) {
    if (split_views[k].empty()) continue;
    auto& launches = programs_[k].launches;
    if (launches.size() != graph_.nodes[k].outputs.size())
      throw Error(ErrorCode::Internal, "cuda: Split '" + graph_.nodes[k].name + "' has no copy per output to drop");
    std::sort(split_views[k].rbegin(), split_views[k].rend());
    for (int o : split_views[k]) launches.erase(launches.begin() + o);
  }
}

// The plan is made again (backends::plan_in_place, kept only within Options.max_memory_bytes):
// every dense channel view lies inside its input, which stays live until the view's last reader,
// and absorbed consumers' values live from their producer's step, its operands to the last
// absorbed node. A graph that comes unplanned (a run-time shape segment: Backend::plans_memory)
// gets the pipeline's plain plan only where the in-place one changes nothing or is over the cap.
// Safe mode keeps every value in its own slot.
void CudaExecutable::replan() {
  if (options_.safe || (!graph_.plan && passes::has_run_time_shapes(graph_))) return;
  std::vector<size_t> bytes(graph_.values.size());
  // A run-time shape segment carries the whole model's value table: values outside it may have
  // unknown (negative) dims; no node here reads them.
  auto known = [](const Shape& s) { return std::none_of(s.begin(), s.end(), [](int64_t d) { return d < 0; }); };
  for (size_t v = 0; v < bytes.size(); ++v)
    if (!graph_.values[v].constant.defined() && known(graph_.values[v].shape)) bytes[v] = value_device_bytes(graph_.values[v]);
  // None recorded with LOCKSTEP_CUDA_ABSORB=0.
  const std::vector<backends::EarlyAccess> accesses(ctx_->absorptions.begin(), ctx_->absorptions.end());
  const std::optional<ir::MemoryPlan> before = graph_.plan;
  try {
    for (const auto& view : backends::plan_in_place(graph_, bytes, kArenaAlign, accesses, !env_is("LOCKSTEP_CUDA_VIEWS", "0"),
                                                    options_.max_memory_bytes))
      planned_views_.push_back(view.view);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::LimitExceeded) throw;
    graph_.plan = before;  // over the cap: the graph's plan, fewer absorptions and views
    planned_views_.clear();
  }
  if (!graph_.plan) passes::plan_when_shapes_known(graph_, options_.max_memory_bytes);
  if (env_is("LOCKSTEP_CUDA_ABSORB_LOG", "1"))
    std::fprintf(stderr, "lockstep cuda: memory plan %lld bytes (the plain plan's %s), live bound %lld; %zu views planned in place\n",
                 static_cast<long long>(graph_.plan->arena_bytes),
                 before ? std::to_string(before->arena_bytes).c_str() : "not made",
                 static_cast<long long>(graph_.plan->lower_bound_bytes), planned_views_.size());
}

// Why the fused launch of `a` may not write its values at the producer's time in graph replay
// ("" when it may).
std::string CudaExecutable::absorption_unsafe(const Absorption& a) const {
  auto span = [&](ir::ValueId v) {
    const auto* p = static_cast<const std::byte*>(ctx_->value_ptr_[static_cast<size_t>(v)]);
    return backends::ByteSpan{p, p ? p + value_bytes_[static_cast<size_t>(v)] : p};
  };
  std::vector<char> absorbed(graph_.nodes.size(), 0);
  size_t last = static_cast<size_t>(a.producer);
  for (int k : a.absorbed) {
    if (k <= a.producer) return "an absorbed node before its producer";
    absorbed[static_cast<size_t>(k)] = 1;
    last = std::max(last, static_cast<size_t>(k));
  }
  // Every value a launch between the producer and the last absorbed node touches (inputs,
  // epilogue operands, outputs, and a fused prologue's source), for launches that still run.
  std::vector<ir::ValueId> touched;
  for (size_t k = static_cast<size_t>(a.producer) + 1; k <= last; ++k) {
    const auto& launches = programs_[k].launches;
    if (absorbed[k] || std::none_of(launches.begin(), launches.end(), [](const Launch& l) { return l.in_graph(); })) continue;
    const ir::Node& node = graph_.nodes[k];
    touched.insert(touched.end(), node.inputs.begin(), node.inputs.end());
    touched.insert(touched.end(), node.outputs.begin(), node.outputs.end());
    for (const auto& step : node.epilogue) touched.push_back(step.operand);
  }
  for (const PrologueFusion& f : ctx_->prologues)
    if (f.consumer > a.producer && static_cast<size_t>(f.consumer) <= last && !absorbed[static_cast<size_t>(f.consumer)])
      touched.push_back(f.source);
  auto name = [&](ir::ValueId v) { return "'" + graph_.value(v).name + "'"; };
  for (ir::ValueId w : a.writes) {
    const backends::ByteSpan ws = span(w);
    if (!ws.begin) return name(w) + " has no buffer";
    for (ir::ValueId v : touched)
      if (v != ir::kNoValue && span(v).overlaps(ws)) return name(w) + " shares bytes with " + name(v) + ", used before the last absorbed node";
    for (ir::ValueId r : a.reads) {
      const backends::ByteSpan rs = span(r);
      if (!rs.overlaps(ws)) continue;
      const bool pair = std::find(a.in_place.begin(), a.in_place.end(), std::make_pair(w, r)) != a.in_place.end();
      if (!pair || rs.begin != ws.begin || rs.end != ws.end) return name(w) + " shares bytes with " + name(r) + ", which the same launch reads";
    }
    for (ir::ValueId other : a.writes)
      if (other != w && span(other).overlaps(ws)) return name(w) + " shares bytes with " + name(other) + ", also written";
  }
  return "";
}

// Consumer absorption (Absorption in device.h): in graph replay a producer's fused launch also
// computes the absorbed nodes' values, and their kernels run in eager runs only (taps see every
// value). Prologue fusions that involve an absorbed node are dropped: their source may no longer
// be stored. Safe mode and LOCKSTEP_CUDA_ABSORB=0 keep every node's own kernels.
void CudaExecutable::absorb_consumers() {
  const bool off = options_.safe || env_is("LOCKSTEP_CUDA_ABSORB", "0");
  const bool log = env_is("LOCKSTEP_CUDA_ABSORB_LOG", "1");  // each decision and its reason on stderr
  std::vector<char> absorbed(graph_.nodes.size(), 0);
  for (const Absorption& a : ctx_->absorptions) {
    auto& launches = programs_[static_cast<size_t>(a.producer)].launches;
    const std::string why = off ? "off" : absorbed[static_cast<size_t>(a.producer)] ? "its producer is absorbed" : absorption_unsafe(a);
    if (log) std::fprintf(stderr, "lockstep cuda: %s %s\n", graph_.nodes[static_cast<size_t>(a.producer)].name.c_str(),
                          why.empty() ? "absorbs its consumers" : ("keeps its consumers apart: " + why).c_str());
    if (!why.empty()) {
      launches.erase(launches.begin() + static_cast<std::ptrdiff_t>(a.fused));
      continue;
    }
    launches[a.plain].when = Launch::When::kEagerOnly;
    for (int k : a.absorbed) {
      absorbed[static_cast<size_t>(k)] = 1;
      auto& own = programs_[static_cast<size_t>(k)].launches;
      own.erase(std::remove_if(own.begin(), own.end(), [](const Launch& l) { return !l.in_eager(); }), own.end());
      for (Launch& l : own) l.when = Launch::When::kEagerOnly;
    }
    ++consumers_absorbed_;
  }
  for (PrologueFusion& f : ctx_->prologues)
    if (absorbed[static_cast<size_t>(f.producer)] || absorbed[static_cast<size_t>(f.consumer)]) f.disabled = true;
}

// Prologue fusion (PrologueFusion in device.h): in graph replay a consumer (a Conv and its
// LeakyRelu producer, an element-wise kernel and the unary producer of an operand) reads the
// producer's input and applies it itself, and the producer does not run, where nothing from the
// producer to the consumer writes over that input. A producer read by several consumers (one
// LeakyRelu feeding three resblock convs) stops only where every reader applies it; otherwise all of
// them keep reading its output. Eager runs keep both kernels (taps see the value).
void CudaExecutable::fuse_prologues() {
  const bool off = options_.safe;  // safe mode runs every node's own kernel
  auto span = [&](ir::ValueId v) {
    const auto* p = static_cast<const std::byte*>(ctx_->value_ptr_[static_cast<size_t>(v)]);
    return backends::ByteSpan{p, p ? p + value_bytes_[static_cast<size_t>(v)] : p};
  };
  const std::vector<PrologueFusion>& fusions = ctx_->prologues;
  std::vector<char> ok(fusions.size(), 0);
  std::map<int, int> applying;  // producer -> readers that may apply it in graph replay
  for (size_t i = 0; i < fusions.size(); ++i) {
    const PrologueFusion& f = fusions[i];
    ok[i] = !off && !f.disabled &&
            !backends::overwritten_between(graph_, static_cast<size_t>(f.producer), static_cast<size_t>(f.consumer), span(f.source), span);
    applying[f.producer] += ok[i];
  }
  for (size_t i = 0; i < fusions.size(); ++i) {
    const int producer = fusions[i].producer;
    if (ok[i] && applying[producer] != reader_count(ctx_->channel_facts(), graph_.nodes[static_cast<size_t>(producer)].outputs[0])) ok[i] = 0;
  }
  // Later entries first: erasing a fused launch must not shift another entry's indices.
  for (size_t i = fusions.size(); i-- > 0;) {
    const PrologueFusion& f = fusions[i];
    auto& launches = programs_[static_cast<size_t>(f.consumer)].launches;
    if (f.disabled) {  // an absorbed consumer's launches are already settled above
      if (f.fused < launches.size() && !launches[f.fused].in_eager()) launches.erase(launches.begin() + static_cast<std::ptrdiff_t>(f.fused));
      continue;
    }
    if (!ok[i]) {
      launches.erase(launches.begin() + static_cast<std::ptrdiff_t>(f.fused));
      continue;
    }
    launches[f.plain].when = Launch::When::kEagerOnly;
    for (auto& l : programs_[static_cast<size_t>(f.producer)].launches) l.when = Launch::When::kEagerOnly;
    ++prologues_fused_;
  }
}

}  // namespace lockstep::cuda
