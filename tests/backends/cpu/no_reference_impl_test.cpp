// Issue 20, point 1: no convolution or matrix product of a real model ever runs on one of
// oneDNN's reference loops. Every Conv, ConvTranspose, MatMul and Gemm of every shared model and
// of the embedded default is compiled at each ISA level this processor can be capped to
// (ONEDNN_MAX_CPU_ISA for oneDNN, LOCKSTEP_CPU_ISA for lockstep's own kernels), in a fresh
// `lockstep info --kernels cpu` process each (oneDNN takes its cap once per process), and the
// test fails naming the model, cap, node, shape and implementation of any reference one.
#include "support/paths.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/cpu/isa.h"
#include "backends/cpu/onednn_impl.h"
#include "core/atomic_file.h"
#include "support/fixtures.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = lockstep_test::cli_command();  // the binary, or the emulator and the binary (cross builds)

struct Cap {
  const char* onednn;    // ONEDNN_MAX_CPU_ISA
  const char* lockstep;  // LOCKSTEP_CPU_ISA
  cpu::Isa needs;        // what the host must have for the cap to mean anything
};

// x86-64 levels oneDNN can be capped to; elsewhere the host's own level only.
std::vector<Cap> caps_for_this_host() {
  std::vector<Cap> caps;
#if defined(__x86_64__)
  caps.push_back({"SSE41", "portable", cpu::Isa::Portable});
  caps.push_back({"AVX2", "avx2", cpu::Isa::Avx2});
  caps.push_back({"AVX512_CORE", "avx512", cpu::Isa::Avx512});
#else
  caps.push_back({"ALL", cpu::isa_name(cpu::detected_isa()), cpu::detected_isa()});
#endif
  return caps;
}

bool is_heavy_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm";
}

TEST(CpuNoReferenceImplementation, EveryConvAndMatmulOfEveryModelAtEveryIsaCap) {
  const std::string dir = test::temp_dir();
  ASSERT_EQ(std::system((kBinary + " default -o " + dir + "/default >/dev/null 2>&1").c_str()), 0);
  std::vector<std::string> models = {dir + "/default/seed_flow.onnx"};
  for (const char* stem : {"vits_seed_174", "vits_seed_flow_T1024", "vits_seed_dec_T256", "vits_low_dec_T128"})
    models.push_back(test::shared_model(stem));
  int checked = 0;
  for (const Cap& cap : caps_for_this_host()) {
    if (cap.needs > cpu::detected_isa()) {
      std::cout << "[   NOTE   ] cap " << cap.onednn << ": this processor has no " << cpu::isa_name(cap.needs)
                << " (run on such a host to cover it)\n";
      continue;
    }
    for (const std::string& model : models) {
      const std::string out = dir + "/kernels.json";
      const std::string cmd = std::string("ONEDNN_MAX_CPU_ISA=") + cap.onednn + " LOCKSTEP_CPU_ISA=" + cap.lockstep +
                              " " + kBinary + " info " + model + " --kernels cpu --threads 2 --json >" + out + " 2>&1";
      const int status = std::system(cmd.c_str());
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << read_file(out);
      const nlohmann::json report = nlohmann::json::parse(read_file(out));
      ASSERT_TRUE(report.contains("kernels") && report["kernels"].contains("nodes")) << report.dump();
      for (const auto& node : report["kernels"]["nodes"]) {
        const std::string op = node["op"], impl = node["implementation"];
        if (!is_heavy_op(op)) continue;
        ++checked;
        EXPECT_FALSE(impl.empty()) << model << " at " << cap.onednn << ": " << node["name"] << " reports nothing";
        const std::string onednn = impl.rfind("onednn:", 0) == 0 ? impl.substr(7) : "";
        EXPECT_FALSE(cpu::is_reference_impl(onednn))
            << fs::path(model).filename().string() << " capped at " << cap.onednn << " / " << cap.lockstep << ": "
            << op << " " << node["name"] << " " << node["shape"] << " runs oneDNN's reference loop " << impl;
      }
    }
  }
  EXPECT_GT(checked, 100);  // the five models hold hundreds of convolutions
}

}  // namespace
}  // namespace lockstep
