#include "dynamic/executable.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <list>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "core/hash.h"
#include "core/host_scratch.h"
#include "dynamic/predict.h"
#include "dynamic/probe.h"
#include "dynamic/segment_copy.h"
#include "passes/fold_support.h"
#include "passes/pipeline.h"
#include "reference/evaluate.h"
#include "voices/piper.h"

namespace lockstep::dynamic {

namespace {

// Whether environment variable `name` is set to `value` (the stage's A/B switches).
bool env_is(const char* name, std::string_view value) {
  const char* set = std::getenv(name);
  return set && value == set;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// One specialised segment and what the run does around it.
struct Entry {
  std::unique_ptr<Executable> exe;           // null when the segment has nothing left to compute
  std::vector<ir::ValueId> inputs, outputs;  // source-graph values, in the segment's input/output order
  std::vector<DType> output_dtypes;          // their IR dtypes
  std::vector<Shape> output_shapes;          // their shapes (as the probe gave them)
  std::vector<std::pair<ir::ValueId, Tensor>> constants;  // folded values that later nodes or outputs read
  std::vector<int> covered;                  // source nodes this entry completes (segment, folded, host)
  std::vector<int> host_nodes;               // data-dependent source nodes run after the segment
  std::vector<ir::ValueId> key_values;       // values whose contents decide the next segment
  std::vector<std::pair<ir::ValueId, Prediction>> guards;  // predicted masks, checked after the segment
  bool last = false;
  int64_t bytes = 0;
};
using EntryPtr = std::shared_ptr<const Entry>;

// Least-recently-used map from a specialisation key to its entry, bounded in count and bytes.
class SegmentCache {
 public:
  explicit SegmentCache(CacheLimits limits) : limits_(limits) {}
  EntryPtr find(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  int64_t insert(const std::string& key, EntryPtr entry) {  // returns evictions
    bytes_ += entry->bytes;
    order_.emplace_front(key, std::move(entry));
    index_[key] = order_.begin();
    int64_t evicted = 0;
    while (order_.size() > 1 && (static_cast<int>(order_.size()) > limits_.max_entries || bytes_ > limits_.max_bytes)) {
      bytes_ -= order_.back().second->bytes;
      index_.erase(order_.back().first);
      order_.pop_back();  // a run still holding it keeps it alive (shared_ptr)
      ++evicted;
    }
    return evicted;
  }
  int size() const { return static_cast<int>(order_.size()); }
  int64_t bytes() const { return bytes_; }

 private:
  CacheLimits limits_;
  std::list<std::pair<std::string, EntryPtr>> order_;
  std::unordered_map<std::string, std::list<std::pair<std::string, EntryPtr>>::iterator> index_;
  int64_t bytes_ = 0;
};

std::string describe_tensor_key(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + shape_str(t.shape());
}

class DynamicExecutable final : public Executable {
 public:
  DynamicExecutable(ir::Graph graph, const Backend& backend, Options options, CacheLimits limits)
      : source_(std::move(graph)), backend_(backend), options_(std::move(options)), cache_(limits) {
    trace_ = std::getenv("LOCKSTEP_TRACE_SHAPES") != nullptr;
    cap_ = options_.max_memory_bytes > 0 ? options_.max_memory_bytes : default_memory_cap();
    // LOCKSTEP_FOLD_MOVED_MAX_BYTES=N: fold moved data up to N bytes (passes::kMoveAtRunTimeBytes).
    if (const char* moved = std::getenv("LOCKSTEP_FOLD_MOVED_MAX_BYTES")) moved_max_bytes_ = std::atoll(moved);
    // Segments run one after another (run() holds mutex_): their cpu arenas and workspaces share
    // one reservation, so resident memory is the largest segment's and warm pages are reused.
    options_.host_scratch = std::make_shared<HostScratch>(cap_);
    parameter_reader_.assign(source_.values.size(), 0);
    for (const ir::Node& node : source_.nodes)
      for (size_t i = 0; i < node.inputs.size(); ++i)
        if (node.inputs[i] != ir::kNoValue && ir::is_parameter_input(node.op, i))
          parameter_reader_[static_cast<size_t>(node.inputs[i])] = 1;
    // What the host reads: graph outputs, values read as parameters (the probe and the keys take
    // their contents) and the inputs of data-dependent nodes (run on the host). A segment's other
    // outputs stay in device memory for the next segment (Executable::run_resident).
    host_reader_ = parameter_reader_;
    for (ir::ValueId v : source_.outputs) host_reader_[static_cast<size_t>(v)] = 1;
    for (const ir::Node& node : source_.nodes)
      if (ir::has_data_dependent_shape(node.op))
        for (ir::ValueId v : node.inputs)
          if (v != ir::kNoValue) host_reader_[static_cast<size_t>(v)] = 1;
    // LOCKSTEP_SEGMENT_PLAN=pipeline: the pipeline plans every segment, also for a backend that
    // plans again for itself (Backend::plans_memory), as before (A/B timing).
    backend_plans_ = backend_.plans_memory() && !env_is("LOCKSTEP_SEGMENT_PLAN", "pipeline");
    // LOCKSTEP_SEGMENT_VALUES=host: every segment value crosses the host, as before (A/B, tests).
    all_to_host_ = env_is("LOCKSTEP_SEGMENT_VALUES", "host");
    // LOCKSTEP_PREDICT_SELECTIONS=0: every NonZero waits for the host (A/B, tests).
    if (!env_is("LOCKSTEP_PREDICT_SELECTIONS", "0")) {
      predictions_ = predict_selections(source_);
      if (std::none_of(predictions_.begin(), predictions_.end(), [](Prediction p) { return p != Prediction::None; }))
        predictions_.clear();
    }
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& run_options) override {
    std::lock_guard<std::mutex> lock(mutex_);  // one run at a time, as every backend
    check_inputs(inputs);
    voices::check_piper_inputs(source_, inputs);  // what a voice's graph would silently accept
    const size_t nv = source_.values.size();
    env_.assign(nv, Tensor{});
    env_resident_.assign(nv, nullptr);
    resident_shape_.assign(nv, Shape{});
    // Every entry of this run lives until it ends: a value it left on the device is read later.
    std::vector<EntryPtr> ran;
    struct Clear {
      DynamicExecutable& self;
      ~Clear() {
        self.env_.clear();
        self.env_resident_.clear();
      }
    } clear_values{*this};
    env_dtype_.assign(nv, DType::Float32);
    env_const_.assign(nv, 0);
    std::vector<char> done(source_.nodes.size(), 0);
    std::string key = "inputs";
    for (size_t i = 0; i < inputs.size(); ++i) {
      ir::ValueId v = source_.inputs[i];
      env_[static_cast<size_t>(v)] = inputs[i];
      env_dtype_[static_cast<size_t>(v)] = source_.value(v).dtype;
      key += "|" + describe_tensor_key(inputs[i]);
    }
    key = sha256_hex(key);

    ++stats_.runs;
    stats_.last_run_segments = stats_.last_run_host_nodes = stats_.last_run_misses = 0;
    stats_.last_run_compile_ms = 0;
    stats_.last_run_bytes_in = stats_.last_run_bytes_out = 0;
    stats_.last_run_segments_ms = stats_.last_run_host_nodes_ms = stats_.last_run_device_ms = 0;
    stats_.last_run_values_on_device = stats_.last_run_host_reads = stats_.last_run_downloads = 0;
    stats_.last_run_predictions = stats_.last_run_mispredictions = 0;
    bool predict = !predictions_.empty();  // until a predicted mask disagrees
    for (int guard = 0;; ++guard) {
      if (guard > static_cast<int>(source_.nodes.size()) + 1)
        throw Error(ErrorCode::Internal, "run-time shapes: the segments do not finish the graph");
      EntryPtr entry = cache_.find(key);
      if (entry) {
        ++stats_.segment_hits;
      } else {
        auto t0 = std::chrono::steady_clock::now();
        entry = build(done, predict);
        stats_.evictions += cache_.insert(key, entry);
        ++stats_.segments_compiled;
        ++stats_.last_run_misses;
        stats_.last_run_compile_ms +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      }
      // A mispredicted mask can send a later index out of range (the spline's bin search):
      // a segment that predicted anything and failed is redone without predictions, which
      // reports the error again if it was not the prediction's.
      bool failed = false;
      try {
        execute(*entry, run_options);
      } catch (const Error&) {
        if (entry->guards.empty()) throw;
        failed = true;
      }
      ran.push_back(entry);
      if (failed || !predictions_held(*entry)) {
        // Redo this segment as if nothing were predicted: the same key, marked, so the two
        // specialisations are cached apart; the rest of the run predicts nothing either.
        forget(*entry);
        predict = false;
        ++stats_.last_run_mispredictions;
        ++stats_.mispredictions;
        key = sha256_hex(key + "|unpredicted");
        continue;
      }
      for (int n : entry->covered) done[static_cast<size_t>(n)] = 1;
      if (entry->last) break;
      key = next_key(key, *entry);
    }
    // Read after the last segment: a segment that left everything on the device has not waited.
    for (const EntryPtr& e : ran)
      if (e->exe)
        if (auto d = e->exe->last_device_ms()) stats_.last_run_device_ms += *d;
    stats_.cached_entries = cache_.size();
    stats_.cached_bytes = cache_.bytes();
    stats_.scratch_arena_bytes = options_.host_scratch->arena_high_water();
    stats_.scratch_workspace_bytes = options_.host_scratch->workspace_high_water();

    std::vector<Tensor> results;
    for (ir::ValueId v : source_.outputs) {
      if (!known(v))
        throw Error(ErrorCode::Internal, "run-time shapes: output '" + source_.value(v).name + "' was not computed");
      results.push_back(host_value(v));
    }
    return results;
  }

  const ir::Graph& graph() const override { return source_; }
  std::string backend_name() const override { return backend_.name(); }
  const Stats& stats() const { return stats_; }

 private:
  // Count, dtype, rank and static dims, and one size per symbolic dim name across the inputs.
  void check_inputs(const std::vector<Tensor>& inputs) const {
    if (inputs.size() != source_.inputs.size())
      throw Error(inputs.size() < source_.inputs.size() ? ErrorCode::MissingInput : ErrorCode::InvalidArgument,
                  std::to_string(inputs.size()) + " inputs given, the graph has " +
                      std::to_string(source_.inputs.size()));
    std::map<std::string, std::pair<int64_t, std::string>> dims;  // dim_param -> size, first input
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Value& v = source_.value(source_.inputs[i]);
      const Tensor& t = inputs[i];
      if (!t.defined()) throw Error(ErrorCode::MissingInput, "input '" + v.name + "' is empty");
      bool dtype_ok = t.dtype() == v.dtype ||
                      (backend_.name() == "reference" && is_floating(t.dtype()) && is_floating(v.dtype));
      if (!dtype_ok)
        throw Error(ErrorCode::DTypeMismatch,
                    "input '" + v.name + "' expects " + dtype_name(v.dtype) + ", given " + dtype_name(t.dtype()));
      if (t.shape().size() != v.shape.size())
        throw Error(ErrorCode::ShapeMismatch, "input '" + v.name + "' has rank " + std::to_string(v.shape.size()) +
                                                  " " + shape_str(v.shape) + ", given " + shape_str(t.shape()));
      for (size_t d = 0; d < v.shape.size(); ++d) {
        int64_t got = t.shape()[d];
        if (v.shape[d] >= 0 && v.shape[d] != got)
          throw Error(ErrorCode::ShapeMismatch, "input '" + v.name + "' expects shape " + shape_str(v.shape) +
                                                    ", given " + shape_str(t.shape()));
        const std::string& param = d < v.dim_params.size() ? v.dim_params[d] : std::string();
        if (v.shape[d] >= 0 || param.empty()) continue;
        auto [it, fresh] = dims.emplace(param, std::make_pair(got, v.name));
        if (!fresh && it->second.first != got)
          throw Error(ErrorCode::ShapeMismatch, "dim '" + param + "' is " + std::to_string(it->second.first) +
                                                    " in input '" + it->second.second + "' but " +
                                                    std::to_string(got) + " in input '" + v.name + "'");
      }
    }
  }

  std::string next_key(const std::string& key, const Entry& entry) {
    std::string text = key;
    for (int n : entry.host_nodes)
      for (ir::ValueId v : source_.nodes[static_cast<size_t>(n)].outputs)
        if (v != ir::kNoValue) text += "|h" + std::to_string(v) + describe_tensor_key(env_[static_cast<size_t>(v)]);
    for (ir::ValueId v : entry.key_values) {
      const Tensor& t = host_value(v);
      text += "|v" + std::to_string(v) + describe_tensor_key(t) + sha256_hex(t);
    }
    return sha256_hex(text);
  }

  // This run's value v: computed (on the host or left on the device by a segment), its shape.
  bool known(ir::ValueId v) const {
    return env_[static_cast<size_t>(v)].defined() || env_resident_[static_cast<size_t>(v)] != nullptr;
  }
  const Shape& shape_of(ir::ValueId v) const {
    const size_t i = static_cast<size_t>(v);
    return env_[i].defined() ? env_[i].shape() : resident_shape_[i];
  }
  // On the host, copied there if a segment left it on the device (host_reader_ makes that rare:
  // Stats::last_run_downloads counts it).
  const Tensor& host_value(ir::ValueId v) {
    const size_t i = static_cast<size_t>(v);
    if (!env_[i].defined() && env_resident_[i]) {
      Tensor t = env_resident_[i]->download();
      env_[i] = t.shape() == resident_shape_[i] ? std::move(t) : t.reshaped(resident_shape_[i]);
      ++stats_.last_run_downloads;
    }
    return env_[i];
  }

  // Whether every mask the entry predicted came out as predicted (read on the host: host_reader_
  // holds every NonZero input).
  bool predictions_held(const Entry& entry) {
    for (const auto& [mask, prediction] : entry.guards) {
      ++stats_.last_run_predictions;
      if (!prediction_holds(prediction, host_value(mask))) return false;
    }
    return true;
  }

  // Drops what `entry` computed from this run's values, so that the next build sees them unknown.
  void forget(const Entry& entry) {
    auto drop = [&](ir::ValueId v) {
      env_[static_cast<size_t>(v)] = Tensor{};
      env_resident_[static_cast<size_t>(v)] = nullptr;
      env_const_[static_cast<size_t>(v)] = 0;
    };
    for (ir::ValueId v : entry.outputs) drop(v);
    for (const auto& c : entry.constants) drop(c.first);
    for (int n : entry.host_nodes)
      for (ir::ValueId v : source_.nodes[static_cast<size_t>(n)].outputs)
        if (v != ir::kNoValue) drop(v);
  }

  // Specialises the not-yet-run part of the graph to what this run knows and compiles the next
  // segment; with `predict`, through the NonZeros predictions_ covers.
  EntryPtr build(const std::vector<char>& done, bool predict) {
    const auto t_build = std::chrono::steady_clock::now();
    // The not-yet-run nodes and the values they refer to (segment_copy.h), usually copied ahead;
    // what this run knows is filled in here.
    CopyKey copy_key{done, std::vector<char>(source_.values.size(), 0), predict};
    for (size_t v = 0; v < source_.values.size(); ++v) copy_key.known[v] = this->known(static_cast<ir::ValueId>(v));
    SegmentCopy copy = copies_.take(copy_key);
    stats_.copies_made_ahead = copies_.made_ahead();
    ir::Graph& g = copy.graph;
    const std::vector<ir::ValueId>& source_id = copy.source_id;
    const std::vector<ir::ValueId>& local = copy.local;
    const std::vector<char>& known = copy.known;
    const std::vector<size_t>& left_out = copy.left_out;
    const std::vector<int>& origin = copy.origin;
    std::vector<Prediction>& predicted = copy.predicted;
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (!known[i]) continue;
      const ir::ValueId v = source_id[i];
      ir::Value& value = g.values[i];
      value.dtype = env_dtype_[static_cast<size_t>(v)];
      value.shape = shape_of(v);
      if (env_const_[static_cast<size_t>(v)] || parameter_reader_[static_cast<size_t>(v)]) {
        const Tensor& t = host_value(v);
        value.constant = t.dtype() == value.dtype || !is_floating(t.dtype()) ? t : t.to(value.dtype);
      }
    }
    const double copy_ms = ms_since(t_build);
    auto t_probe = std::chrono::steady_clock::now();
    ProbeResult pr = probe(g, known, cap_, trace_, predict ? &predicted : nullptr, moved_max_bytes_);
    const double probe_ms = ms_since(t_probe);

    auto entry = std::make_shared<Entry>();
    const size_t nv = g.values.size();
    std::vector<char> later(nv, 0), produced(nv, 0);
    for (ir::ValueId v : g.outputs) later[static_cast<size_t>(v)] = 1;
    bool blocked = !left_out.empty();
    for (size_t n : left_out) {
      const ir::Node& node = source_.nodes[n];
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const ir::ValueId v = node.inputs[i];
        const ir::ValueId id = v == ir::kNoValue ? ir::kNoValue : local[static_cast<size_t>(v)];
        if (id == ir::kNoValue) continue;  // produced by another node left out: not computed yet
        later[static_cast<size_t>(id)] = 1;
        if (ir::is_parameter_input(node.op, i) && !g.is_constant(id)) entry->key_values.push_back(v);
      }
      for (const auto& step : node.epilogue)
        if (step.operand != ir::kNoValue && local[static_cast<size_t>(step.operand)] != ir::kNoValue)
          later[static_cast<size_t>(local[static_cast<size_t>(step.operand)])] = 1;
    }
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const ir::Node& node = g.nodes[n];
      NodeState s = pr.states[n];
      if (s == NodeState::Blocked || s == NodeState::Host || s == NodeState::Predicted) {
        for (ir::ValueId v : node.inputs)
          if (v != ir::kNoValue) later[static_cast<size_t>(v)] = 1;
        for (const auto& step : node.epilogue)
          if (step.operand != ir::kNoValue) later[static_cast<size_t>(step.operand)] = 1;
      }
      if (s == NodeState::Blocked) {
        blocked = true;
        for (size_t i = 0; i < node.inputs.size(); ++i) {
          ir::ValueId v = node.inputs[i];
          if (v != ir::kNoValue && ir::is_parameter_input(node.op, i) && !g.is_constant(v))
            entry->key_values.push_back(source_id[static_cast<size_t>(v)]);
        }
      } else {
        entry->covered.push_back(origin[n]);
        if (s == NodeState::Host) entry->host_nodes.push_back(origin[n]);
        if (s == NodeState::Predicted) entry->guards.emplace_back(source_id[static_cast<size_t>(node.inputs.at(0))], predicted[n]);
      }
    }
    if (trace_) {
      int counts[5] = {0, 0, 0, 0, 0};
      std::string first_blocked;
      for (size_t n = 0; n < g.nodes.size(); ++n) {
        ++counts[static_cast<int>(pr.states[n])];
        if (pr.states[n] == NodeState::Blocked && first_blocked.empty()) {
          first_blocked = g.nodes[n].name;
          for (size_t i = 0; i < g.nodes[n].inputs.size(); ++i) {
            ir::ValueId v = g.nodes[n].inputs[i];
            if (v == ir::kNoValue) continue;
            bool param = ir::is_parameter_input(g.nodes[n].op, i);
            if (!this->known(source_id[static_cast<size_t>(v)]) && !g.is_constant(v))
              first_blocked += " (waits for '" + g.value(v).name + "'" + (param ? ", a parameter" : "") + ")";
            else if (param && !g.is_constant(v))
              first_blocked += " (parameter '" + g.value(v).name + "' not constant)";
          }
        }
      }
      if (first_blocked.empty() && !left_out.empty())
        first_blocked = source_.nodes[left_out.front()].name + " (downstream of a host node)";
      std::cerr << "lockstep: run-time shapes: probe " << probe_ms << " ms; segment of " << counts[0] << " nodes (" << counts[1] << " folded, "
                << counts[2] << " on the host, " << counts[4] << " predicted, " << counts[3] + left_out.size() << " waiting"
                << (first_blocked.empty() ? "" : ", first '" + first_blocked + "'") << ")\n";
      std::vector<std::pair<double, std::string>> slowest;  // the probe's five costliest ops
      for (const auto& [op, cost] : pr.ms_by_op)
        slowest.emplace_back(cost.first, op + " " + std::to_string(cost.first).substr(0, 5) + " ms/" + std::to_string(cost.second));
      std::sort(slowest.rbegin(), slowest.rend());
      std::cerr << "lockstep: run-time shapes:   probe by op:";
      for (size_t i = 0; i < slowest.size() && i < 5; ++i) std::cerr << " " << slowest[i].second;
      std::cerr << "\n";
    }
    std::sort(entry->key_values.begin(), entry->key_values.end());
    entry->key_values.erase(std::unique(entry->key_values.begin(), entry->key_values.end()), entry->key_values.end());
    entry->last = !blocked;
    if (entry->covered.empty()) {
      for (size_t n = 0; n < g.nodes.size(); ++n)
        if (pr.states[n] == NodeState::Blocked)
          throw Error(ErrorCode::UnsupportedOp,
                      "run-time shapes: cannot tell this node's output shape from the values computed before it",
                      g.nodes[n].name, ir::op_name(g.nodes[n].op));
    }

