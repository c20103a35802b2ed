#include "core/wav.h"

#include <cmath>
#include <string>

#include "core/atomic_file.h"

namespace lockstep {

namespace {

void put_le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

void write_wav(const std::string& path, const Tensor& audio, int sample_rate) {
  if (!audio.defined() || audio.numel() == 0 || !is_floating(audio.dtype()))
    throw Error(ErrorCode::InvalidArgument, "--wav: the output is not a non-empty floating waveform");
  if (sample_rate <= 0 || sample_rate > 1'000'000)
    throw Error(ErrorCode::InvalidArgument, "--wav: sample rate " + std::to_string(sample_rate) + " is out of range");
  const int64_t n = audio.numel();
  if (n > (int64_t{1} << 30))
    throw Error(ErrorCode::LimitExceeded, "--wav: " + std::to_string(n) + " samples do not fit a .wav file");
  std::string out;
  out.reserve(44 + static_cast<size_t>(n) * 2);
  const uint32_t data_bytes = static_cast<uint32_t>(n * 2);
  out += "RIFF";
  put_le(out, 36 + data_bytes, 4);
  out += "WAVEfmt ";
  put_le(out, 16, 4);  // PCM header size
  put_le(out, 1, 2);   // PCM
  put_le(out, 1, 2);   // mono
  put_le(out, static_cast<uint32_t>(sample_rate), 4);
  put_le(out, static_cast<uint32_t>(sample_rate) * 2, 4);  // byte rate
  put_le(out, 2, 2);                                       // block align
  put_le(out, 16, 2);                                      // bits per sample
  out += "data";
  put_le(out, data_bytes, 4);
  for (int64_t i = 0; i < n; ++i) {
    double x = audio.element_as_double(i);
    if (std::isnan(x))
      throw Error(ErrorCode::InvalidArgument, "--wav: sample " + std::to_string(i) + " is NaN; nothing written");
    x = std::min(1.0, std::max(-1.0, x));
    auto s = static_cast<int16_t>(std::lrint(x * 32767.0));
    put_le(out, static_cast<uint16_t>(s), 2);
  }
  write_file_atomic(path, out);
}

}  // namespace lockstep
