#include "voices/piper_stream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "diff/extract.h"
#include "voices/piper.h"

namespace lockstep::voices {

namespace {

constexpr std::string_view kDecoderPrefix = "/dec/";
constexpr int64_t kWinogradTile = 4;  // the cpu Winograd kernel's m (conv_winograd.h)

constexpr std::string_view kFlowPrefix = "/flow/";

bool in_decoder(const ir::Node& node) { return node.name.compare(0, kDecoderPrefix.size(), kDecoderPrefix) == 0; }
bool in_flow(const ir::Node& node) { return node.name.compare(0, kFlowPrefix.size(), kFlowPrefix) == 0; }

Error not_streamable(const std::string& why) {
  return Error(ErrorCode::InvalidArgument, "streaming: not a Piper voice with a HiFi-GAN decoder (" + why + ")");
}

}  // namespace

PiperStreamer::PiperStreamer(const Model& voice, std::string_view backend, const Options& options, StreamWindows windows)
    : backend_(backend), options_(options), windows_(windows) {
  const ir::Graph& g = voice.graph();
  if (!is_piper_voice(g)) throw not_streamable("its inputs are not input, input_lengths, scales");
  for (int64_t v : {windows.first, windows.largest, windows.context})
    if (v <= 0) throw Error(ErrorCode::InvalidArgument, "streaming: window sizes and context must be positive");
  // The windowed part: the decoder (with window_flow, the flow too) and everything computed from
  // their values (the flow's unnamed WaveNet gates, z * y_mask). Its inputs, the cut: what those
  // nodes read from the rest.
  std::vector<char> windowed_value(g.values.size(), 0);
  std::vector<char> windowed_node(g.nodes.size(), 0);
  bool any_decoder = false;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    bool w = in_decoder(node) || (windows.window_flow && in_flow(node));
    for (ir::ValueId v : node.inputs) w = w || (v != ir::kNoValue && windowed_value[static_cast<size_t>(v)]);
    if (!w) continue;
    any_decoder = any_decoder || in_decoder(node);
    windowed_node[n] = 1;
    for (ir::ValueId v : node.outputs) windowed_value[static_cast<size_t>(v)] = 1;
  }
  if (!any_decoder) throw not_streamable("no /dec/ nodes");
  std::vector<std::string> cut, decoder_outputs;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!windowed_node[n]) continue;
    for (ir::ValueId v : g.nodes[n].inputs) {
      if (v == ir::kNoValue || windowed_value[static_cast<size_t>(v)] || g.is_constant(v)) continue;
      if (std::find(cut.begin(), cut.end(), g.value(v).name) == cut.end()) cut.push_back(g.value(v).name);
    }
  }
  // The decoder's output: the one value of /dec/ nodes that other nodes or the graph read.
  std::set<ir::ValueId> decoder_values;
  for (const ir::Node& node : g.nodes)
    if (in_decoder(node)) decoder_values.insert(node.outputs.begin(), node.outputs.end());
  auto note = [&](ir::ValueId v) {
    if (decoder_values.count(v) && std::find(decoder_outputs.begin(), decoder_outputs.end(), g.value(v).name) ==
                                       decoder_outputs.end())
      decoder_outputs.push_back(g.value(v).name);
  };
  for (const ir::Node& node : g.nodes)
    if (!in_decoder(node))
      for (ir::ValueId v : node.inputs) note(v);
  for (ir::ValueId v : g.outputs) note(v);
  if (cut.empty() || decoder_outputs.size() != 1)
    throw not_streamable(std::to_string(cut.size()) + " values enter its flow and decoder, " +
                         std::to_string(decoder_outputs.size()) + " leave the decoder");
  cut_ = cut;
  // A Winograd conv of dilation d takes its outputs in tiles t, t + d, ..., t + 3d: its pattern
  // repeats every 4d outputs. A window whose first frame is a multiple of the lcm of 4d over the
  // windowed convs puts every output at the same place in its tile as the whole sentence does (a
  // conv after an upsampler needs less). Windows and context are rounded up to it.
  phase_ = 1;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (windowed_node[n] && (node.op == ir::Op::Conv || node.op == ir::Op::ConvTranspose)) {
      const std::vector<int64_t> d = node.attrs.get_ints("dilations", {1});
      phase_ = std::lcm(phase_, kWinogradTile * (d.empty() ? 1 : d[0]));
    }
  }
  // The context must cover how far an output's arithmetic looks to either side: along every path
  // from the cut, each conv adds its half-width (k - 1) d / 2 and, since a Winograd tile's outputs
  // are computed together from all of its input points, 3d more — at its own rate (samples per
  // frame: a ConvTranspose multiplies it by its stride).
  std::vector<double> rate(g.values.size(), 1.0), reach(g.values.size(), 0.0);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (!windowed_node[n]) continue;
    double r = 1.0, f = 0.0;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && windowed_value[static_cast<size_t>(v)]) {
        r = std::max(r, rate[static_cast<size_t>(v)]);
        f = std::max(f, reach[static_cast<size_t>(v)]);
      }
    if ((node.op == ir::Op::Conv || node.op == ir::Op::ConvTranspose) && g.is_constant(node.inputs[1])) {
      const Shape& w = g.value(node.inputs[1]).constant.shape();
      const int64_t k = w.empty() ? 1 : w.back();
      const std::vector<int64_t> d = node.attrs.get_ints("dilations", {1});
      const int64_t stride = node.attrs.get_ints("strides", {1}).at(0);
      const int64_t dil = d.empty() ? 1 : d[0];
      const int64_t tile = k >= 2 ? kWinogradTile - 1 : 0;  // pointwise convs are GEMMs, not tiles
      f += (static_cast<double>((k - 1) * dil) / 2.0 + static_cast<double>(tile * dil)) / r;
      if (node.op == ir::Op::ConvTranspose) r *= static_cast<double>(stride);
    }
    for (ir::ValueId v : node.outputs) rate[static_cast<size_t>(v)] = r, reach[static_cast<size_t>(v)] = f;
  }
  const ir::ValueId out_id = g.find_value(decoder_outputs[0]);
  reach_ = static_cast<int64_t>(std::ceil(reach[static_cast<size_t>(out_id)]));
  auto round_up = [this](int64_t v) { return (v + phase_ - 1) / phase_ * phase_; };
  windows_.context = std::max(windows_.context, reach_ + 1);
  windows_.first = round_up(windows_.first);
  windows_.largest = round_up(windows_.largest);
  windows_.context = round_up(windows_.context);

  // The front: the voice's inputs to the cut (and the durations, for alignments).
  std::vector<std::string> front_outputs = cut;
  int ceil = -1, ceils = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op == ir::Op::Ceil) ceil = static_cast<int>(n), ++ceils;
  has_durations_ = ceils == 1 && !windowed_node[static_cast<size_t>(ceil)];
  if (has_durations_) front_outputs.push_back(g.value(g.nodes[static_cast<size_t>(ceil)].outputs[0]).name);
  ir::Graph front = diff::extract_subgraph(g, front_outputs);
  for (const std::string& name : front_outputs) {
    auto at = std::find_if(front.outputs.begin(), front.outputs.end(),
                           [&](ir::ValueId id) { return front.value(id).name == name; });
    if (at == front.outputs.end()) throw Error(ErrorCode::Internal, "streaming: the front lost its output " + name);
    front_outputs_.push_back(static_cast<int>(at - front.outputs.begin()));
  }
  for (ir::ValueId id : g.inputs) input_names_.push_back(g.value(id).name);
  for (ir::ValueId id : front.inputs) {
    auto it = std::find(input_names_.begin(), input_names_.end(), front.value(id).name);
    front_inputs_.push_back(static_cast<int>(it - input_names_.begin()));
  }
  windowed_ = diff::extract_subgraph(g, decoder_outputs, cut);
  front_ = compile(Model::from_graph(std::move(front)), backend, options);
}

