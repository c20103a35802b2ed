// Batches of a Piper voice (src/voices/piper_batch.h) on the real voice: random batches (sizes
// 1-16, rows shuffled, 5-200 phonemes drawn from the committed sentences' ids, each row its own
// seed and scales) give every utterance the bits of its batch-1 call — the voice compiled whole at
// the default threads, run on that row alone — on cpu and the reference; a row that cannot run is
// that row's error while the others run; a malformed batch is refused naming the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include "lockstep/lockstep.h"
#include "support/voice.h"
#include "voices/piper_batch.h"
#include "support/sanitizers.h"

namespace lockstep {
namespace {

// Under ASan (~40x slower on the voice) the random batch is 6 rows of up to 60 phonemes: the lanes'
// memory is what that build checks; the Release build runs the full sizes.
#ifdef LOCKSTEP_ASAN
constexpr int kRows = 6, kLongest = 60;
#else
constexpr int kRows = 16, kLongest = 200;
#endif

struct Row {
  std::vector<int64_t> ids;
  float scales[3];
  uint64_t seed;
};

// Rows of random phonemes: the ids the committed sentences use, begin (1) and end (2) markers kept.
std::vector<Row> random_rows(std::mt19937_64& rng, int count, int shortest, int longest) {
  std::set<int64_t> seen;
  for (size_t s = 0; s < 6; ++s)
    for (int64_t id : test::sentence_ids(s)) seen.insert(id);
  seen.erase(1);
  seen.erase(2);
  const std::vector<int64_t> ids(seen.begin(), seen.end());
  std::vector<Row> rows;
  for (int i = 0; i < count; ++i) {
    Row r;
    const int n = std::uniform_int_distribution<int>(shortest, longest)(rng);
    r.ids.push_back(1);
    for (int k = 1; k + 1 < n; ++k) r.ids.push_back(ids[rng() % ids.size()]);
    r.ids.push_back(2);
    const bool noise = rng() % 2;
    r.scales[0] = noise ? 0.667f : 0.0f;
    r.scales[1] = std::uniform_real_distribution<float>(0.8f, 1.2f)(rng);
    r.scales[2] = noise ? 0.8f : 0.0f;
    r.seed = rng() % 1000;
    rows.push_back(r);
  }
  return rows;
}

// The padded batch (padding 0, Piper's pad id) with one scales row per utterance.
std::vector<Tensor> padded(const std::vector<Row>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  size_t width = 0;
  for (const Row& r : rows) width = std::max(width, r.ids.size());
  std::vector<int64_t> ids(rows.size() * width, 0), lengths;
  std::vector<float> scales;
  for (size_t b = 0; b < rows.size(); ++b) {
    std::copy(rows[b].ids.begin(), rows[b].ids.end(), ids.begin() + static_cast<std::ptrdiff_t>(b * width));
    lengths.push_back(static_cast<int64_t>(rows[b].ids.size()));
    scales.insert(scales.end(), rows[b].scales, rows[b].scales + 3);
  }
  return {Tensor::from_vector<int64_t>({n, static_cast<int64_t>(width)}, ids), Tensor::from_vector<int64_t>({n}, lengths),
          Tensor::from_vector<float>({n, 3}, scales)};
}

std::vector<uint64_t> seeds_of(const std::vector<Row>& rows) {
  std::vector<uint64_t> seeds;
  for (const Row& r : rows) seeds.push_back(r.seed);
  return seeds;
}

// Every row's audio bit for bit against the row run alone by `single` (batch 1, same seed).
void expect_batch_one_bits(Executable& single, voices::PiperBatcher& batcher, const std::vector<Row>& rows,
                           const std::string& what) {
  std::vector<voices::BatchResult> got = batcher.run(padded(rows), seeds_of(rows));
  ASSERT_EQ(got.size(), rows.size());
  for (size_t b = 0; b < rows.size(); ++b) {
    ASSERT_EQ(got[b].error, "") << what << ", row " << b;
    RunOptions run;
    run.seed = rows[b].seed;
    const Tensor expected =
        single.run(test::voice_inputs(rows[b].ids, rows[b].scales[0], rows[b].scales[1], rows[b].scales[2]), run).at(0);
    const Tensor& audio = got[b].outputs.at(0);
    ASSERT_EQ(audio.shape(), expected.shape()) << what << ", row " << b << " (" << rows[b].ids.size() << " phonemes)";
    EXPECT_EQ(std::memcmp(audio.raw(), expected.raw(), expected.nbytes()), 0)
        << what << ", row " << b << " of " << rows.size() << " (" << rows[b].ids.size() << " phonemes, seed "
        << rows[b].seed << "): not its batch-1 bits";
  }
}

TEST(PiperBatch, EveryUtteranceGetsItsBatchOneBitsOnCpu) {
  const std::string path = test::voice_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no Piper voice at " << path << " (scripts/fetch-voice.sh)";
  Model voice = Model::load(path);
  auto single = compile(voice, "cpu");  // the default: every usable CPU on one utterance
  voices::PiperBatcher two_lanes(voice, "cpu", {}, 2), three_lanes(voice, "cpu", {}, 3);
  std::mt19937_64 rng(47);
  std::vector<Row> rows = random_rows(rng, kRows, 5, kLongest);
  expect_batch_one_bits(*single, two_lanes, rows, std::to_string(kRows) + " rows, 2 lanes");
  // The same utterances in other companies: shuffled, a prefix, one alone, on 3 lanes.
  std::shuffle(rows.begin(), rows.end(), rng);
  expect_batch_one_bits(*single, three_lanes, std::vector<Row>(rows.begin(), rows.begin() + kRows / 2 + 1),
                        "a shuffled part, 3 lanes");
  expect_batch_one_bits(*single, two_lanes, std::vector<Row>(rows.begin() + 3, rows.begin() + 4), "1 row, 2 lanes");
}

TEST(PiperBatch, EveryUtteranceGetsItsBatchOneBitsOnTheReference) {
  const std::string path = test::voice_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no Piper voice at " << path;
  Model voice = Model::load(path);
  auto single = compile(voice, "reference");
  voices::PiperBatcher batcher(voice, "reference", {}, 2);
  std::mt19937_64 rng(48);
  expect_batch_one_bits(*single, batcher, random_rows(rng, 3, 5, 24), "3 short rows, 2 lanes");
}

// A free lane takes a length it has run (its segments are cached), then one no lane has run, then
// another lane's when that lane has more than `steal_after` rows waiting; every row once.
TEST(PiperBatch, ALaneTakesTheLengthsItHasRunFirst) {
  const std::vector<int64_t> lengths = {90, 70, 50, 30, 20};  // longest first, as PiperBatcher orders them
  std::unordered_map<int64_t, std::vector<char>> ran_on = {{70, {0, 1}}, {30, {0, 1}}, {50, {1, 0}}, {20, {0, 0, 1}}};
  std::vector<char> taken(5, 0);
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 1, 2, 1), 1u);  // 70: lane 1 has run it, before the new 90
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 0, 2, 1), 2u);  // 50: lane 0's own
  taken[2] = 1;
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 0, 2, 1), 0u);  // no own row left: 90, which no lane has run
  taken[0] = 1;
  // 20 was run by lane 2, which this batch of 2 lanes does not use: a row no lane here has run.
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 0, 2, 1), 4u);
  taken[4] = 1;
  // 70 and 30 wait for lane 1: 2 rows, more than 1, so lane 0 takes the shorter; not over 2.
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 0, 2, 1), 3u);
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 0, 2, 2), 5u);
  taken[1] = taken[3] = 1;
  EXPECT_EQ(voices::pick_row(lengths, taken, ran_on, 1, 2, 1), 5u);  // none left
  EXPECT_EQ(voices::pick_row(lengths, std::vector<char>(5, 0), {}, 3, 4, 1), 0u);  // nothing run yet: the longest
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// voices::rows_of: a run of rows, cut to a width, of any rank; out of range is refused naming the shape.
TEST(PiperBatch, RowsOfCutsRowsAndRefusesWhatIsNotThere) {
  const Tensor t = Tensor::from_vector<int64_t>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor cut = voices::rows_of(t, 1, 2, 2);
  ASSERT_EQ(cut.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<int64_t>(cut), (std::vector<int64_t>{4, 5, 7, 8}));
  const Tensor cube = Tensor::from_vector<float>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(values_of<float>(voices::rows_of(cube, 1, 1)), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(values_of<float>(voices::rows_of(cube, 0, 2, 1)), (std::vector<float>{0, 1, 4, 5}));
  for (auto [first, count, width] : {std::tuple{2, 2, -1}, std::tuple{0, 1, 4}, std::tuple{-1, 1, -1}}) {
    try {
      voices::rows_of(t, first, count, width);
      ADD_FAILURE() << "rows_of(" << first << ", " << count << ", " << width << ") accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[3,3]"), std::string::npos) << e.what();
    }
  }
}

