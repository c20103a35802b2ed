// Streaming a Piper voice inside a sentence (issue 46, docs/piper.md "Streaming"): the voice cut
// where its HiFi-GAN decoder begins (the values the /dec/ nodes read from the rest; with
// window_flow, where the flow begins: z_p, y_mask, a speaker embedding), the front run once, then
// the decoder over windows of frames, each with `context` frames on either side that cover its
// receptive field, and each window's own samples handed on as soon as they exist. Windows and contexts are multiples of the decoder's tile phase
// (the lcm of 4 x dilation over its convs: 48 frames for the joe voice, dilations 1, 2, 3, 6, 12), so every convolution
// computes each output at the same place in its Winograd tile as in the whole sentence:
// concatenated, the chunks are the whole sentence's decoder output bit for bit on the cpu backend
// (tested); a backend whose kernels depend on the length (cuda's tile choices) may differ in the
// last bits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::voices {

// Frames; each rounded up to a multiple of the decoder's tile phase.
struct StreamWindows {
  int64_t first = 48;     // frames in the first window (time to first audio)
  int64_t growth = 2;     // each window this many times the last ...
  int64_t largest = 192;  // ... up to this many frames
  int64_t context = 48;   // frames of context on each side, at least the computed reach
  // Window the flow as well as the decoder: the front is then only the text encoder, durations and
  // noise, and the first audio comes sooner; but the last ~120 frames of some sentences differ
  // from the whole sentence by ~6e-7 (a length-dependent kernel at the sentence's end, not yet
  // found), so it is off by default.
  bool window_flow = false;
};

// One sentence being streamed: the front has run; next() runs the decoder's next window.
class PiperStream {
 public:
  // The next window's samples (float32 [n]); false when the sentence is done.
  bool next(Tensor* samples);
  int64_t frames() const { return frames_; }
  // The front's per-phoneme frame counts (the voice's one Ceil node), undefined when it has none.
  const Tensor& durations() const { return durations_; }

 private:
  friend class PiperStreamer;
  Executable* decoder_ = nullptr;
  RunOptions options_;
  StreamWindows windows_;
  std::vector<Tensor> cut_;  // the windowed part's inputs, whole sentence
  Tensor durations_;
  int64_t frames_ = 0, start_ = 0, width_ = 0;
};

class PiperStreamer {
 public:
  // Throws Error(InvalidArgument) when the model is not a Piper voice with a /dec/ vocoder.
  PiperStreamer(const Model& voice, std::string_view backend, const Options& options, StreamWindows windows = {});

  // Runs the front on the voice's inputs (in the voice's input order) and returns the sentence,
  // whose next() runs the decoder window by window. The streamer must outlive it; one sentence at
  // a time per streamer (the executables' runs serialize anyway).
  std::unique_ptr<PiperStream> start(const std::vector<Tensor>& inputs, const RunOptions& options);

  // start() and next() to the end, calling emit(samples) per window; emit returns false to stop.
  void run(const std::vector<Tensor>& inputs, const RunOptions& options, const std::function<bool(const Tensor&)>& emit);

  // The values where the voice is cut: the flow's and decoder's inputs (z_p, y_mask, ...).
  const std::vector<std::string>& cut() const { return cut_; }
  int64_t phase() const { return phase_; }
  // Frames an output's computation reaches to either side, from the convs' widths and rates; the
  // context is at least this (rounded up to the phase).
  int64_t reach() const { return reach_; }
  const StreamWindows& windows() const { return windows_; }

 private:
  void compile_windowed(const std::vector<Tensor>& cut_values, int64_t frames);

  std::string backend_;
  Options options_;
  std::unique_ptr<Executable> front_, decoder_;  // decoder_: the windowed part, compiled at the first start()
  ir::Graph windowed_;
  std::vector<std::string> cut_;
  std::vector<int> windowed_inputs_;      // for each windowed input, its index in cut_
  std::vector<std::string> input_names_;  // the voice's inputs, by which the front's are picked
  std::vector<int> front_inputs_;         // for each front input, its index among the voice's
  std::vector<int> front_outputs_;        // where the decoder's input (and the durations) are among the front's
  bool has_durations_ = false;
  int64_t phase_ = 1, reach_ = 0;
  StreamWindows windows_;
};

}  // namespace lockstep::voices