void PiperStreamer::compile_windowed(const std::vector<Tensor>& cut_values, int64_t frames) {
  // The cut's dtypes and shapes from the first sentence's values; the frame axis (the last one,
  // where it has the sentence's frame count) a run-time dim.
  for (size_t i = 0; i < windowed_.inputs.size(); ++i) {
    ir::Value& in = windowed_.value(windowed_.inputs[i]);
    const auto at = std::find(cut_.begin(), cut_.end(), in.name) - cut_.begin();
    const Tensor& t = cut_values.at(static_cast<size_t>(at));
    in.dtype = t.dtype();
    in.shape = t.shape();
    in.dim_params.assign(in.shape.size(), "");
    if (!in.shape.empty() && in.shape.back() == frames) {
      in.shape.back() = -1;
      in.dim_params.back() = "frames";
    }
  }
  windowed_inputs_.clear();
  for (ir::ValueId id : windowed_.inputs)
    windowed_inputs_.push_back(static_cast<int>(std::find(cut_.begin(), cut_.end(), windowed_.value(id).name) - cut_.begin()));
  decoder_ = compile(Model::from_graph(windowed_), backend_, options_);
}

std::unique_ptr<PiperStream> PiperStreamer::start(const std::vector<Tensor>& inputs, const RunOptions& options) {
  if (inputs.size() != input_names_.size())
    throw Error(ErrorCode::InvalidArgument, "streaming: the voice takes " + std::to_string(input_names_.size()) +
                                                " inputs, got " + std::to_string(inputs.size()));
  std::vector<Tensor> front_in;
  for (int i : front_inputs_) front_in.push_back(inputs[static_cast<size_t>(i)]);
  std::vector<Tensor> out = front_->run(front_in, options);
  auto s = std::make_unique<PiperStream>();
  s->options_ = options;
  s->windows_ = windows_;
  std::vector<Tensor> cut_values;
  for (size_t i = 0; i < cut_.size(); ++i) cut_values.push_back(out.at(static_cast<size_t>(front_outputs_[i])));
  if (has_durations_) s->durations_ = out.at(static_cast<size_t>(front_outputs_.back()));
  // The sentence's frames: the longest last axis among the cut (z_p and y_mask have it; a speaker
  // embedding [1, gin, 1] does not).
  int64_t frames = 0;
  for (const Tensor& t : cut_values) frames = std::max<int64_t>(frames, t.shape().empty() ? 0 : t.shape().back());
  for (const Tensor& t : cut_values)
    if (!t.shape().empty() && t.shape()[0] != 1)
      throw Error(ErrorCode::InvalidArgument, "streaming: one utterance at a time (" + shape_str(t.shape()) + ")");
  if (!decoder_) compile_windowed(cut_values, frames);
  s->decoder_ = decoder_.get();
  for (int i : windowed_inputs_) s->cut_.push_back(cut_values.at(static_cast<size_t>(i)));
  s->frames_ = frames;
  s->width_ = windows_.first;
  return s;
}