    // The segment: the runnable nodes, fed from the run's values, giving what later nodes read.
    ir::Graph s = std::move(g);
    std::vector<ir::Node> nodes;
    std::vector<char> is_input(nv, 0);
    std::vector<ir::ValueId> seg_inputs, seg_outputs;
    auto add_input = [&](ir::ValueId v) {
      if (v == ir::kNoValue || s.is_constant(v) || produced[static_cast<size_t>(v)] || is_input[static_cast<size_t>(v)])
        return;
      if (!this->known(source_id[static_cast<size_t>(v)]))
        throw Error(ErrorCode::Internal, "run-time shapes: value '" + s.value(v).name + "' is read before it is computed");
      is_input[static_cast<size_t>(v)] = 1;
      seg_inputs.push_back(v);
    };
    for (size_t n = 0; n < s.nodes.size(); ++n) {
      if (pr.states[n] == NodeState::Folded || pr.states[n] == NodeState::Predicted) {
        for (ir::ValueId v : s.nodes[n].outputs)
          if (v != ir::kNoValue && later[static_cast<size_t>(v)] && s.is_constant(v))
            entry->constants.emplace_back(source_id[static_cast<size_t>(v)], s.value(v).constant);
        continue;
      }
      if (pr.states[n] != NodeState::Runnable) continue;
      const ir::Node& node = s.nodes[n];
      for (ir::ValueId v : node.inputs) add_input(v);
      for (const auto& step : node.epilogue) add_input(step.operand);
      for (ir::ValueId v : node.outputs)
        if (v != ir::kNoValue) {
          produced[static_cast<size_t>(v)] = 1;
          if (later[static_cast<size_t>(v)]) seg_outputs.push_back(v);
        }
      nodes.push_back(std::move(s.nodes[n]));  // `node` is not read after this
    }
    // Graph outputs that are run-time values already (a graph input passed through) need nothing.
    if (nodes.empty() || seg_outputs.empty()) return entry;
    s.nodes = std::move(nodes);
    s.inputs = seg_inputs;
    s.outputs = seg_outputs;

