// Segment values left on the device (Executable::run_resident) by the run-time shape stage,
// without a GPU: a backend that wraps the cpu and keeps every output the stage lets it keep in a
// stand-in device value, counting what the host fetches back. Oracle: the same model on the cpu
// with every value on the host (bit-identical: the same kernels run either way).
#include "support/paths.h"
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cpu/backend.h"
#include "core/hash.h"
#include "core/npy.h"
#include "dynamic/executable.h"
#include "lockstep/lockstep.h"

namespace lockstep {
namespace {

struct Counters {
  int kept = 0;        // outputs left as stand-in device values
  int read_back = 0;   // downloads the stage asked for
  int passed_on = 0;   // stand-in values another segment took as an input
};

class StandInValue final : public ResidentValue {
 public:
  StandInValue(Tensor t, Counters& c) : t_(std::move(t)), c_(c) {}
  Tensor download() const override {
    ++c_.read_back;
    return t_.clone();
  }
  size_t nbytes() const override { return static_cast<size_t>(t_.nbytes()); }
  const Tensor& tensor() const { return t_; }

 private:
  Tensor t_;
  Counters& c_;
};

class KeepingExecutable final : public Executable {
 public:
  KeepingExecutable(std::unique_ptr<Executable> inner, Counters& c) : inner_(std::move(inner)), c_(c) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) override {
    return inner_->run(inputs, options);
  }
  std::vector<RunValue> run_resident(const std::vector<RunValue>& inputs, const std::vector<char>& to_host,
                                     const RunOptions& options) override {
    std::vector<Tensor> in;
    for (const RunValue& v : inputs) {
      if (!v.resident) {
        in.push_back(v.host);
        continue;
      }
      const auto* s = dynamic_cast<const StandInValue*>(v.resident.get());
      if (!s) throw Error(ErrorCode::Internal, "a device value of another backend");
      ++c_.passed_on;
      in.push_back(s->tensor());
    }
    std::vector<RunValue> out;
    std::vector<Tensor> got = inner_->run(in, options);
    for (size_t o = 0; o < got.size(); ++o) {
      if (o < to_host.size() && !to_host[o]) {
        ++c_.kept;
        out.push_back({Tensor{}, std::make_shared<StandInValue>(got[o].clone(), c_)});
      } else {
        out.push_back({std::move(got[o]), nullptr});
      }
    }
    return out;
  }
  const ir::Graph& graph() const override { return inner_->graph(); }
  std::string backend_name() const override { return "keeping"; }

 private:
  std::unique_ptr<Executable> inner_;
  Counters& c_;
};

class KeepingBackend final : public Backend {
 public:
  std::string name() const override { return "keeping"; }
  bool available(std::string*) const override { return true; }
  std::optional<std::string> unsupported_reason(const ir::Graph& g, const ir::Node& n) const override {
    return cpu::backend().unsupported_reason(g, n);
  }
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    return std::make_unique<KeepingExecutable>(cpu::backend().compile(graph, options), counters);
  }
  mutable Counters counters;
};

const std::string kArch = lockstep_test::source_dir() + "/tests/fixtures/piper_arch/piper_arch_s1";

std::vector<Tensor> arch_inputs(int phonemes, bool noise) {
  auto data = read_npz(std::string(kArch) + "_n" + std::to_string(phonemes) + ".npz");
  std::vector<Tensor> in = {data.at("input"), data.at("input_lengths"), data.at("scales")};
  if (noise) in[2] = Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f});
  return in;
}

// Piper's architecture (encoder, duration predictor with its NonZero, flows, decoder): what no host
// node, parameter or graph output reads stays on the "device"; nothing has to be fetched back,
// the audio has the host route's bits, and fewer bytes reach the host.
TEST(ResidentValues, PiperArchKeepsSegmentValuesOffTheHostWithTheSameBits) {
  Model model = Model::load(std::string(kArch) + ".onnx");
  Options two;
  two.threads = 2;
  KeepingBackend keeping;
  auto kept = dynamic::compile_dynamic(model.graph(), keeping, two);
  auto host = dynamic::compile_dynamic(model.graph(), cpu::backend(), two);
  RunOptions seed7;
  seed7.seed = 7;
  for (int n : {31, 9, 77, 31}) {
    for (bool noise : {false, true}) {
      SCOPED_TRACE(std::to_string(n) + " phonemes, noise " + (noise ? "on" : "off"));
      const std::vector<Tensor> in = arch_inputs(n, noise);
      const Counters before = keeping.counters;
      const Tensor a = kept->run(in, seed7).at(0);
      const dynamic::Stats sk = *dynamic::stats(*kept);
      const Tensor b = host->run(in, seed7).at(0);
      const dynamic::Stats sh = *dynamic::stats(*host);
      EXPECT_EQ(sha256_hex(a), sha256_hex(b)) << "values kept off the host changed the audio";
      EXPECT_GT(sk.last_run_values_on_device, 0);
      EXPECT_EQ(keeping.counters.kept - before.kept, sk.last_run_values_on_device);
      EXPECT_GT(keeping.counters.passed_on, before.passed_on);
      EXPECT_EQ(sk.last_run_downloads, 0) << "the host had to fetch a value it was not expected to read";
      EXPECT_EQ(keeping.counters.read_back, 0);
      EXPECT_EQ(sh.last_run_values_on_device, 0) << "the cpu keeps no value on a device";
      EXPECT_LT(sk.last_run_bytes_out, sh.last_run_bytes_out);
      EXPECT_LE(sk.last_run_host_reads, sh.last_run_host_reads);
      EXPECT_EQ(sk.last_run_segments, sh.last_run_segments);
      if (noise)
        std::cout << "[   NOTE   ] piper_arch_s1 n" << n << ": " << sk.last_run_segments << " segments, " << sk.last_run_host_reads
                  << " hand the host values (" << sh.last_run_host_reads << " on the host route), " << sk.last_run_values_on_device
                  << " values kept; bytes in/out " << sk.last_run_bytes_in << "/" << sk.last_run_bytes_out << " (host route "
                  << sh.last_run_bytes_in << "/" << sh.last_run_bytes_out << ")\n";
    }
  }
}

// LOCKSTEP_SEGMENT_VALUES=host: every segment value crosses the host (the route before, kept
// for A/B measurements); read when the executable is made.
TEST(ResidentValues, HostRouteOnRequest) {
  ::setenv("LOCKSTEP_SEGMENT_VALUES", "host", 1);
  Model model = Model::load(std::string(kArch) + ".onnx");
  KeepingBackend keeping;
  auto kept = dynamic::compile_dynamic(model.graph(), keeping, Options{});
  ::unsetenv("LOCKSTEP_SEGMENT_VALUES");
  kept->run(arch_inputs(9, false));
  EXPECT_EQ(dynamic::stats(*kept)->last_run_values_on_device, 0);
  EXPECT_EQ(keeping.counters.kept, 0);
}

// A tap (bisect) sees every value on the host: nothing is kept.
TEST(ResidentValues, TapsSeeEveryValueOnTheHost) {
  Model model = Model::load(std::string(kArch) + ".onnx");
  KeepingBackend keeping;
  auto kept = dynamic::compile_dynamic(model.graph(), keeping, Options{});
  RunOptions tapped;
  int taps = 0;
  tapped.tap = [&](const ir::Node&, int, const Tensor&) { ++taps; };
  kept->run(arch_inputs(9, false), tapped);
  EXPECT_GT(taps, 0);
  EXPECT_EQ(keeping.counters.kept, 0);
}

}  // namespace
}  // namespace lockstep
