// The real Piper voice and the committed sentences, as the voice tests of every backend use them,
// and a probe backend that finds which nodes of a voice's segments a backend would refuse.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lockstep/lockstep.h"

namespace lockstep::test {

// $LOCKSTEP_VOICE, else the voice scripts/fetch-voice.sh puts in .cache/voices/.
std::string voice_path();
// A voice's inputs: input [1, n] = ids, input_lengths [1] = n, scales = (noise, length, noise_w).
std::vector<Tensor> voice_inputs(const std::vector<int64_t>& ids, float noise, float length, float noise_w);
// The phoneme ids of committed sentence `i` (tests/fixtures/piper/sentences.json).
std::vector<int64_t> sentence_ids(size_t i);

// Answers like `asked` (recording each refusal with the node's dtypes and shapes), computes like
// the cpu: run through the run-time shape stage, it lists every node of every segment `asked`
// would refuse, without needing its device.
class RefusalProbe : public Backend {
 public:
  explicit RefusalProbe(const Backend& asked) : asked_(asked) {}
  std::string name() const override { return asked_.name() + "-probe"; }
  bool available(std::string*) const override { return true; }
  std::optional<std::string> unsupported_reason(const ir::Graph& graph, const ir::Node& node) const override;
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override;
  mutable std::map<std::string, int> refusals;  // "Op: reason (dtypes and shapes)" -> count

 private:
  const Backend& asked_;
};

}  // namespace lockstep::test