// A length meets the lane that compiled it: a batch run again compiles nothing, and a batch of one
// known and one new length compiles only the new one's segments (taking the rows longest first
// regardless of lanes, the first free lane took the known length and compiled it again).
TEST(PiperBatch, ALengthRunsOnTheLaneThatCompiledIt) {
  const std::string path = test::voice_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no Piper voice at " << path;
  Model voice = Model::load(path);
  voices::PiperBatcher batcher(voice, "cpu", {}, 2);
  std::mt19937_64 rng(50);
  std::vector<Row> x = random_rows(rng, 1, 50, 50), y = random_rows(rng, 1, 35, 35), w = random_rows(rng, 1, 20, 20);
  auto run = [&](std::vector<Row> rows) {
    for (const voices::BatchResult& r : batcher.run(padded(rows), seeds_of(rows))) EXPECT_EQ(r.error, "");
    return batcher.segments_compiled();
  };
  const int64_t two_lengths = run({x[0], y[0]});
  ASSERT_GT(two_lengths, 0);
  ASSERT_EQ(two_lengths % 2, 0) << "each new length compiles the same segments";
  EXPECT_EQ(run({y[0], x[0]}), two_lengths) << "the same lengths again compiled segments";
  EXPECT_EQ(run({y[0], w[0]}), two_lengths + two_lengths / 2) << "more than the new length's segments";
  EXPECT_EQ(run({w[0], y[0]}), two_lengths + two_lengths / 2);
}

