#include "diff/determinism.h"

#include <memory>

#include "core/hash.h"

namespace lockstep::diff {

std::vector<std::string> output_hashes(const std::vector<Tensor>& outputs) {
  std::vector<std::string> out;
  for (const Tensor& t : outputs) out.push_back(t.defined() ? sha256_hex(t) : "");
  return out;
}

std::vector<DeterminismRun> in_process_sequence(const Model& a, const std::vector<Tensor>& inputs,
                                                const std::string& backend, const Options& options,
                                                const std::vector<OtherGraph>& others) {
  std::vector<DeterminismRun> runs;
  std::vector<std::unique_ptr<Executable>> alive;  // every executable stays alive to the end
  auto attempt = [&](const std::string& mode, bool of_a, auto&& body) {
    DeterminismRun r{mode, {}, "", of_a};
    try {
      r.sha256 = output_hashes(body());
    } catch (const Error& e) {
      r.error = e.what();
    }
    runs.push_back(std::move(r));
  };
  Executable* a1 = nullptr;
  attempt("A1", true, [&] {
    alive.push_back(compile(a, backend, options));
    a1 = alive.back().get();
    return a1->run(inputs);
  });
  attempt("A1 again", true, [&] {
    if (!a1) throw Error(ErrorCode::Internal, "A1 did not compile");
    return a1->run(inputs);
  });
  for (const auto& other : others)
    attempt(other.label, false, [&] {
      Options o = options;
      o.input_shapes.clear();
      o.observe.clear();
      alive.push_back(compile(other.model, backend, o));
      return alive.back()->run(other.inputs);
    });
  attempt("A2", true, [&] {
    alive.push_back(compile(a, backend, options));
    return alive.back()->run(inputs);
  });
  attempt("A1 after A2", true, [&] {
    if (!a1) throw Error(ErrorCode::Internal, "A1 did not compile");
    return a1->run(inputs);
  });
  return runs;
}

void find_differences(DeterminismReport& report) {
  report.differences.clear();
  const DeterminismRun* first = nullptr;
  for (const auto& r : report.runs) {
    if (!r.of_a) {
      if (!r.error.empty()) report.differences.push_back(r.mode + " (other graph) failed: " + r.error);
      continue;
    }
    if (!r.error.empty()) {
      report.differences.push_back(r.mode + " failed: " + r.error);
      continue;
    }
    if (!first) {
      first = &r;
      continue;
    }
    if (r.sha256.size() != first->sha256.size()) {
      report.differences.push_back(r.mode + " returned " + std::to_string(r.sha256.size()) + " outputs, " + first->mode +
                                   " " + std::to_string(first->sha256.size()));
      continue;
    }
    for (size_t i = 0; i < r.sha256.size(); ++i)
      if (r.sha256[i] != first->sha256[i]) {
        std::string name = i < report.output_names.size() ? report.output_names[i] : "#" + std::to_string(i);
        report.differences.push_back("output " + name + ": SHA-256 of " + r.mode + " differs from " + first->mode);
      }
  }
  if (!first) report.differences.push_back("no run of the model succeeded");
}

}  // namespace lockstep::diff
