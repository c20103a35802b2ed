// `lockstep compare`: run two backends (or a backend and the reference) on the same inputs and
// compare every output.
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/hash.h"
#include "diff/discrete.h"
#include "diff/metrics.h"
#include "inputs.h"
#include "progress.h"
#include "table.h"

namespace lockstep::cli {

int cmd_compare(const CompareArgs& given) {
  CompareArgs args = given;
  if (args.test.empty()) {
    const Backend* cuda = find_backend("cuda");
    args.test = cuda && cuda->available() ? "cuda" : "cpu";
  }
  for (const std::string& name : {args.ref, args.test})
    if (!find_backend(name))
      throw Error(ErrorCode::InvalidArgument, "unknown backend '" + name + "' (known: reference, cpu, cuda, vulkan)");
  Model model = load_model_or_default(args.model);
  ModelInputs inputs = gather_inputs(model.graph(), args.inputs);
  if (inputs.drawn) std::cerr << "lockstep: no inputs given; drawing them from seed " << args.inputs.seed << '\n';
  Options options;
  options.threads = args.common.threads;
  options.max_memory_bytes = args.common.max_memory;
  options.f64_accumulate = args.common.f64_accumulate_option();
  options.safe = args.common.safe;
  options.input_shapes = inputs.bind;
  options.precision = args.common.precision;
  // Reduced precision (cuda fast modes): the error is reported, not held to the fp32 bar.
  const bool reduced = options.precision != "fp32" && (args.ref == "cuda" || args.test == "cuda");
  if (options.precision != "fp32" && !reduced)
    std::cerr << "lockstep: note: --precision " << options.precision << " applies to cuda only; neither side is cuda\n";

  Progress progress(4);
  progress.step("compiling " + args.ref);
  auto ref_exe = compile(model, args.ref, options);
  progress.step("running " + args.ref);
  RunOptions seeded;  // --seed also seeds the model's random ops (the same draws on both sides)
  seeded.seed = static_cast<uint64_t>(args.inputs.seed);
  std::vector<Tensor> ref_out = ref_exe->run(inputs.tensors, seeded);
  progress.step("compiling " + args.test);
  auto test_exe = compile(model, args.test, options);
  progress.step("running " + args.test);
  std::vector<Tensor> test_out = test_exe->run(inputs.tensors, seeded);
  progress.clear();

  const ir::Graph& graph = model.graph();
  bool all_agree = ref_out.size() == test_out.size();
  nlohmann::json report = {{"model", args.model.empty() ? "(embedded default)" : args.model},
                           {"ref", args.ref},
                           {"test", args.test},
                           {"thresholds", {{"rel_l2_max", diff::kAgreeRelL2}, {"cosine_min", diff::kAgreeCosine}}},
                           {"outputs", nlohmann::json::array()}};
  if (inputs.drawn) report["input_seed"] = args.inputs.seed;
  Table table({"output", "shape", "cosine", "max_abs_delta", "rms_ratio", "rel_l2", "sha256 " + args.ref,
               "sha256 " + args.test, "verdict"});
  for (size_t i = 0; i < ref_out.size() && i < test_out.size(); ++i) {
    diff::Metrics m = diff::compare(test_out[i], ref_out[i]);
    bool agree = diff::agrees(m) || (reduced && m.shape_match && m.nan_count_test == 0 && m.nan_count_ref == 0);
    all_agree &= agree;
    std::string name = graph.value(graph.outputs.at(i)).name;
    std::string sha_ref = sha256_hex(ref_out[i]), sha_test = sha256_hex(test_out[i]);
    report["outputs"].push_back({{"name", name},
                                 {"shape_ref", ref_out[i].shape()},
                                 {"shape_test", test_out[i].shape()},
                                 {"cosine", m.cosine},
                                 {"max_abs_delta", m.max_abs_delta},
                                 {"rms_ratio", m.rms_ratio},
                                 {"rel_l2", m.rel_l2},
                                 {"nan_count_ref", m.nan_count_ref},
                                 {"nan_count_test", m.nan_count_test},
                                 {"sha256_ref", sha_ref},
                                 {"sha256_test", sha_test},
                                 {"agree", agree}});
    table.add({name, shape_str(test_out[i].shape()), fmt_fixed(m.cosine, 10), fmt_sci(m.max_abs_delta),
               fmt_fixed(m.rms_ratio, 7), fmt_sci(m.rel_l2), sha_ref.substr(0, 16), sha_test.substr(0, 16),
               !agree ? "DIVERGE" : reduced && !diff::agrees(m) ? "reduced" : "agree"});
  }
  // Outputs of different lengths (or differing integer outputs): a decision flipped somewhere (a
  // duration's Ceil, a comparison). Run both sides again capturing their decisions to name it.
  std::optional<diff::DiscreteDivergence> decision;
  bool lengths_differ = ref_out.size() != test_out.size();
  for (size_t i = 0; i < ref_out.size() && i < test_out.size(); ++i)
    lengths_differ |= ref_out[i].shape() != test_out[i].shape() ||
                      (!is_floating(ref_out[i].dtype()) && sha256_hex(ref_out[i]) != sha256_hex(test_out[i]));
  if (lengths_differ) {
    diff::DiscreteCapture ref_decisions(graph), test_decisions(graph);
    RunOptions ref_run = seeded, test_run = seeded;
    ref_run.tap = ref_decisions.tap();
    test_run.tap = test_decisions.tap();
    ref_exe->run(inputs.tensors, ref_run);
    test_exe->run(inputs.tensors, test_run);
    decision = diff::first_discrete_divergence(graph, ref_decisions, test_decisions);
    report["discrete_divergence"] =
        decision ? nlohmann::json{{"node", decision->node},
                                  {"op", decision->op},
                                  {"value", decision->value},
                                  {"index", decision->index},
                                  {"ref", decision->ref_value},
                                  {"test", decision->test_value},
                                  {"shape_ref", decision->ref_shape},
                                  {"shape_test", decision->test_shape},
                                  {"message", decision->message()}}
                 : nlohmann::json{{"message", "no deciding node differs where both sides expose it"}};
  }
  report["verdict"] = all_agree ? "agree" : "diverge";
  report["precision"] = options.precision;
  if (reduced) report["note"] = "reduced precision: not held to the fp32 bar";
  if (args.common.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    table.print(std::cout);
    std::cout << (all_agree ? "AGREE" : "DIVERGE") << ": " << args.test << " vs " << args.ref
              << " (agreement: rel_l2 <= " << fmt_sci(diff::kAgreeRelL2) << " and cosine >= "
              << fmt_fixed(diff::kAgreeCosine, 7) << " on every output)\n";
    if (lengths_differ)
      std::cout << "DECISION: " << (decision ? decision->message() : "outputs differ in shape, but no deciding node "
                                                                     "differs where both sides expose it")
                << "\n";
    if (reduced)
      std::cout << "precision " << options.precision << " on cuda: reduced precision: not held to the fp32 bar "
                << "(the error above is reported; only shape and NaN are checked)\n";
  }
  return all_agree ? kExitOk : kExitFail;
}

}  // namespace lockstep::cli
