// Batches of a Piper voice (issue 47, docs/piper.md "Batches"): N utterances of different lengths
// in one call, each computed within its own boundaries (a ragged batch). The graph as exported
// lets padded frames leak into valid ones (its decoder has no mask), so a literal padded batch
// changes the shorter utterances' last samples; here no padded position ever enters an
// utterance's arithmetic: each row is cut to its input_lengths and run at its own length, its
// noise drawn from its own seed. So an utterance's audio is bit-identical to its batch-1 call with
// the same seed, whatever its companions, its row and the batch size (tested).
//
// Throughput comes from lanes: on cpu (and the reference) each lane is the voice compiled for one
// thread, and the lanes take the batch's utterances longest first, one each at a time — a core per
// utterance instead of every core on each in turn, with no barrier between them. The kernels a
// voice's convs run on from 32 channels give bits that do not depend on the thread count, so a lane
// gives the batch-1 bits; oneDNN's, under 32 channels, may not on AVX-512 (docs/piper.md "Batches"). Run-time shapes are
// specialised per utterance length, exactly as at batch 1 (no length buckets: a bucket would pad).
// cuda defaults to 4 lanes (each an executable with its own stream: the host work of one utterance
// overlaps the device work of others), vulkan to one (docs/piper.md "Batches").
//
// Each lane specialises its own segments, so a free lane takes, longest first, an utterance of a
// length it has run before (its segment cache holds it), else one of a length no lane has run,
// else, when another lane has a queue of its lengths waiting, the shortest of them (compiling it).
// Before, lanes took rows in turn, so a batch run again met most of its lengths on a lane that had
// not compiled them: on an H100 2 and 4 lanes gave 0.55x and 0.41x one lane's clips/s.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "lockstep/lockstep.h"

namespace lockstep::voices {

// One utterance's outcome: the voice's outputs as its batch-1 call returns them (audio
// [1, 1, samples], then any further outputs), or why it failed (the others still ran).
struct BatchResult {
  std::vector<Tensor> outputs;
  std::string error;
};

// Rows [first, first + count) of a tensor whose first dimension is the batch, each cut to its first
// `width` elements of the second dimension when width >= 0 (a row's phonemes before the padding).
Tensor rows_of(const Tensor& t, int64_t first, int64_t count, int64_t width = -1);

// A padded batch's rows as batch-1 calls, in the voice's input order: `input` [N, T] cut to
// input_lengths[b]; `scales` [3] for every row or [N, 3] one per row; `sid` [N] and
// `speaker_embedding` [N, channels] (voices::with_speaker_embedding_input) one per row.
// Throws Error(InvalidArgument) when the batch itself is malformed (ranks, sizes, N = 0); a row
// whose length is outside [1, T] becomes an error string in `row_errors` (its inputs empty).
std::vector<std::vector<Tensor>> split_batch(const ir::Graph& voice, const std::vector<Tensor>& inputs,
                                             std::vector<std::string>* row_errors);

// Which row lane `lane` of the batch's `lanes` takes next: `lengths` are the rows' phoneme counts,
// longest first; `ran_on[length][j]` is 1 when lane j has run the length. The first row not `taken`
// that this lane has run, else the first that no lane of the batch has run, else the shortest row
// of the lane with the most rows waiting for it when that is more than `steal_after`; else
// lengths.size() (none: this lane is done, the rows left wait for the lanes that have run them).
// Rows before `from` are taken (not looked at).
size_t pick_row(const std::vector<int64_t>& lengths, const std::vector<char>& taken,
                const std::unordered_map<int64_t, std::vector<char>>& ran_on, int lane, int lanes, int steal_after,
                size_t from = 0);

class PiperBatcher {
 public:
  // `lanes` 0: cpu and the reference take Options::threads (0: the CPUs this process may use),
  // cuda 4 (at most the usable CPUs), vulkan 1. Lanes are compiled when a batch first needs them. Throws when the model is
  // not a Piper voice.
  PiperBatcher(const Model& voice, std::string_view backend, const Options& options, int lanes = 0);

  // Runs every row of the padded batch (see split_batch) with noise seeded by seeds[b] (one seed:
  // every row's; none: 0). One result per row, in row order. One batch at a time per batcher.
  std::vector<BatchResult> run(const std::vector<Tensor>& inputs, const std::vector<uint64_t>& seeds);

  int lanes() const { return lanes_; }
  // Segments the lanes (and the one-utterance executable) have compiled so far, summed (run-time
  // shape misses; 0 for a model without run-time shapes).
  int64_t segments_compiled() const;

 private:
  Executable& lane(int i);

  Model voice_;
  std::string backend_;
  Options options_, lane_options_;
  int lanes_ = 1;
  std::mutex mutex_;  // one batch at a time
  std::vector<std::unique_ptr<Executable>> compiled_;
  // A batch with one utterance to run: the voice at every thread, as its batch-1 call (compiled
  // when first needed; the same bits as a lane).
  std::unique_ptr<Executable> whole_;
  // Per phoneme count, which lanes have run it (1 per lane); cleared past kMaxLengths entries.
  std::unordered_map<int64_t, std::vector<char>> ran_on_;
};

}  // namespace lockstep::voices
