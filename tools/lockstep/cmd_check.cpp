// `lockstep check`: every available backend against the float64 reference, at anchor nodes and
// the outputs, in N fresh processes and in one process across compile A / compile B / compile A.
// PASS needs every anchor at cosine >= kAgreeCosine, every output in agreement, and identical
// SHA-256s across the fresh processes and across A1/A2.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/self_exe.h"
#include "backends/vulkan/backend.h"
#include "capture.h"
#include "commands.h"
#include "core/atomic_file.h"
#include "core/environ.h"
#include "core/hash.h"
#include "core/npy.h"
#include "diff/metrics.h"
#include "diff/synth.h"
#include "ir/graph.h"
#include "inputs.h"
#include "progress.h"
#include "table.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

// The other model of the A/B/A sequence: A perturbed with this seed (diff::perturb_weights).
constexpr uint64_t kGraphBSeed = 1;

struct RunRecord {
  std::string mode;
  std::string error;  // non-empty: the run failed
  Capture capture;
};

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/lockstep_check_XXXXXX";
    if (!::mkdtemp(pattern.data())) throw Error(ErrorCode::Io, "cannot create a temporary folder in " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs this executable as `lockstep __worker ...`; its stdout+stderr go to `log`.
int spawn_worker(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  std::string self = self_executable_path();
  argv.push_back(self.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), process_environment());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(ErrorCode::Io, "cannot start a worker process: " + std::string(std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(ErrorCode::Internal, "waitpid failed");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string last_line(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return "";
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

std::string sha(const Tensor& t) { return t.defined() ? sha256_hex(t) : ""; }

}  // namespace

int cmd_check(const CheckArgs& args) {
  if (args.fresh < 1) throw Error(ErrorCode::InvalidArgument, "--fresh must be at least 1");
  const bool embedded = args.model.empty();
  Model model = load_model_or_default(args.model);
  const ir::Graph& graph = model.graph();
  ModelInputs inputs;
  std::string input_origin;
  if (embedded && !has_input_args(args.inputs)) {
    inputs.tensors = zoo::seed_flow_inputs();
    input_origin = "z_p = 0.5*sin(2*pi*(3c+t)/128), y_mask = 1";
  } else {
    inputs = gather_inputs(graph, args.inputs);
    input_origin = inputs.drawn ? "drawn from seed " + std::to_string(args.inputs.seed) + " (uniform[-1,1])" : "files";
  }
  std::vector<Anchor> anchors = choose_anchors(graph, embedded);
  Options options;
  options.threads = args.common.threads;
  options.max_memory_bytes = args.common.max_memory;
  options.f64_accumulate = args.common.f64_accumulate_option();
  options.safe = args.common.safe;
  options.input_shapes = inputs.bind;
  options.precision = args.common.precision;
  // Reduced precision (cuda fast modes): cuda's error is printed, not held to the fp32 bar.
  const bool reduced = options.precision != "fp32";
  auto relaxed = [&](const Backend* b) { return reduced && b->name() == "cuda"; };
  // Anchors stay kernel boundaries so that every one of them is compared (fusion stops there).
  for (const auto& a : anchors) options.observe.push_back(a.name);

  std::vector<const Backend*> backends;
  std::vector<std::pair<std::string, std::string>> unavailable;
  for (const Backend* b : all_backends()) {
    if (b->name() == "reference") continue;
    std::string why;
    if (b->available(&why)) backends.push_back(b);
    else unavailable.emplace_back(b->name(), why);
  }
  if (!args.common.json) {
    std::cout << "model:   " << (embedded ? "embedded default (seed-shaped VITS flow, 174 nodes)" : args.model) << '\n';
    std::cout << "inputs:  " << input_origin << '\n';
    std::cout << "anchors: " << anchors.size() << " ONNX nodes kept as kernel boundaries (fusion stops at them)\n";
    for (const auto& [name, why] : unavailable) std::cout << name << ": not available: " << why << '\n';
    for (const Backend* b : backends)
      if (b->name() == "vulkan") std::cout << "vulkan:  device " << vulkan::device_description() << '\n';
    std::cout.flush();
  }

  Progress progress(1 + static_cast<int>(backends.size()) * (args.fresh + 3));
  progress.step("float64 reference");
  const auto seed = static_cast<uint64_t>(args.inputs.seed);  // --seed: drawn inputs and random ops
  Capture ref = reference_capture(model, options, inputs.tensors, anchors, seed);

  TempDir tmp;
  std::string inputs_npz = tmp.path() + "/inputs.npz", anchors_file = tmp.path() + "/anchors.txt";
  {
    std::map<std::string, Tensor> named;
    for (size_t i = 0; i < graph.inputs.size(); ++i) named[graph.value(graph.inputs[i]).name] = inputs.tensors[i];
    write_npz(inputs_npz, named);
    std::string names;
    for (const auto& a : anchors) names += a.name + "\n";
    write_file_atomic(anchors_file, names);
  }

  std::map<std::string, std::vector<RunRecord>> results;  // per backend
  for (const Backend* b : backends) {
    auto& runs = results[b->name()];
    for (int f = 1; f <= args.fresh; ++f) {
      RunRecord r{"fresh#" + std::to_string(f), "", {}};
      progress.step(b->name() + ": fresh process " + std::to_string(f) + "/" + std::to_string(args.fresh));
      std::string dir = tmp.path() + "/" + b->name() + "_" + std::to_string(f);
      fs::create_directories(dir);
      std::vector<std::string> wargs{"__worker", "--backend", b->name(), "--inputs-npz", inputs_npz, "--anchors",
                                     anchors_file, "--out", dir, "--threads", std::to_string(args.common.threads),
                                     "--precision", options.precision, "--seed", std::to_string(seed)};
      if (!args.common.f64_accumulate.empty()) {
        wargs.push_back("--f64-accumulate");
        wargs.insert(wargs.end(), args.common.f64_accumulate.begin(), args.common.f64_accumulate.end());
      }
      if (options.safe) wargs.push_back("--safe");
      if (!embedded) wargs.insert(wargs.begin() + 1, args.model);
      int rc = spawn_worker(wargs, dir + "/log.txt");
      if (rc != 0) r.error = "worker exited with " + std::to_string(rc) + ": " + last_line(dir + "/log.txt");
      else {
        try {
          r.capture = read_capture(dir, anchors.size(), ref.outputs.size());
        } catch (const Error& e) {
          r.error = e.what();
        }
      }
      runs.push_back(std::move(r));
    }
    // In-process A/B/A: executables stay alive so that A2 runs next to A1 and B.
    std::vector<std::unique_ptr<Executable>> alive;
    auto in_process = [&](const std::string& mode, auto&& body) {
      RunRecord r{mode, "", {}};
      try {
        body(r);
      } catch (const Error& e) {
        r.error = e.what();
      }
      if (mode != "B") runs.push_back(std::move(r));
      else if (!r.error.empty()) runs.push_back(std::move(r));
    };
    progress.step(b->name() + ": in-process A1");
    in_process("A1", [&](RunRecord& r) {
      alive.push_back(compile(model, b->name(), options));
      r.capture = run_with_taps(*alive.back(), inputs.tensors, anchors, seed);
    });
    progress.step(b->name() + ": in-process B");
    // B: A's graph with other weights (same names, op types and shapes), so a compiled-model or
    // prepared-weight cache keyed on structure would hand A2 B's numbers (docs/tools.md).
    in_process("B", [&](RunRecord&) {
      ir::Graph other = model.graph();
      diff::perturb_weights(other, kGraphBSeed);
      alive.push_back(compile(Model::from_graph(std::move(other)), b->name(), options));
      alive.back()->run(inputs.tensors);
    });
    progress.step(b->name() + ": in-process A2");
    in_process("A2", [&](RunRecord& r) {
      alive.push_back(compile(model, b->name(), options));
      r.capture = run_with_taps(*alive.back(), inputs.tensors, anchors, seed);
    });
  }
  progress.clear();

  // Metrics, SHA-256 agreement and the verdict.
  std::vector<std::string> reasons;
  std::vector<std::string> notes;  // reduced-precision errors (printed, not part of the verdict)
  nlohmann::json report = {{"model", embedded ? "(embedded default)" : args.model},
                           {"inputs", input_origin},
                           {"fresh_processes", args.fresh},
                           {"threads", args.common.threads},
                           {"thresholds", {{"cosine_min", diff::kAgreeCosine}, {"rel_l2_max", diff::kAgreeRelL2}}},
                           {"unavailable", nlohmann::json::array()},
                           {"backends", nlohmann::json::array()}};
  if (inputs.drawn) report["input_seed"] = args.inputs.seed;
  for (const auto& [name, why] : unavailable) report["unavailable"].push_back({{"backend", name}, {"reason", why}});
  Table table({"backend", "mode", "anchor", "cosine", "max_abs_delta", "rms_ratio", "sha256[:16]"});
  auto out_name = [&](size_t i) { return graph.value(graph.outputs.at(i)).name; };

  for (const Backend* b : backends) {
    const auto& runs = results[b->name()];
    nlohmann::json jb = {{"backend", b->name()}, {"runs", nlohmann::json::array()}};
    if (b->name() == "vulkan") jb["device"] = vulkan::device_description();
    for (const RunRecord& r : runs) {
      nlohmann::json jr = {{"mode", r.mode}};
      if (!r.error.empty()) {
        jr["error"] = r.error;
        reasons.push_back(b->name() + " " + r.mode + ": " + r.error);
        table.add({b->name(), r.mode, "(run failed)", r.error.substr(0, 60), "", "", ""});
        jb["runs"].push_back(jr);
        continue;
      }
      jr["anchors"] = nlohmann::json::array();
      for (size_t k = 0; k < anchors.size(); ++k) {
        std::string label = "#" + std::to_string(anchors[k].index) + " " + anchors[k].name;
        nlohmann::json ja = {{"index", anchors[k].index}, {"name", anchors[k].name}, {"status", r.capture.status[k]}};
        const Tensor& v = r.capture.anchors[k];
        if (!v.defined() || !ref.anchors[k].defined()) {
          std::string why = v.defined() ? "no reference value" : r.capture.status[k];
          table.add({b->name(), r.mode, label, why, "", "", ""});
        } else {
          diff::Metrics m = diff::compare(v, ref.anchors[k]);
          bool ok = m.shape_match && m.nan_count_test == 0 && m.cosine >= diff::kAgreeCosine;
          if (!ok && relaxed(b) && m.shape_match && m.nan_count_test == 0) ok = true;  // reduced precision
          if (!ok)
            reasons.push_back(b->name() + " " + r.mode + " " + label + ": cosine " + fmt_fixed(m.cosine, 10) + " < " +
                              fmt_fixed(diff::kAgreeCosine, 7));
          ja.update({{"cosine", m.cosine}, {"max_abs_delta", m.max_abs_delta}, {"rms_ratio", m.rms_ratio},
                     {"rel_l2", m.rel_l2}, {"nan_count", m.nan_count_test}, {"sha256", sha(v)}, {"pass", ok}});
          table.add({b->name(), r.mode, label, fmt_fixed(m.cosine, 10), fmt_sci(m.max_abs_delta),
                     fmt_fixed(m.rms_ratio, 7), sha(v).substr(0, 16)});
        }
        jr["anchors"].push_back(ja);
      }
      jr["outputs"] = nlohmann::json::array();
      for (size_t i = 0; i < r.capture.outputs.size() && i < ref.outputs.size(); ++i) {
        diff::Metrics m = diff::compare(r.capture.outputs[i], ref.outputs[i]);
        bool ok = diff::agrees(m);
        if (!ok && relaxed(b) && m.shape_match && m.nan_count_test == 0 && m.nan_count_ref == 0) ok = true;
        if (relaxed(b))
          notes.push_back(b->name() + " " + r.mode + " output " + out_name(i) + " (" + options.precision + "): rel_l2 " +
                          fmt_sci(m.rel_l2) + " against float64, cosine " + fmt_fixed(m.cosine, 10) +
                          " (reduced precision: not held to the fp32 bar)");
        if (!ok)
          reasons.push_back(b->name() + " " + r.mode + " output " + out_name(i) + ": cosine " + fmt_fixed(m.cosine, 10) +
                            ", rel_l2 " + fmt_sci(m.rel_l2));
        std::string s = sha(r.capture.outputs[i]);
        jr["outputs"].push_back({{"name", out_name(i)}, {"cosine", m.cosine}, {"max_abs_delta", m.max_abs_delta},
                                 {"rms_ratio", m.rms_ratio}, {"rel_l2", m.rel_l2}, {"nan_count", m.nan_count_test},
                                 {"sha256", s}, {"pass", ok}});
        table.add({b->name(), r.mode, "output " + out_name(i), fmt_fixed(m.cosine, 10), fmt_sci(m.max_abs_delta),
                   fmt_fixed(m.rms_ratio, 7), s.substr(0, 16)});
      }
      jb["runs"].push_back(jr);
    }
    table.separator();

    // Bit-identity: across the fresh processes, and A1 vs A2.
    auto same_bits = [&](const std::vector<const RunRecord*>& group, const std::string& what) {
      bool same = true;
      std::vector<const RunRecord*> ok;
      for (const RunRecord* r : group)
        if (r->error.empty()) ok.push_back(r);
      for (size_t j = 1; j < ok.size(); ++j) {
        for (size_t k = 0; k < anchors.size(); ++k)
          if (sha(ok[j]->capture.anchors[k]) != sha(ok[0]->capture.anchors[k])) {
            same = false;
            reasons.push_back(b->name() + ": SHA-256 at #" + std::to_string(anchors[k].index) + " " + anchors[k].name +
                              " differs between " + ok[0]->mode + " and " + ok[j]->mode + " (" + what + ")");
          }
        for (size_t i = 0; i < ok[j]->capture.outputs.size(); ++i)
          if (sha(ok[j]->capture.outputs[i]) != sha(ok[0]->capture.outputs[i])) {
            same = false;
            reasons.push_back(b->name() + ": SHA-256 of output " + out_name(i) + " differs between " + ok[0]->mode +
                              " and " + ok[j]->mode + " (" + what + ")");
          }
      }
      return same;
    };
    std::vector<const RunRecord*> fresh, abab;
    for (const RunRecord& r : runs) (r.mode.rfind("fresh", 0) == 0 ? fresh : abab).push_back(&r);
    jb["identical_across_fresh"] = same_bits(fresh, "fresh processes");
    jb["identical_across_aba"] = same_bits(abab, "in-process A/B/A");
    // Informational: fresh and in-process should match too at the same thread count.
    if (!fresh.empty() && !abab.empty() && fresh[0]->error.empty() && abab[0]->error.empty())
      jb["fresh_equals_in_process"] = sha(fresh[0]->capture.outputs.at(0)) == sha(abab[0]->capture.outputs.at(0));
    report["backends"].push_back(jb);
  }
  if (backends.empty()) reasons.push_back("no backend other than the reference is available");
  bool pass = reasons.empty();
  report["verdict"] = pass ? "PASS" : "FAIL";
  report["reasons"] = reasons;
  report["precision"] = options.precision;
  report["reduced_precision_notes"] = notes;
  report["reference_output_sha256"] = ref.outputs.empty() ? "" : sha(ref.outputs[0]);

  if (args.common.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    std::cout << '\n';
    table.print(std::cout);
    for (const auto& jb : report["backends"])
      if (jb.contains("fresh_equals_in_process") && !jb["fresh_equals_in_process"].get<bool>())
        std::cout << "note: " << jb["backend"].get<std::string>()
                  << ": fresh-process and in-process outputs differ in bits (both agree with the reference)\n";
    for (const auto& jb : report["backends"])
      std::cout << jb["backend"].get<std::string>() << ": SHA-256 identical across fresh processes: "
                << (jb["identical_across_fresh"].get<bool>() ? "yes" : "NO")
                << "; across A/B/A: " << (jb["identical_across_aba"].get<bool>() ? "yes" : "NO") << '\n';
    if (options.precision != "fp32" && !args.common.json)
      std::cout << "precision: " << options.precision << " (cuda only; cpu computes float32 as always)\n";
    for (const auto& n : notes) std::cout << "  " << n << '\n';
    if (pass) {
      std::cout << "PASS: every anchor at cosine >= " << fmt_fixed(diff::kAgreeCosine, 7)
                << ", outputs within rel_l2 <= " << fmt_sci(diff::kAgreeRelL2) << ", SHA-256 identical across "
                << args.fresh << " fresh processes and across A/B/A";
      for (const Backend* b : backends) std::cout << (b == backends.front() ? " (" : ", ") << b->name();
      std::cout << (backends.empty() ? "" : ")") << '\n';
    } else {
      std::cout << "FAIL: " << reasons.front();
      if (reasons.size() > 1) std::cout << " (and " << reasons.size() - 1 << " more)";
      std::cout << '\n';
      for (size_t i = 1; i < reasons.size() && i < 20; ++i) std::cout << "  " << reasons[i] << '\n';
    }
  }
  return pass ? kExitOk : kExitFail;
}

}  // namespace lockstep::cli
