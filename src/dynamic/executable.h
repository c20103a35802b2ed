// The run-time shape stage: how a model whose sizes are only known at run time (symbolic input
// dims, NonZero's count, a frame count read from predicted durations) runs on any backend.
// The graph is cut at each data-dependent point into segments; each segment is specialised to the
// concrete shapes (and shape-deciding values) it meets, put through the normal pass pipeline,
// compiled by the backend and cached under that exact key (docs/dynamic-shapes.md).
#pragma once

#include <cstdint>
#include <memory>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::dynamic {

// True when `graph`, with options.input_shapes bound, is not one static program: an input dim
// stays symbolic, or some size depends on values (NonZero, a Range bound computed at run time).
bool needs_run_time_shapes(const ir::Graph& graph, const Options& options);

// Bounds of one executable's segment cache (least recently used entries go first).
struct CacheLimits {
  int max_entries = 64;
  int64_t max_bytes = int64_t{4} << 30;  // planned arena bytes of the cached segments
};

struct Stats {
  int64_t runs = 0;
  int64_t segments_compiled = 0;  // cache misses, over the executable's life
  int64_t copies_made_ahead = 0;  // misses that took a segment copy made ahead (segment_copy.h)
  int64_t segment_hits = 0;
  int64_t evictions = 0;
  int last_run_segments = 0;      // compiled segments the last run went through
  int last_run_host_nodes = 0;    // data-dependent nodes it ran between them
  int last_run_misses = 0;
  // Bytes the last run handed to its compiled segments and got back from them: on a device
  // backend (cuda, vulkan) these are its host<->device copies, and each segment ends in one host
  // synchronisation (docs/dynamic-shapes.md "What crosses to the host").
  int64_t last_run_bytes_in = 0;
  int64_t last_run_bytes_out = 0;
  // Values a segment left in device memory for a later one (Executable::run_resident: what no
  // host node, parameter or graph output reads), the segments that handed the host anything (on
  // cuda: the run's host synchronisations), and values the host still had to fetch back (0 on
  // the voices: host_reader_ in executable.cpp foresees every host read).
  int last_run_values_on_device = 0;
  int last_run_host_reads = 0;
  int last_run_downloads = 0;
  // Predicted selections (dynamic/predict.h): masks the last run checked, and runs over the
  // executable's life whose mask disagreed and redid a segment without predictions.
  int last_run_predictions = 0;
  int last_run_mispredictions = 0;
  int64_t mispredictions = 0;
  // Where the last run's time went: inside the segments' Executable::run (copies, kernels and
  // the synchronisation included) and in the host nodes; the rest is keys, lookups and copies.
  double last_run_segments_ms = 0;
  double last_run_host_nodes_ms = 0;
  double last_run_device_ms = 0;  // the segments' kernels alone, where the backend times them (cuda)
  double last_run_compile_ms = 0;  // time the last run spent specialising and compiling
  int cached_entries = 0;
  int64_t cached_bytes = 0;
  // The host scratch every cached cpu segment shares (core/host_scratch.h): the largest arena and
  // workspace any of them asked for, i.e. what is resident for them, not their sum.
  int64_t scratch_arena_bytes = 0;
  int64_t scratch_workspace_bytes = 0;
};

// An Executable over `graph` (imported, not prepared) that specialises per call for `backend`.
std::unique_ptr<Executable> compile_dynamic(const ir::Graph& graph, const Backend& backend, const Options& options,
                                            CacheLimits limits = {});

// The stage's counters when `exe` came from compile_dynamic, else nullptr.
const Stats* stats(const Executable& exe);

// The default cap on what a run-time size may ask for when Options::max_memory_bytes is 0: half
// of the machine's physical memory (a data-dependent size never reaches the allocator above it).
int64_t default_memory_cap();

}  // namespace lockstep::dynamic
