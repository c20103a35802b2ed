// Times one 1-D channels-last convolution shape on oneDNN's direct convolution (what the CPU
// backend ran before conv_winograd.h) and on the Winograd kernel at each tile size, same data,
// same threads, and prints each one's relative L2 against a float64 direct convolution.
//   lockstep_conv_bench --ci 72 --co 144 --k 5 --width 1024 [--dilation 1] [--threads 1] [--runs 200]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/conv_winograd.h"
#include "backends/cpu/gemm.h"

namespace {

using lockstep::cpu::GemmConv1d;
using lockstep::cpu::GemmConv1dShape;
using lockstep::cpu::sgemm_implementation;
using lockstep::cpu::Winograd1d;
using lockstep::cpu::Winograd1dShape;

double best_ms(int runs, const std::function<void()>& f) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep_conv_bench: one channels-last 1-D conv on oneDNN and on the Winograd kernel"};
  int64_t ci = 72, co = 144, k = 5, width = 1024, dilation = 1;
  int threads = 1, runs = 200;
  app.add_option("--ci", ci);
  app.add_option("--co", co);
  app.add_option("--k", k);
  app.add_option("--width", width, "input and output length (pads keep it)");
  app.add_option("--dilation", dilation);
  app.add_option("--threads", threads);
  app.add_option("--runs", runs, "timed runs; the best is printed");
  CLI11_PARSE(app, argc, argv);
  omp_set_num_threads(threads);
  const int64_t span = (k - 1) * dilation, pad_l = span / 2, pad_r = span - pad_l;

  std::vector<float> x(static_cast<size_t>(width * ci)), w(static_cast<size_t>(co * ci * k)), b(static_cast<size_t>(co));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  // float64 direct convolution: the oracle for the error column.
  std::vector<double> ref(static_cast<size_t>(width * co));
  for (int64_t t = 0; t < width; ++t)
    for (int64_t o = 0; o < co; ++o) {
      double acc = b[static_cast<size_t>(o)];
      for (int64_t j = 0; j < k; ++j) {
        const int64_t p = t - pad_l + j * dilation;
        if (p < 0 || p >= width) continue;
        for (int64_t c = 0; c < ci; ++c)
          acc += static_cast<double>(w[static_cast<size_t>((o * ci + c) * k + j)]) * x[static_cast<size_t>(p * ci + c)];
      }
      ref[static_cast<size_t>(t * co + o)] = acc;
    }
  auto rel_l2 = [&](const std::vector<float>& y) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) num += (y[i] - ref[i]) * (y[i] - ref[i]), den += ref[i] * ref[i];
    return std::sqrt(num / den);
  };
  const double gflop = 2.0 * static_cast<double>(ci * co * k * width) * 1e-9;
  std::printf("| kernel | ms (best of %d) | direct-conv GFLOP/s | x oneDNN | rel L2 vs float64 |\n|---|---|---|---|---|\n", runs);

  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc x_d({1, ci, width}, memory::data_type::f32, memory::format_tag::nwc);
  const memory::desc y_d({1, co, width}, memory::data_type::f32, memory::format_tag::nwc);
  const memory::desc w_d({co, ci, k}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_d({co}, memory::data_type::f32, memory::format_tag::a);
  const dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_d,
                                      w_d, b_d, y_d, {1}, {dilation - 1}, {pad_l}, {pad_r}),
      engine);
  std::vector<float> y(static_cast<size_t>(width * co));
  memory x_mem(x_d, engine, x.data()), y_mem(y_d, engine, y.data()), b_mem(b_d, engine, b.data());
  memory w_user({{co, ci, k}, memory::data_type::f32, memory::format_tag::oiw}, engine, w.data());
  memory w_mem(pd.weights_desc(), engine);
  dnnl::reorder(w_user, w_mem).execute(stream, w_user, w_mem);
  stream.wait();
  dnnl::convolution_forward conv(pd);
  const double onednn_ms = best_ms(runs, [&] {
    conv.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_BIAS, b_mem}, {DNNL_ARG_DST, y_mem}});
    stream.wait();
  });
  std::printf("| oneDNN %s | %.4f | %.1f | 1.00x | %.2e |\n", pd.impl_info_str(), onednn_ms, gflop / onednn_ms * 1e3,
              rel_l2(y));

  {  // lockstep's GEMM convolution (conv_gemm.h), channels-last both sides
    const GemmConv1d gemm(GemmConv1dShape{.n = 1, .ci = ci, .co = co, .w_in = width, .w_out = width, .k = k,
                                          .dilation = dilation, .pad_begin = pad_l, .x_nwc = true, .y_nwc = true},
                          w.data(), b.data(), threads);
    std::vector<std::byte> scratch(gemm.scratch_bytes());
    std::fill(y.begin(), y.end(), 0.0f);
    const double ms = best_ms(runs, [&] { gemm.run(x.data(), y.data(), scratch.data()); });
    std::printf("| GEMM conv (%s) | %.4f | %.1f | %.2fx | %.2e |\n", sgemm_implementation(), ms, gflop / ms * 1e3,
                onednn_ms / ms, rel_l2(y));
  }
  if (!Winograd1d::available()) {
    std::printf("(no vector FMA here (AVX2, AVX-512F, NEON): the Winograd kernel does not run)\n");
    return 0;
  }
  for (int tile : {2, 3, 4}) {
    const Winograd1d wino(Winograd1dShape{.n = 1, .ci = ci, .co = co, .w_in = width, .w_out = width, .k = k,
                                          .dilation = dilation, .pad_begin = pad_l, .tile = tile},
                          w.data(), b.data(), threads);
    std::vector<std::byte> scratch(wino.scratch_bytes());
    std::fill(y.begin(), y.end(), 0.0f);
    const double ms = best_ms(runs, [&] { wino.run(x.data(), y.data(), scratch.data()); });
    std::printf("| Winograd %s m = %d | %.4f | %.1f | %.2fx | %.2e |\n", wino.isa_name(), tile, ms, gflop / ms * 1e3, onednn_ms / ms, rel_l2(y));
  }
  return 0;
}
