// 16-bit PCM mono .wav from a float waveform (a TTS voice's output), written atomically.
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/tensor.h"

namespace lockstep {

// Every sample of `audio` (any shape, floating; values clipped to [-1, 1]) in order, as one
// channel at `sample_rate` Hz. NaN or an empty tensor is Error(InvalidArgument); nothing is written.
void write_wav(const std::string& path, const Tensor& audio, int sample_rate);

}  // namespace lockstep
