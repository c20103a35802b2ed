#include "voices/piper_batch.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>

#include "api/compile_lane.h"
#include "backends/cpu/parallel.h"
#include "dynamic/executable.h"
#include "voices/piper.h"

namespace lockstep::voices {

namespace {

Error bad_batch(const std::string& why) { return Error(ErrorCode::InvalidArgument, "batch: " + why); }

bool host_backend(const std::string& backend) { return backend == "cpu" || backend == "reference"; }

// More phoneme counts than a voice takes in practice: past it the lane map starts afresh.
constexpr size_t kMaxLengths = 4096;

}  // namespace

Tensor rows_of(const Tensor& t, int64_t first, int64_t count, int64_t width) {
  Shape shape = t.shape();
  if (shape.empty() || first < 0 || count < 0 || first + count > shape[0] || (width >= 0 && (shape.size() < 2 || width > shape[1])))
    throw Error(ErrorCode::InvalidArgument, "rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ")" +
                                                (width >= 0 ? " cut to " + std::to_string(width) : std::string()) +
                                                " of a tensor " + shape_str(shape));
  const int64_t row_width = shape.size() > 1 ? shape[1] : 1, inner = t.numel() / std::max<int64_t>(1, shape[0] * row_width);
  shape[0] = count;
  if (width >= 0) shape[1] = width;
  Tensor out(t.dtype(), shape);
  const size_t esize = dtype_size(t.dtype()), row_bytes = static_cast<size_t>(shape.size() > 1 ? shape[1] : 1) * inner * esize;
  for (int64_t b = 0; b < count; ++b)
    std::memcpy(static_cast<std::byte*>(out.raw()) + static_cast<size_t>(b) * row_bytes,
                static_cast<const std::byte*>(t.raw()) + static_cast<size_t>((first + b) * row_width * inner) * esize, row_bytes);
  return out;
}

std::vector<std::vector<Tensor>> split_batch(const ir::Graph& voice, const std::vector<Tensor>& inputs,
                                             std::vector<std::string>* row_errors) {
  if (!is_piper_voice(voice)) throw bad_batch("the model is not a Piper voice (inputs input, input_lengths, scales)");
  if (inputs.size() != voice.inputs.size())
    throw bad_batch(std::to_string(inputs.size()) + " inputs given, the voice takes " +
                    std::to_string(voice.inputs.size()));
  const int in = input_index(voice, "input"), len = input_index(voice, "input_lengths");
  const int sc = input_index(voice, "scales"), sid = input_index(voice, "sid");
  const Tensor& ids = inputs[static_cast<size_t>(in)];
  const Tensor& lengths = inputs[static_cast<size_t>(len)];
  const Tensor& scales = inputs[static_cast<size_t>(sc)];
  if (ids.rank() != 2 || ids.dtype() != DType::Int64)
    throw bad_batch("input 'input' must be int64 [N, phonemes], got " + shape_str(ids.shape()));
  const int64_t n = ids.shape()[0], width = ids.shape()[1];
  if (n < 1) throw bad_batch("input 'input' has no rows");
  if (lengths.rank() != 1 || lengths.numel() != n || lengths.dtype() != DType::Int64)
    throw bad_batch("input 'input_lengths' must be int64 [" + std::to_string(n) + "], got " +
                    shape_str(lengths.shape()));
  const bool per_row_scales = scales.rank() == 2;
  if (!((scales.rank() == 1 && scales.numel() == 3) || (per_row_scales && scales.shape()[0] == n && scales.shape()[1] == 3)))
    throw bad_batch("input 'scales' must be [3] or [" + std::to_string(n) + ", 3], got " + shape_str(scales.shape()));
  if (sid >= 0) {
    const Tensor& s = inputs[static_cast<size_t>(sid)];
    if (s.rank() != 1 || s.numel() != n)
      throw bad_batch("input 'sid' must be [" + std::to_string(n) + "], got " + shape_str(s.shape()));
  }
  if (const int e = input_index(voice, "speaker_embedding"); e >= 0) {  // with_speaker_embedding_input
    const Tensor& s = inputs[static_cast<size_t>(e)];
    if (s.rank() != 2 || s.shape()[0] != n)
      throw bad_batch("input 'speaker_embedding' must be [" + std::to_string(n) + ", channels], got " +
                      shape_str(s.shape()));
  }
  row_errors->assign(static_cast<size_t>(n), "");
  std::vector<std::vector<Tensor>> rows(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    const int64_t keep = lengths.element_as_int(b);
    if (keep < 1 || keep > width) {
      (*row_errors)[static_cast<size_t>(b)] = "input 'input_lengths'[" + std::to_string(b) + "] is " +
                                              std::to_string(keep) + ", outside [1, " + std::to_string(width) +
                                              "] (the padded phoneme count)";
      continue;
    }
    std::vector<Tensor>& row = rows[static_cast<size_t>(b)];
    row.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (static_cast<int>(i) == in) row[i] = rows_of(ids, b, 1, keep);
      else if (static_cast<int>(i) == len) row[i] = Tensor::from_vector<int64_t>({1}, {keep});
      else if (static_cast<int>(i) == sc) row[i] = per_row_scales ? rows_of(scales, b, 1).reshaped({3}) : scales;
      else if (static_cast<int>(i) == sid || voice.value(voice.inputs[i]).name == "speaker_embedding")
        row[i] = rows_of(inputs[i], b, 1);
      else row[i] = inputs[i];  // an input of no batch dimension: every row the same
    }
  }
  return rows;
}

