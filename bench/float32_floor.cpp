// The float32 floor of a model: the float64 reference run as is and with the outputs of chosen
// nodes rounded to float32 (everything else float64), and each rounded run's relative L2 from the
// plain one. Rounding every node is what a runtime whose every kernel is correctly rounded would
// give; no float32 runtime can be expected to come closer to float64 than that on this input.
//   lockstep_float32_floor VOICE.onnx --inputs ids.npy lengths.npy scales.npy [--prefix /dec/]
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/npy.h"
#include "diff/metrics.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"

int main(int argc, char** argv) {
  CLI::App app{"float64 reference against the same with chosen nodes' outputs rounded to float32"};
  std::string model_path, prefix = "/dec/", match;
  int bits = 24;
  std::vector<std::string> input_paths;
  app.add_option("model", model_path, "ONNX model")->required();
  app.add_option("--inputs", input_paths, "input .npy files, in the model's input order")->required();
  app.add_option("--prefix", prefix, "node-name prefix of the part rounded alone (default /dec/: Piper's decoder)");
  app.add_option("--bits", bits, "round to this many significand bits instead of float32's 24 (a coarser kernel's error)")->check(CLI::Range(2, 24));
  app.add_option("--match", match, "instead of --prefix: an ECMAScript regex searched in node names");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::regex pattern(match.empty() ? std::string(".") : match);
    const lockstep::Model model = lockstep::Model::load(model_path);
    std::vector<lockstep::Tensor> inputs;
    for (const auto& p : input_paths) inputs.push_back(lockstep::read_npy(p));
    auto exe = lockstep::compile(model, "reference");
    const lockstep::Tensor plain = exe->run(inputs).at(0).clone();
    struct Mode {
      const char* what;
      bool inside, outside;  // round the chosen nodes (--prefix or --match) / the others
    };
    const Mode modes[] = {{"every node", true, true}, {"the chosen nodes only", true, false}, {"the other nodes only", false, true}};
    std::printf("%s: %lld output elements; rounding node outputs to %d significand bits (%s '%s')\n", model_path.c_str(),
                static_cast<long long>(plain.numel()), bits, match.empty() ? "prefix" : "match", (match.empty() ? prefix : match).c_str());
    for (const Mode& m : modes) {
      long rounded = 0;
      lockstep::RunOptions options;
      options.fault_for_testing = [&](const lockstep::ir::Node& node, int, lockstep::Tensor& value) {
        const bool inside = match.empty() ? node.name.rfind(prefix, 0) == 0 : std::regex_search(node.name, pattern);
        if (value.dtype() != lockstep::DType::Float64 || !(inside ? m.inside : m.outside)) return;
        value = value.to(lockstep::DType::Float32).to(lockstep::DType::Float64);
        if (bits < 24)
          for (int64_t i = 0; i < value.numel(); ++i) {
            double& x = value.data<double>()[i];
            int e = 0;
            const double mantissa = std::frexp(x, &e);
            x = std::ldexp(std::nearbyint(std::ldexp(mantissa, bits)), e - bits);
          }
        ++rounded;
      };
      const lockstep::Tensor got = exe->run(inputs, options).at(0);
      if (got.shape() != plain.shape()) {
        std::printf("  %-26s another length: %s against %s\n", m.what, lockstep::shape_str(got.shape()).c_str(),
                    lockstep::shape_str(plain.shape()).c_str());
        continue;
      }
      std::printf("  %-26s rel L2 %.3g from float64 (%ld node outputs rounded)\n", m.what,
                  lockstep::diff::compare(got, plain).rel_l2, rounded);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep_float32_floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