bool PiperStream::next(Tensor* samples) {
  if (start_ >= frames_) return false;
  int64_t end = std::min(frames_, start_ + width_);
  // A window whose context reaches the sentence's end takes the rest of it too.
  if (end + windows_.context >= frames_) end = frames_;
  const int64_t a = std::max<int64_t>(0, start_ - windows_.context), b = std::min(frames_, end + windows_.context);
  // Every input with the frame axis cut to [a, b); the others (a speaker embedding) whole.
  std::vector<Tensor> window;
  for (const Tensor& t : cut_) {
    if (t.shape().empty() || t.shape().back() != frames_ || frames_ == 1) {
      window.push_back(t);
      continue;
    }
    Shape shape = t.shape();
    shape.back() = b - a;
    Tensor w(t.dtype(), shape);
    const size_t es = dtype_size(t.dtype());
    const int64_t rows = t.numel() / frames_;
    const auto* src = static_cast<const std::byte*>(t.raw());
    auto* dst = static_cast<std::byte*>(w.raw());
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + static_cast<size_t>(r * (b - a)) * es, src + static_cast<size_t>(r * frames_ + a) * es,
                  static_cast<size_t>(b - a) * es);
    window.push_back(std::move(w));
  }
  Tensor y = decoder_->run(window, options_).at(0);
  if (y.numel() % (b - a) != 0)
    throw Error(ErrorCode::Internal, "streaming: the decoder gave " + std::to_string(y.numel()) + " samples for " +
                                         std::to_string(b - a) + " frames");
  const int64_t samples_per_frame = y.numel() / (b - a);
  const int64_t from = (start_ - a) * samples_per_frame, n = (end - start_) * samples_per_frame;
  Tensor out(DType::Float32, {n});
  std::memcpy(out.data<float>(), y.data<float>() + from, static_cast<size_t>(n) * sizeof(float));
  *samples = std::move(out);
  start_ = end;
  width_ = std::min(windows_.largest, width_ * std::max<int64_t>(1, windows_.growth));
  return true;
}

void PiperStreamer::run(const std::vector<Tensor>& inputs, const RunOptions& options,
                        const std::function<bool(const Tensor&)>& emit) {
  std::unique_ptr<PiperStream> s = start(inputs, options);
  Tensor samples;
  while (s->next(&samples))
    if (!emit(samples)) return;
}

}  // namespace lockstep::voices