PiperBatcher::PiperBatcher(const Model& voice, std::string_view backend, const Options& options, int lanes)
    : voice_(voice), backend_(backend), options_(options), lane_options_(options) {
  if (!is_piper_voice(voice.graph())) throw bad_batch("the model is not a Piper voice (inputs input, input_lengths, scales)");
  if (lanes < 0) throw bad_batch("lanes must be >= 0, got " + std::to_string(lanes));
  const bool host = host_backend(backend_);
  // cuda: 4 lanes took Piper medium from 150 to 383-391 clips/s on an H100, 8 to 500-615, 12 no
  // further (the device is busy then; device memory flat: bench/RESULTS.md, 2026-12-06); vulkan's
  // lanes are unmeasured.
  if (lanes == 0)
    lanes = host ? (options.threads > 0 ? options.threads : cpu::usable_cpus())
                 : backend_ == "cuda" ? std::min(8, std::max(1, cpu::usable_cpus())) : 1;
  lanes_ = lanes;
  // A lane is one utterance on one thread; the lanes are the batch's parallelism.
  if (host && lanes_ > 1) lane_options_.threads = 1;
  compiled_.resize(static_cast<size_t>(lanes_));
}

Executable& PiperBatcher::lane(int i) {
  auto& slot = compiled_[static_cast<size_t>(i)];
  if (!slot) slot = compile_lane(voice_, backend_, lane_options_, lanes_);
  return *slot;
}

size_t pick_row(const std::vector<int64_t>& lengths, const std::vector<char>& taken,
                const std::unordered_map<int64_t, std::vector<char>>& ran_on, int lane, int lanes, int steal_after,
                size_t from) {
  const size_t none = lengths.size();
  size_t fresh = none;
  std::vector<int> queued(static_cast<size_t>(lanes), 0);  // rows left that each other lane has run
  std::vector<size_t> shortest(static_cast<size_t>(lanes), none);
  for (size_t k = from; k < lengths.size(); ++k) {
    if (taken[k]) continue;
    auto it = ran_on.find(lengths[k]);
    bool owned = false;
    for (int j = 0; it != ran_on.end() && j < lanes && j < static_cast<int>(it->second.size()); ++j) {
      if (!it->second[static_cast<size_t>(j)]) continue;
      if (j == lane) return k;
      owned = true;
      ++queued[static_cast<size_t>(j)];
      shortest[static_cast<size_t>(j)] = k;
    }
    if (!owned && fresh == none) fresh = k;  // no lane of this batch has run it
  }
  if (fresh != none) return fresh;
  const auto busiest = std::max_element(queued.begin(), queued.end()) - queued.begin();
  return queued[static_cast<size_t>(busiest)] > steal_after ? shortest[static_cast<size_t>(busiest)] : none;
}

