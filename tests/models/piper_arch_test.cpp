// A Piper-architecture voice built from Piper's own VITS code with random seeded weights
// (scripts/export_piper_arch.py, run where torch is: the GPU machine), single- and multi-speaker,
// several phoneme counts. Oracle: float64 PyTorch on the same weights at scales (0, 1, 0).
#include "support/paths.h"
#include <gtest/gtest.h>

#include "core/npy.h"
#include "diff/metrics.h"
#include "lockstep/lockstep.h"

namespace lockstep {
namespace {

// float64 against float64, but the exported graph carries PyTorch's Python-float constants (the
// attention's 1/sqrt(d), LayerNorm's eps, the spline's bounds) as float32 tensors, which the
// PyTorch oracle used in double: measured 1.0e-9 to 3.6e-9 (the shared fixed-shape fixtures, whose
// constants are exact, meet 1e-12).
constexpr double kReferenceRelL2 = 1e-8;
constexpr double kCpuRelL2 = 1e-5;         // float32 against float64

struct ArchCase {
  int speakers;
  int phonemes;
};
void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.speakers << " speakers, " << c.phonemes << " phonemes"; }

class PiperArch : public ::testing::TestWithParam<ArchCase> {};

TEST_P(PiperArch, MatchesFloat64PyTorch) {
  const ArchCase c = GetParam();
  const std::string dir = lockstep_test::source_dir() + "/tests/fixtures/piper_arch/";
  const std::string stem = "piper_arch_s" + std::to_string(c.speakers);
  Model model = Model::load(dir + stem + ".onnx");
  auto data = read_npz(dir + stem + "_n" + std::to_string(c.phonemes) + ".npz");
  std::vector<Tensor> in = {data.at("input"), data.at("input_lengths"), data.at("scales")};
  if (c.speakers > 1) in.push_back(data.at("sid"));
  const Tensor& want = data.at("output64");
  for (const char* backend : {"reference", "cpu"}) {
    SCOPED_TRACE(backend);
    Options options;
    options.threads = 2;
    Tensor got = compile(model, backend, options)->run(in).at(0);
    ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << "audio length differs from PyTorch's";
    diff::Metrics m = diff::compare(got, want);
    EXPECT_LE(m.rel_l2, std::string(backend) == "reference" ? kReferenceRelL2 : kCpuRelL2);
    std::cout << "[   NOTE   ] " << backend << ": rel_l2 " << m.rel_l2 << " over " << got.numel() << " samples\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Voices, PiperArch,
                         ::testing::Values(ArchCase{1, 9}, ArchCase{1, 31}, ArchCase{1, 77}, ArchCase{4, 9},
                                           ArchCase{4, 31}, ArchCase{4, 77}),
                         [](const auto& info) {
                           return "s" + std::to_string(info.param.speakers) + "_n" + std::to_string(info.param.phonemes);
                         });

}  // namespace
}  // namespace lockstep
