#include "voices/piper_stream.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "diff/extract.h"
#include "voices/piper.h"

namespace lockstep::voices {

namespace {

constexpr std::string_view kDecoderPrefix = "/dec/";
constexpr int64_t kWinogradTile = 4;  // the cpu Winograd kernel's m (conv_winograd.h)

bool in_decoder(const ir::Node& node) { return node.name.compare(0, kDecoderPrefix.size(), kDecoderPrefix) == 0; }

Error not_streamable(const std::string& why) {
  return Error(ErrorCode::InvalidArgument, "streaming: not a Piper voice with a HiFi-GAN decoder (" + why + ")");
}

}  // namespace

PiperStreamer::PiperStreamer(const Model& voice, std::string_view backend, const Options& options, StreamWindows windows)
    : windows_(windows) {
  const ir::Graph& g = voice.graph();
  if (!is_piper_voice(g)) throw not_streamable("its inputs are not input, input_lengths, scales");
  for (int64_t v : {windows.first, windows.largest, windows.context})
    if (v <= 0) throw Error(ErrorCode::InvalidArgument, "streaming: window sizes and context must be positive");
  // The decoder's input: the one non-constant value its nodes read from the rest of the graph; its
  // output: the one value of its nodes the rest reads.
  std::set<ir::ValueId> inside, reads;
  for (const ir::Node& node : g.nodes)
    if (in_decoder(node)) {
      inside.insert(node.outputs.begin(), node.outputs.end());
      reads.insert(node.inputs.begin(), node.inputs.end());
    }
  std::vector<ir::ValueId> ins, outs;
  for (ir::ValueId v : reads) {
    if (v != ir::kNoValue && !inside.count(v) && !g.is_constant(v)) ins.push_back(v);
  }
  for (const ir::Node& node : g.nodes)
    if (!in_decoder(node))
      for (ir::ValueId v : node.inputs)
        if (inside.count(v) && std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
  for (ir::ValueId v : g.outputs)
    if (inside.count(v) && std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
  if (ins.size() != 1 || outs.size() != 1)
    throw not_streamable(std::to_string(ins.size()) + " values enter its /dec/ nodes and " + std::to_string(outs.size()) +
                         " leave them; one of each expected");
  decoder_input_ = g.value(ins[0]).name;
  const std::string decoder_output = g.value(outs[0]).name;
  // Its channels: the first convolution that reads it.
  int64_t channels = -1;
  for (const ir::Node& node : g.nodes)
    if (in_decoder(node) && node.op == ir::Op::Conv && node.inputs[0] == ins[0] && g.is_constant(node.inputs[1])) {
      const Shape& w = g.value(node.inputs[1]).constant.shape();
      channels = w.size() == 3 ? w[1] * node.attrs.get_int("group", 1) : -1;
      break;
    }
  if (channels <= 0) throw not_streamable("no 1-D convolution reads the decoder's input");
  // A Winograd conv of dilation d takes its outputs in tiles t, t + d, ..., t + 3d: its pattern
  // repeats every 4d outputs. A window whose first frame is a multiple of the lcm of 4d over the
  // decoder's convs puts every output at the same place in its tile as the whole sentence does (a
  // conv after an upsampler only needs less). Windows and context are rounded up to it.
  phase_ = 1;
  for (const ir::Node& node : g.nodes)
    if (in_decoder(node) && (node.op == ir::Op::Conv || node.op == ir::Op::ConvTranspose)) {
      const std::vector<int64_t> d = node.attrs.get_ints("dilations", {1});
      phase_ = std::lcm(phase_, kWinogradTile * (d.empty() ? 1 : d[0]));
    }
  auto round_up = [this](int64_t v) { return (v + phase_ - 1) / phase_ * phase_; };
  windows_.first = round_up(windows_.first);
  windows_.largest = round_up(windows_.largest);
  windows_.context = round_up(windows_.context);

  // The front: the voice's inputs to the decoder's input (and the durations, for alignments).
  std::vector<std::string> front_outputs = {decoder_input_};
  int ceil = -1, ceils = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op == ir::Op::Ceil) ceil = static_cast<int>(n), ++ceils;
  has_durations_ = ceils == 1;
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
  // The decoder alone, its input [1, channels, frames] with the frame count a run-time dim.
  ir::Graph decoder = diff::extract_subgraph(g, {decoder_output}, {decoder_input_});
  ir::Value& in = decoder.value(decoder.inputs.at(0));
  in.dtype = DType::Float32;
  in.shape = {1, channels, -1};
  in.dim_params = {"", "", "frames"};
  front_ = compile(Model::from_graph(std::move(front)), backend, options);
  decoder_ = compile(Model::from_graph(std::move(decoder)), backend, options);
}

std::unique_ptr<PiperStream> PiperStreamer::start(const std::vector<Tensor>& inputs, const RunOptions& options) {
  if (inputs.size() != input_names_.size())
    throw Error(ErrorCode::InvalidArgument, "streaming: the voice takes " + std::to_string(input_names_.size()) +
                                                " inputs, got " + std::to_string(inputs.size()));
  std::vector<Tensor> front_in;
  for (int i : front_inputs_) front_in.push_back(inputs[static_cast<size_t>(i)]);
  std::vector<Tensor> out = front_->run(front_in, options);
  auto s = std::make_unique<PiperStream>();
  s->decoder_ = decoder_.get();
  s->options_ = options;
  s->windows_ = windows_;
  s->z_ = std::move(out.at(static_cast<size_t>(front_outputs_[0])));
  if (has_durations_) s->durations_ = std::move(out.at(static_cast<size_t>(front_outputs_[1])));
  const Shape& shape = s->z_.shape();
  if (shape.size() != 3 || shape[0] != 1)
    throw Error(ErrorCode::InvalidArgument, "streaming: one utterance at a time (the decoder's input is " +
                                                shape_str(shape) + ")");
  s->channels_ = shape[1];
  s->frames_ = shape[2];
  s->width_ = windows_.first;
  return s;
}

bool PiperStream::next(Tensor* samples) {
  if (start_ >= frames_) return false;
  const int64_t end = std::min(frames_, start_ + width_);
  const int64_t a = std::max<int64_t>(0, start_ - windows_.context), b = std::min(frames_, end + windows_.context);
  // The window [a, b) of z, every channel.
  Tensor window(DType::Float32, {1, channels_, b - a});
  const float* z = z_.data<float>();
  float* w = window.data<float>();
  for (int64_t c = 0; c < channels_; ++c)
    std::memcpy(w + c * (b - a), z + c * frames_ + a, static_cast<size_t>(b - a) * sizeof(float));
  Tensor y = decoder_->run({window}, options_).at(0);
  if (y.numel() % (b - a) != 0)
    throw Error(ErrorCode::Internal, "streaming: the decoder gave " + std::to_string(y.numel()) + " samples for " +
                                         std::to_string(b - a) + " frames");
  samples_per_frame_ = y.numel() / (b - a);
  const int64_t from = (start_ - a) * samples_per_frame_, n = (end - start_) * samples_per_frame_;
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
