// One compiled Executable used from several threads at once (docs/security.md, "Concurrency"):
// run() serializes on the Executable, so 4 threads x 20 runs, each thread with its own inputs,
// give bit-for-bit the outputs of sequential runs of the same inputs.
#include <gtest/gtest.h>

#include <thread>

#include "core/hash.h"
#include "lockstep/lockstep.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

constexpr int kThreads = 4;
constexpr int kRunsPerThread = 20;
constexpr int64_t kFrames = 32;  // the default graph's topology at a length the reference runs fast

// Thread t's inputs: the report's inputs with z_p scaled by (1 + t/4), so threads differ.
std::vector<Tensor> inputs_for(int t) {
  std::vector<Tensor> in = zoo::seed_flow_inputs(kFrames);
  Tensor z = in[0].clone();
  float* p = z.data<float>();
  for (int64_t i = 0; i < z.numel(); ++i) p[i] *= 1.0f + static_cast<float>(t) / 4.0f;
  in[0] = z;
  return in;
}

std::string hash_all(const std::vector<Tensor>& outputs) {
  std::string h;
  for (const Tensor& t : outputs) h += sha256_hex(t);
  return h;
}

class Concurrency : public ::testing::TestWithParam<std::string> {};

TEST_P(Concurrency, ConcurrentRunsGiveSequentialBits) {
  Options options;
  options.threads = 2;
  auto exe = compile(Model::from_graph(zoo::seed_flow_graph(0, kFrames)), GetParam(), options);
  std::vector<std::string> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(hash_all(exe->run(inputs_for(t))));
  for (int t = 1; t < kThreads; ++t) ASSERT_NE(expected[0], expected[static_cast<size_t>(t)]) << "inputs must differ";

  const int runs = kRunsPerThread;
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        const std::vector<Tensor> in = inputs_for(t);
        for (int r = 0; r < runs; ++r) got[static_cast<size_t>(t)].push_back(hash_all(exe->run(in)));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(errors[static_cast<size_t>(t)], "") << "thread " << t;
    ASSERT_EQ(got[static_cast<size_t>(t)].size(), static_cast<size_t>(runs));
    for (int r = 0; r < runs; ++r)
      EXPECT_EQ(got[static_cast<size_t>(t)][static_cast<size_t>(r)], expected[static_cast<size_t>(t)])
          << "thread " << t << " run " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Concurrency, ::testing::Values("cpu", "reference"));

}  // namespace
}  // namespace lockstep
