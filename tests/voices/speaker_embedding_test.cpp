// A multi-speaker voice's speaker lookup as an input (voices::with_speaker_embedding_input) on the
// 4-speaker Piper-architecture fixture: a speaker's own table row gives that speaker's bits through
// sid, for each speaker, alone and in a ragged batch; a vector between two speakers gives a voice
// unlike either; a voice without a lookup is refused naming why.
#include <gtest/gtest.h>

#include <cstring>

#include "lockstep/lockstep.h"
#include "support/paths.h"
#include "support/voice.h"
#include "voices/piper.h"
#include "voices/piper_batch.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

const std::string kMulti = lockstep_test::source_dir() + "/tests/fixtures/piper_arch/piper_arch_s4.onnx";

std::vector<Tensor> with_sid(std::vector<Tensor> in, int64_t sid) {
  in.push_back(Tensor::from_vector<int64_t>({1}, {sid}));
  return in;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(SpeakerEmbedding, ATableRowGivesThatSpeakersBitsAndAMixAnotherVoice) {
  const Model voice = Model::load(kMulti);
  const Tensor table = voices::speaker_embeddings(voice);
  ASSERT_TRUE(table.defined());
  ASSERT_EQ(table.shape(), (Shape{4, 32}));
  const Model mixable = voices::with_speaker_embedding_input(voice);
  ASSERT_EQ(mixable.graph().inputs.size(), 4u);
  EXPECT_EQ(mixable.graph().value(mixable.graph().inputs[3]).name, "speaker_embedding");
  Options options;
  options.threads = 2;
  auto by_sid = compile(voice, "cpu", options);
  auto by_vector = compile(mixable, "cpu", options);
  const std::vector<Tensor> in = test::voice_inputs(test::sentence_ids(0), 0.667f, 1.0f, 0.8f);
  RunOptions run;
  run.seed = 5;
  std::vector<Tensor> audio;
  for (int64_t s = 0; s < 4; ++s) {
    const Tensor want = by_sid->run(with_sid(in, s), run).at(0);
    std::vector<float> row(table.data<float>() + s * 32, table.data<float>() + (s + 1) * 32);
    std::vector<Tensor> fed = in;
    fed.push_back(Tensor::from_vector<float>({1, 32}, row));
    const Tensor got = by_vector->run(fed, run).at(0);
    EXPECT_TRUE(same_bits(got, want)) << "speaker " << s << ": its table row is not its sid's bits";
    audio.push_back(want);
  }
  std::vector<float> mid(32);
  for (int i = 0; i < 32; ++i) mid[static_cast<size_t>(i)] = 0.5f * (table.data<float>()[i] + table.data<float>()[32 + i]);
  std::vector<Tensor> fed = in;
  fed.push_back(Tensor::from_vector<float>({1, 32}, mid));
  const Tensor between = by_vector->run(fed, run).at(0);
  EXPECT_FALSE(same_bits(between, audio[0]));
  EXPECT_FALSE(same_bits(between, audio[1]));
  // In a ragged batch: speakers 3, 1 and the mix, each its own bits alone at a lane's thread count
  // (the batcher's cpu lanes run one thread each). This fixture's 8- and 16-channel convs run on
  // oneDNN, whose AVX-512 kernels give other bits at other thread counts (docs/cpu.md
  // "Determinism"); the real voices' convs (>= 32 channels, Winograd) do not.
  Options one = options;
  one.threads = 1;
  auto lane_alone = compile(mixable, "cpu", one);
  auto alone = [&](const std::vector<float>& vector) {
    std::vector<Tensor> row = in;
    row.push_back(Tensor::from_vector<float>({1, 32}, vector));
    return lane_alone->run(row, run).at(0).clone();
  };
  const Tensor want3 = alone(std::vector<float>(table.data<float>() + 3 * 32, table.data<float>() + 4 * 32));
  const Tensor want1 = alone(std::vector<float>(table.data<float>() + 32, table.data<float>() + 64));
  const Tensor want_mix = alone(mid);
  const std::vector<int64_t> ids = test::sentence_ids(0);
  const auto t = static_cast<int64_t>(ids.size());
  std::vector<int64_t> padded;
  for (int r = 0; r < 3; ++r) padded.insert(padded.end(), ids.begin(), ids.end());
  std::vector<float> rows(table.data<float>() + 3 * 32, table.data<float>() + 4 * 32);
  rows.insert(rows.end(), table.data<float>() + 32, table.data<float>() + 64);
  rows.insert(rows.end(), mid.begin(), mid.end());
  voices::PiperBatcher batcher(mixable, "cpu", options);
  std::vector<voices::BatchResult> got = batcher.run(
      {Tensor::from_vector<int64_t>({3, t}, padded), Tensor::from_vector<int64_t>({3}, {t, t, t}), in[2],
       Tensor::from_vector<float>({3, 32}, rows)},
      {5});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(same_bits(got[0].outputs.at(0), want3)) << got[0].error;
  EXPECT_TRUE(same_bits(got[1].outputs.at(0), want1)) << got[1].error;
  EXPECT_TRUE(same_bits(got[2].outputs.at(0), want_mix)) << got[2].error;
}

TEST(SpeakerEmbedding, AVoiceWithoutALookupIsRefused) {
  EXPECT_FALSE(voices::speaker_embeddings(Model::from_graph(zoo::seed_flow_graph())).defined());
  try {
    voices::with_speaker_embedding_input(Model::from_graph(zoo::seed_flow_graph()));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no speaker lookup"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockstep
