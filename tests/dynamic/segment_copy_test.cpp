// Segment copies made ahead on another thread (dynamic/segment_copy.h). Oracles: the same runs
// with every copy made on the spot (LOCKSTEP_SEGMENT_COPY_AHEAD=0), and copy_segment itself.
#include "support/paths.h"
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cpu/backend.h"
#include "core/hash.h"
#include "core/npy.h"
#include "dynamic/executable.h"
#include "dynamic/segment_copy.h"
#include "lockstep/lockstep.h"

namespace lockstep::dynamic {
namespace {

const std::string kArch = lockstep_test::source_dir() + "/tests/fixtures/piper_arch/piper_arch_s";

std::vector<Tensor> arch_inputs(int speakers, int phonemes, bool noise) {
  auto data = read_npz(kArch + std::to_string(speakers) + "_n" + std::to_string(phonemes) + ".npz");
  std::vector<Tensor> in = {data.at("input"), data.at("input_lengths"), data.at("scales")};
  if (noise) in[2] = Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f});
  if (speakers > 1) in.push_back(data.at("sid"));
  return in;
}

// New lengths, a length met before, noise off and on, one and four speakers: the same audio
// whether the misses took copies made ahead or copied on the spot.
TEST(SegmentCopies, MadeAheadGiveTheBitsOfCopiesMadeOnTheSpot) {
  for (int speakers : {1, 4}) {
    Model model = Model::load(kArch + std::to_string(speakers) + ".onnx");
    auto ahead = compile_dynamic(model.graph(), cpu::backend(), Options{});
    ::setenv("LOCKSTEP_SEGMENT_COPY_AHEAD", "0", 1);
    auto spot = compile_dynamic(model.graph(), cpu::backend(), Options{});
    ::unsetenv("LOCKSTEP_SEGMENT_COPY_AHEAD");
    RunOptions seed7;
    seed7.seed = 7;
    for (bool noise : {false, true})
      for (int n : {31, 9, 77, 31}) {
        SCOPED_TRACE(std::to_string(speakers) + " speakers, " + std::to_string(n) + " phonemes, noise " + (noise ? "on" : "off"));
        const Tensor a = ahead->run(arch_inputs(speakers, n, noise), seed7).at(0);
        const Tensor b = spot->run(arch_inputs(speakers, n, noise), seed7).at(0);
        EXPECT_EQ(sha256_hex(a), sha256_hex(b));
      }
    const Stats& sa = *stats(*ahead);
    const Stats& ss = *stats(*spot);
    EXPECT_EQ(sa.segments_compiled, ss.segments_compiled);
    EXPECT_GT(sa.copies_made_ahead, 0) << "no miss took a copy made ahead";
    EXPECT_LT(sa.copies_made_ahead, sa.segments_compiled) << "the first miss of each key has nothing made ahead";
    EXPECT_EQ(ss.copies_made_ahead, 0);
  }
}

bool same_structure(const SegmentCopy& a, const SegmentCopy& b) {
  if (a.graph.nodes.size() != b.graph.nodes.size() || a.graph.values.size() != b.graph.values.size()) return false;
  for (size_t n = 0; n < a.graph.nodes.size(); ++n)
    if (a.graph.nodes[n].name != b.graph.nodes[n].name || a.graph.nodes[n].inputs != b.graph.nodes[n].inputs) return false;
  return a.source_id == b.source_id && a.known == b.known && a.left_out == b.left_out && a.origin == b.origin &&
         a.predicted == b.predicted;
}

// A copy made ahead goes only to a miss of its own key: other done nodes, known values or
// prediction setting get a copy made on the spot, which is copy_segment's for that key.
TEST(SegmentCopies, AKeysCopyGoesToItsOwnKeyOnly) {
  Model model = Model::load(kArch + "1.onnx");
  const ir::Graph& g = model.graph();
  const std::vector<Prediction> predictions = predict_selections(g);
  ASSERT_TRUE(std::any_of(predictions.begin(), predictions.end(), [](Prediction p) { return p != Prediction::None; }));
  CopyKey fresh{std::vector<char>(g.nodes.size(), 0), std::vector<char>(g.values.size(), 0), true};
  for (ir::ValueId v : g.inputs) fresh.known[static_cast<size_t>(v)] = 1;
  CopyKey unpredicted = fresh;
  unpredicted.predict = false;
  CopyKey later = fresh;
  later.done[0] = 1;

  CopiesAhead copies(g, predictions, true, 2);
  const SegmentCopy first = copies.take(fresh);
  EXPECT_EQ(copies.made_ahead(), 0);
  EXPECT_TRUE(same_structure(first, copy_segment(g, predictions, fresh)));
  const SegmentCopy other = copies.take(unpredicted);
  EXPECT_EQ(copies.made_ahead(), 0) << "the predicted key's copy went to the unpredicted key";
  EXPECT_TRUE(same_structure(other, copy_segment(g, predictions, unpredicted)));
  EXPECT_FALSE(same_structure(other, first));
  const SegmentCopy again = copies.take(fresh);
  EXPECT_EQ(copies.made_ahead(), 1);
  EXPECT_TRUE(same_structure(again, first));
  const SegmentCopy third = copies.take(later);  // a third key: the oldest slot goes (two slots)
  EXPECT_EQ(copies.made_ahead(), 1);
  EXPECT_EQ(third.graph.nodes.size() + 1, first.graph.nodes.size());
  copies.take(fresh);
  EXPECT_EQ(copies.made_ahead(), 2);  // made again after the last take of its key
}

// Off (LOCKSTEP_SEGMENT_COPY_AHEAD=0's setting): nothing is made ahead.
TEST(SegmentCopies, OffMakesNothingAhead) {
  Model model = Model::load(kArch + "1.onnx");
  const ir::Graph& g = model.graph();
  const std::vector<Prediction> none;
  CopyKey fresh{std::vector<char>(g.nodes.size(), 0), std::vector<char>(g.values.size(), 0), false};
  CopiesAhead copies(g, none, false);
  copies.take(fresh);
  copies.take(fresh);
  EXPECT_EQ(copies.made_ahead(), 0);
}

}  // namespace
}  // namespace lockstep::dynamic