int64_t PiperBatcher::segments_compiled() const {
  int64_t total = 0;
  for (const auto& exe : compiled_)
    if (exe)
      if (const dynamic::Stats* s = dynamic::stats(*exe)) total += s->segments_compiled;
  if (whole_)
    if (const dynamic::Stats* s = dynamic::stats(*whole_)) total += s->segments_compiled;
  return total;
}

std::vector<BatchResult> PiperBatcher::run(const std::vector<Tensor>& inputs, const std::vector<uint64_t>& seeds) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> row_errors;
  std::vector<std::vector<Tensor>> rows = split_batch(voice_.graph(), inputs, &row_errors);
  const int64_t n = static_cast<int64_t>(rows.size());
  if (seeds.size() > 1 && static_cast<int64_t>(seeds.size()) != n)
    throw bad_batch(std::to_string(seeds.size()) + " seeds for " + std::to_string(n) + " rows");
  std::vector<BatchResult> results(static_cast<size_t>(n));
  std::vector<int64_t> order;  // the rows to run, longest first: the last to start is the shortest
  const int in = input_index(voice_.graph(), "input");
  for (int64_t b = 0; b < n; ++b) {
    if (!row_errors[static_cast<size_t>(b)].empty()) results[static_cast<size_t>(b)].error = row_errors[static_cast<size_t>(b)];
    else order.push_back(b);
  }
  auto length = [&](int64_t b) { return rows[static_cast<size_t>(b)][static_cast<size_t>(in)].shape()[1]; };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return length(a) > length(b); });
  const int used = static_cast<int>(std::min<int64_t>(lanes_, static_cast<int64_t>(order.size())));
  // One utterance with lanes of one thread each: it runs on the voice at every thread instead.
  const bool alone = used == 1 && lane_options_.threads != options_.threads;
  if (alone && !whole_) whole_ = compile(voice_, backend_, options_);
  // Compile the lanes this batch uses first, one after another (compiling is not what the lanes
  // share out, and a failure to compile is the whole batch's error).
  if (!alone)
    for (int i = 0; i < used; ++i) lane(i);
  // Which row a free lane takes next (see the header): `order` is longest first.
  if (ran_on_.size() > kMaxLengths) ran_on_.clear();
  std::mutex pick;
  std::vector<char> taken(order.size(), 0);
  std::vector<int64_t> lengths;
  for (int64_t b : order) lengths.push_back(length(b));
  // A new length costs a host backend's lane a fraction of a call, a GPU's ~5 calls (bench/RESULTS.md):
  // a lane compiles another lane's length only when that lane has more than this many rows waiting.
  const int steal_after = host_backend(backend_) ? 1 : 4;
  size_t first = 0;  // rows before it are all taken (they go roughly in order): not scanned again
  auto next_row = [&](int i) -> int64_t {
    std::lock_guard<std::mutex> guard(pick);
    while (first < taken.size() && taken[first]) ++first;
    const size_t k = pick_row(lengths, taken, ran_on_, i, used, steal_after, first);
    if (k == order.size()) return -1;
    taken[k] = 1;
    if (!alone) {  // the one-utterance executable is not a lane's
      std::vector<char>& lanes = ran_on_[lengths[k]];
      lanes.resize(static_cast<size_t>(lanes_), 0);
      lanes[static_cast<size_t>(i)] = 1;
    }
    return order[k];
  };
  auto work = [&](int i) {
    Executable& exe = alone ? *whole_ : *compiled_[static_cast<size_t>(i)];
    for (int64_t b; (b = next_row(i)) >= 0;) {
      BatchResult& r = results[static_cast<size_t>(b)];
      RunOptions run;
      run.seed = seeds.empty() ? 0 : seeds[seeds.size() == 1 ? 0 : static_cast<size_t>(b)];
      try {
        r.outputs = exe.run(rows[static_cast<size_t>(b)], run);
      } catch (const std::exception& e) {
        r.error = e.what();
      }
      rows[static_cast<size_t>(b)].clear();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < used; ++i) threads.emplace_back(work, i);
  if (used > 0) work(0);
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace lockstep::voices