    passes::PipelineOptions pipeline;
    pipeline.fuse = options_.fuse;
    pipeline.observe = options_.observe;
    pipeline.max_memory_bytes = cap_;
    pipeline.fold_moved_max_bytes = moved_max_bytes_;
    // A backend that plans for itself would redo the pipeline's plan (safe mode keeps it: no replan).
    pipeline.plan = !backend_plans_ || options_.safe;
    std::vector<Shape> seg_shapes;
    for (ir::ValueId v : seg_outputs) seg_shapes.push_back(s.value(v).shape);
    auto t_pipeline = std::chrono::steady_clock::now();
    passes::run_pipeline(s, pipeline);
    const double pipeline_ms = ms_since(t_pipeline);
    // Passes may hand a graph output over to another value (a Reshape or Identity removed): the
    // segment's outputs are matched by position, and each keeps the shape the probe gave it.
    std::vector<ir::ValueId> kept_outputs;
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      ir::ValueId v = s.outputs[i];
      if (s.is_constant(v)) {
        entry->constants.emplace_back(source_id[static_cast<size_t>(seg_outputs[i])],
                                      s.value(v).constant.reshaped(seg_shapes[i]));
        continue;
      }
      kept_outputs.push_back(v);
      entry->outputs.push_back(source_id[static_cast<size_t>(seg_outputs[i])]);
      entry->output_shapes.push_back(seg_shapes[i]);
      entry->output_dtypes.push_back(s.value(v).dtype);
    }
    if (kept_outputs.empty() || s.nodes.empty()) {
      entry->outputs.clear();
      return entry;
    }
    s.outputs = kept_outputs;
    for (const ir::Node& node : s.nodes)
      if (auto reason = backend_.unsupported_reason(s, node))
        throw Error(ErrorCode::UnsupportedOp, backend_.name() + " backend: " + *reason, node.name,
                    ir::op_name(node.op));
    for (ir::ValueId v : s.inputs) entry->inputs.push_back(source_id[static_cast<size_t>(v)]);
    auto t_compile = std::chrono::steady_clock::now();
    entry->exe = backend_.compile(s, options_);
    const auto& plan = pipeline.plan ? s.plan : entry->exe->graph().plan;
    entry->bytes = plan ? plan->arena_bytes : 0;
    if (trace_)
      std::cerr << "lockstep: run-time shapes:   pipeline " << pipeline_ms << " ms, " << backend_.name() << " compile "
                << ms_since(t_compile) << " ms (" << s.nodes.size() << " kernels); copy " << copy_ms
                << " ms, whole miss " << ms_since(t_build) << " ms\n";
    return entry;
  }

  void execute(const Entry& entry, const RunOptions& run_options) {
    for (const auto& [v, t] : entry.constants) {
      env_[static_cast<size_t>(v)] = t;
      env_dtype_[static_cast<size_t>(v)] = t.dtype();  // folded constants carry their IR dtype
      env_const_[static_cast<size_t>(v)] = 1;
    }
    if (entry.exe) {
      std::vector<RunValue> in;
      for (ir::ValueId v : entry.inputs) {
        const size_t i = static_cast<size_t>(v);
        in.push_back({env_[i], env_[i].defined() ? nullptr : env_resident_[i]});
        if (env_[i].defined()) stats_.last_run_bytes_in += env_[i].nbytes();
      }
      // Taps (bisect) see every value on the host, as the segments' own taps do.
      std::vector<char> to_host(entry.outputs.size(), 1);
      if (!all_to_host_ && !run_options.tap)
        for (size_t o = 0; o < entry.outputs.size(); ++o) to_host[o] = host_reader_[static_cast<size_t>(entry.outputs[o])];
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<RunValue> out = entry.exe->run_resident(in, to_host, run_options);
      stats_.last_run_segments_ms += ms_since(t0);
      int to_host_count = 0;
      int64_t to_host_bytes = 0;
      std::string to_host_names;  // for the trace: the first four
      for (size_t o = 0; o < entry.outputs.size(); ++o) {
        const size_t v = static_cast<size_t>(entry.outputs[o]);
        RunValue& r = out.at(o);
        env_dtype_[v] = entry.output_dtypes[o];
        if (r.host.defined()) {
          to_host_bytes += r.host.nbytes();
          if (trace_ && to_host_count < 4) to_host_names += " '" + source_.value(entry.outputs[o]).name + "'";
          ++to_host_count;
          env_[v] = r.host.shape() == entry.output_shapes[o] ? std::move(r.host) : r.host.reshaped(entry.output_shapes[o]);
        } else {
          env_resident_[v] = std::move(r.resident);
          resident_shape_[v] = entry.output_shapes[o];
          ++stats_.last_run_values_on_device;
        }
      }
      stats_.last_run_bytes_out += to_host_bytes;
      stats_.last_run_host_reads += to_host_count > 0;
      if (trace_)
        std::cerr << "lockstep: run-time shapes:   to the host " << to_host_count << " values, " << to_host_bytes << " bytes"
                  << to_host_names << (to_host_count > 4 ? " ..." : "") << "\n";
      ++stats_.last_run_segments;
    }
    const auto t_host = std::chrono::steady_clock::now();
    for (int n : entry.host_nodes) {
      const ir::Node& node = source_.nodes[static_cast<size_t>(n)];
      std::vector<Tensor> args;
      for (ir::ValueId v : node.inputs) args.push_back(v == ir::kNoValue ? Tensor{} : host_value(v));
      std::vector<Tensor> out = reference::evaluate_node(source_, node, args);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        ir::ValueId v = node.outputs[o];
        if (v == ir::kNoValue) continue;
        if (run_options.tap) run_options.tap(node, static_cast<int>(o), out[o]);
        env_dtype_[static_cast<size_t>(v)] = out[o].dtype() == DType::Float64 ? source_.value(v).dtype : out[o].dtype();
        env_[static_cast<size_t>(v)] = std::move(out[o]);
      }
      ++stats_.last_run_host_nodes;
    }
    stats_.last_run_host_nodes_ms += ms_since(t_host);
  }

  ir::Graph source_;
  const Backend& backend_;
  Options options_;
  int64_t cap_ = 0;
  int64_t moved_max_bytes_ = passes::kMoveAtRunTimeBytes;
  bool trace_ = false;  // LOCKSTEP_TRACE_SHAPES: one line per specialised segment on stderr
  std::vector<char> parameter_reader_;  // per value: read as a parameter input by some node
  std::vector<char> host_reader_;       // per value: read on the host (see the constructor)
  bool all_to_host_ = false;            // LOCKSTEP_SEGMENT_VALUES=host
  bool backend_plans_ = false;          // segments go to the backend unplanned (Backend::plans_memory)
  std::vector<Prediction> predictions_;  // per source node (dynamic/predict.h); empty: none
  SegmentCache cache_;
  Stats stats_;
  std::mutex mutex_;
  // The current run's values, per source ValueId.
  std::vector<Tensor> env_;
  std::vector<std::shared_ptr<const ResidentValue>> env_resident_;  // left on the device by a segment
  std::vector<Shape> resident_shape_;                               // their shapes, as the probe gave them
  std::vector<DType> env_dtype_;
  std::vector<char> env_const_;
  // Last: destroyed first, while source_ and predictions_ that its threads read still live.
  // LOCKSTEP_SEGMENT_COPY_AHEAD=0: every miss copies while it waits (A/B timing).
  CopiesAhead copies_{source_, predictions_, !env_is("LOCKSTEP_SEGMENT_COPY_AHEAD", "0")};
};

}  // namespace

