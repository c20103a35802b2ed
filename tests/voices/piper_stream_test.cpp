// Streaming a Piper voice inside a sentence (src/voices/piper_stream.h) on the real voice and the
// committed sentences: the windows' samples concatenated are the whole sentence's audio (the voice
// compiled whole, its "output") bit for bit on cpu, noise off and on; windows are rounded up to the
// decoder's tile phase (48 frames on this voice); a model that is not a voice is refused naming why.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "lockstep/lockstep.h"
#include "support/voice.h"
#include "voices/piper_stream.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

TEST(PiperStream, WindowsConcatenateToTheWholeSentenceOnCpu) {
  const std::string path = test::voice_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no Piper voice at " << path << " (scripts/fetch-voice.sh)";
  Model voice = Model::load(path);
  Options options;
  options.threads = 2;
  auto whole = compile(voice, "cpu", options);
  voices::StreamWindows small;  // the smallest windows (one phase each): many boundaries per sentence
  small.first = 1;
  small.largest = 1;
  small.context = 1;
  voices::PiperStreamer streamer(voice, "cpu", options, small);
  for (size_t s : {0, 3, 5}) {
    for (float noise : {0.0f, 0.667f}) {
      std::vector<Tensor> in = test::voice_inputs(test::sentence_ids(s), noise, 1.0f, noise == 0.0f ? 0.0f : 0.8f);
      RunOptions run;
      run.seed = 7;
      const Tensor expected = whole->run(in, run).at(0);
      std::vector<float> got;
      int windows = 0;
      streamer.run(in, run, [&](const Tensor& samples) {
        const float* p = samples.data<float>();
        got.insert(got.end(), p, p + samples.numel());
        ++windows;
        return true;
      });
      ASSERT_EQ(static_cast<int64_t>(got.size()), expected.numel()) << "sentence " << s << ", noise " << noise;
      int64_t first_diff = -1;
      for (int64_t i = 0; i < expected.numel() && first_diff < 0; ++i)
        if (std::memcmp(&got[static_cast<size_t>(i)], expected.data<float>() + i, sizeof(float)) != 0) first_diff = i;
      EXPECT_EQ(first_diff, -1) << "sentence " << s << ", noise " << noise << ": first differing sample of "
                                << expected.numel() << " (" << windows << " windows)";
      if (expected.numel() > 3 * 48 * 256) EXPECT_GT(windows, 2) << "sentence " << s;  // several windows
    }
  }
}

TEST(PiperStream, RoundsWindowsToTheTilePhaseAndRefusesModelsThatAreNoVoice) {
  const std::string path = test::voice_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no Piper voice at " << path;
  voices::StreamWindows odd;
  odd.first = 6;
  voices::PiperStreamer rounded(Model::load(path), "cpu", {}, odd);
  // This voice's decoder convs have dilations 1, 2, 3, 6 and 12; Winograd tiles of 4: lcm(4d) = 48.
  EXPECT_EQ(rounded.phase(), 48);
  EXPECT_EQ(rounded.windows().first, 48);
  odd.first = 0;
  try {
    voices::PiperStreamer s(Model::load(path), "cpu", {}, odd);
    FAIL() << "a 0-frame window was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos) << e.what();
  }
  try {
    voices::PiperStreamer s(Model::from_graph(zoo::seed_flow_graph()), "cpu", {});
    FAIL() << "the embedded flow was accepted as a voice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a Piper voice"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockstep
