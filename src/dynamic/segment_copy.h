// The run-time shape stage's copy of a graph's not-yet-run part (a segment before probing), and
// copies made ahead on another thread: at a new length the copy is the same but for the values
// the run knows, so a miss takes a copy made after the last one and fills those in, instead of
// copying ~1,600 nodes and ~3,000 values while the caller waits (2-3 ms on a voice's encoder).
#pragma once

#include <future>
#include <vector>

#include "dynamic/predict.h"
#include "ir/graph.h"

namespace lockstep::dynamic {

struct SegmentCopy {
  ir::Graph graph;                      // not-yet-run nodes and the values they and the outputs refer to
  std::vector<ir::ValueId> source_id;   // graph's value id -> the source graph's
  std::vector<ir::ValueId> local;       // the source graph's value id -> graph's (kNoValue: not copied)
  std::vector<char> known;              // per graph value: the run knows it (dtype, shape, contents to fill in)
  std::vector<size_t> left_out;         // source nodes downstream of a host node that has not run
  std::vector<int> origin;              // graph node -> source node
  std::vector<Prediction> predicted;    // per graph node
};

// What decides a copy: the source nodes already run, the source values the run knows, whether
// predictions are taken.
struct CopyKey {
  std::vector<char> done, known;
  bool predict = false;
  bool operator==(const CopyKey&) const = default;
};

// The copy for `key`. Known values get their name and source constant only (the caller sets
// dtype, shape and contents from the run); nodes downstream of a data-dependent node that waits
// for the host are left out. `predictions` per source node (empty: none).
SegmentCopy copy_segment(const ir::Graph& source, const std::vector<Prediction>& predictions, const CopyKey& key);

// Copies made ahead, one per key met lately (at most `slots`): take() hands over the one for its
// key (waiting if it is still being made) or makes it here, then starts the next for that key on
// another thread. `source` and `predictions` must outlive this.
class CopiesAhead {
 public:
  CopiesAhead(const ir::Graph& source, const std::vector<Prediction>& predictions, bool enabled, size_t slots = 8)
      : source_(source), predictions_(predictions), enabled_(enabled), slots_(slots) {}
  ~CopiesAhead();  // waits for copies still being made
  SegmentCopy take(const CopyKey& key);
  int made_ahead() const { return made_ahead_; }  // takes served by a copy made ahead

 private:
  struct Slot {
    CopyKey key;
    std::future<SegmentCopy> copy;
  };
  const ir::Graph& source_;
  const std::vector<Prediction>& predictions_;
  bool enabled_;
  size_t slots_;
  std::vector<Slot> ahead_;  // most recently used last
  int made_ahead_ = 0;
};

}  // namespace lockstep::dynamic