int64_t default_memory_cap() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t{8} << 30;
  return static_cast<int64_t>(pages) * page / 2;
}

bool needs_run_time_shapes(const ir::Graph& graph, const Options& options) {
  ir::Graph g = graph;
  for (const auto& [name, shape] : options.input_shapes) {
    ir::ValueId id = g.find_value(name);
    if (id != ir::kNoValue && g.value(id).shape.size() == shape.size()) g.value(id).shape = shape;
  }
  std::vector<char> known(g.values.size(), 0);
  for (ir::ValueId v : g.inputs) {
    if (!g.value(v).shape_known()) return true;
    known[static_cast<size_t>(v)] = 1;
  }
  return probe(g, known, 0).any_blocked();
}

std::unique_ptr<Executable> compile_dynamic(const ir::Graph& graph, const Backend& backend, const Options& options,
                                            CacheLimits limits) {
  ir::Graph g = graph;
  for (const auto& [name, shape] : options.input_shapes) {
    ir::ValueId id = g.find_value(name);
    if (id == ir::kNoValue || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error(ErrorCode::InvalidArgument, "a shape was given for '" + name + "', which is no graph input");
    if (g.value(id).shape.size() != shape.size())
      throw Error(ErrorCode::ShapeMismatch, "input '" + name + "': the given shape " + shape_str(shape) +
                                                " has another rank than " + shape_str(g.value(id).shape));
    g.value(id).shape = shape;
  }
  return std::make_unique<DynamicExecutable>(std::move(g), backend, options, limits);
}

const Stats* stats(const Executable& exe) {
  auto* d = dynamic_cast<const DynamicExecutable*>(&exe);
  return d ? &d->stats() : nullptr;
}

}  // namespace lockstep::dynamic