TEST(PiperBatch, ARowThatCannotRunIsItsOwnErrorAndAMalformedBatchIsRefused) {
  const std::string path = test::voice_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no Piper voice at " << path;
  Model voice = Model::load(path);
  voices::PiperBatcher batcher(voice, "cpu", {}, 2);
  std::mt19937_64 rng(49);
  std::vector<Row> rows = random_rows(rng, 4, 5, 30);
  rows[1].scales[1] = std::nanf("");  // length_scale NaN
  std::vector<Tensor> in = padded(rows);
  in[1].data<int64_t>()[2] = 0;  // row 2: no phonemes
  std::vector<voices::BatchResult> got = batcher.run(in, seeds_of(rows));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_NE(got[1].error.find("length_scale"), std::string::npos) << got[1].error;
  EXPECT_NE(got[2].error.find("input_lengths'[2] is 0"), std::string::npos) << got[2].error;
  for (size_t b : {0u, 3u}) {
    EXPECT_EQ(got[b].error, "") << "row " << b;
    EXPECT_GT(got[b].outputs.at(0).numel(), 0) << "row " << b;
  }
  auto refused = [&](std::vector<Tensor> batch, std::vector<uint64_t> seeds, const std::string& says) {
    try {
      batcher.run(batch, seeds);
      ADD_FAILURE() << "accepted; expected an error saying " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(padded(rows), {1, 2}, "2 seeds for 4 rows");
  std::vector<Tensor> bad = padded(rows);
  bad[2] = Tensor::from_vector<float>({2, 3}, {0, 1, 0, 0, 1, 0});
  refused(bad, {}, "input 'scales' must be [3] or [4, 3]");
  bad = padded(rows);
  bad[1] = Tensor::from_vector<int64_t>({3}, {5, 5, 5});
  refused(bad, {}, "input 'input_lengths' must be int64 [4]");
}

}  // namespace
}  // namespace lockstep
