#include "dynamic/segment_copy.h"

#include <algorithm>

#include "passes/fold_support.h"

namespace lockstep::dynamic {

SegmentCopy copy_segment(const ir::Graph& source, const std::vector<Prediction>& predictions, const CopyKey& key) {
  SegmentCopy c;
  ir::Graph& g = c.graph;
  g.name = source.name;
  g.opset = source.opset;
  // Reserved once: growing them value by value moved the values and nodes several times a copy.
  g.values.reserve(source.values.size());
  g.nodes.reserve(static_cast<size_t>(std::count(key.done.begin(), key.done.end(), 0)));
  c.source_id.reserve(source.values.size());
  c.known.reserve(source.values.size());
  c.local.assign(source.values.size(), ir::kNoValue);
  // Only the values the copied nodes and the graph outputs refer to, renumbered densely: the probe,
  // the passes and the backend walk a segment's values, not the voice's whole table (~5,000).
  auto take = [&](ir::ValueId v) -> ir::ValueId {
    if (v == ir::kNoValue) return v;
    ir::ValueId& id = c.local[static_cast<size_t>(v)];
    if (id != ir::kNoValue) return id;
    id = static_cast<ir::ValueId>(g.values.size());
    c.source_id.push_back(v);
    const ir::Value& from = source.values[static_cast<size_t>(v)];
    c.known.push_back(key.known[static_cast<size_t>(v)]);
    ir::Value& value = g.values.emplace_back();
    if (!c.known.back()) {
      value = from;
    } else {  // its symbolic dims are spent: not copied
      value.name = from.name;
      value.constant = from.constant;
    }
    return id;
  };
  for (ir::ValueId v : source.inputs) g.inputs.push_back(take(v));
  for (ir::ValueId v : source.outputs) g.outputs.push_back(take(v));
  // Nodes downstream of a host node that has not run (NonZero) wait whatever the probe finds:
  // they are left out of the copy (a voice's encoder segment copies ~1,600 of its ~2,750 nodes).
  const bool predict = key.predict && !predictions.empty();
  std::vector<char> waits(source.values.size(), 0);  // produced by a host node or a node left out
  for (size_t n = 0; n < source.nodes.size(); ++n) {
    if (key.done[n]) continue;
    const ir::Node& from = source.nodes[n];
    const Prediction prediction = predict ? predictions[n] : Prediction::None;
    const bool downstream = std::any_of(from.inputs.begin(), from.inputs.end(), [&](ir::ValueId v) {
      return v != ir::kNoValue && waits[static_cast<size_t>(v)];
    }) || std::any_of(from.epilogue.begin(), from.epilogue.end(), [&](const ir::EpilogueStep& step) {
      return step.operand != ir::kNoValue && waits[static_cast<size_t>(step.operand)];
    });
    if (downstream || (ir::has_data_dependent_shape(from.op) && prediction == Prediction::None &&
                       !passes::all_inputs_constant(source, from)))
      for (ir::ValueId v : from.outputs)
        if (v != ir::kNoValue) waits[static_cast<size_t>(v)] = 1;
    if (downstream) {
      c.left_out.push_back(n);
      continue;
    }
    ir::Node& node = g.nodes.emplace_back(from);
    for (ir::ValueId& v : node.inputs) v = take(v);
    for (ir::ValueId& v : node.outputs) v = take(v);
    for (auto& step : node.epilogue) step.operand = take(step.operand);
    c.origin.push_back(static_cast<int>(n));
    c.predicted.push_back(prediction);
  }
  return c;
}

CopiesAhead::~CopiesAhead() {
  for (Slot& s : ahead_)
    if (s.copy.valid()) s.copy.wait();
}

SegmentCopy CopiesAhead::take(const CopyKey& key) {
  SegmentCopy c;
  auto it = std::find_if(ahead_.begin(), ahead_.end(), [&](const Slot& s) { return s.key == key; });
  if (it != ahead_.end()) {
    c = it->copy.get();
    ++made_ahead_;
    ahead_.erase(it);
  } else {
    c = copy_segment(source_, predictions_, key);
  }
  if (!enabled_) return c;
  if (ahead_.size() >= slots_) ahead_.erase(ahead_.begin());  // its copy finishes first (future's wait)
  ahead_.push_back({key, std::async(std::launch::async, [this, key] { return copy_segment(source_, predictions_, key); })});
  return c;
}

}  // namespace lockstep::dynamic
