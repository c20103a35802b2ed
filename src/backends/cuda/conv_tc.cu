// Strict-fp32 1-D Conv on tensor cores: eligibility, compile-time weight split, launch.
#include "backends/cuda/conv_tc.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/channel_consumers.h"
#include "backends/cuda/conv_tc_gate.h"
#include "backends/cuda/conv_tc_kernel.h"
#include "backends/cuda/conv_tc_split.h"
#include "backends/cuda/conv_wgmma.h"
#include "backends/cuda/ew_ops.h"
#include "backends/cuda/families.h"
#include "core/shared_by_key.h"
#include "ir/infer_rules.h"

namespace lockstep::cuda {
namespace {

// Measured range (H200, probe 2026-11-30): channels 32..512, 1024..262144 steps.
constexpr int64_t kMinChannels = 32;
// Split reductions (choose_splits) keep short inputs busy too: the floor went from 1024 to 128
// output steps when they came in, and to none on 2026-12-04 (H200, Piper medium at 87 frames: the
// encoder's and flows' convs below 128 steps had stayed on cuDNN, whose per-conv setup made a new
// length's first call 120-168 ms; on this kernel 84-88 ms, and the cached call 6.99 -> 5.91 ms).
// LOCKSTEP_CUDA_CONV_TC_MIN_STEPS sets a floor again, for measuring.
constexpr int64_t kMinSteps = 1;
constexpr int64_t kUnsplitSteps = 128;  // record_conv_tc: shorter convs are not split
// Down to C_in = 8, C_out = 1 (the decoders' last stages and conv_post) unless
// LOCKSTEP_CUDA_CONV_TC_SMALL=0: H200 2026-11-30, kernel 1.4-4.7x faster than cuDNN FMA on
// 8/16-channel shapes, seed at 1024 frames 5.37 -> 3.73 ms, low 3.68 -> 3.57, ljs 16.68 -> 16.61.
constexpr int64_t kMinChannelsSmall = 8;
constexpr int64_t kMaxTf32Channels = 16;

// ConvTranspose as phases from this many output steps (N * T_out): the presets' upsamplers at 1024
// frames (65536..262144 steps) gained, those at 128 frames (<= 32768) lost.
constexpr int64_t kMinConvTSteps = 65536;

bool convt_long_enough(const ir::Graph& g, const ir::Node& node) {
  const Shape& y = g.value(node.outputs[0]).shape;
  return y.size() == 3 && y[0] * y[2] >= kMinConvTSteps;
}

std::atomic<int> recorded{0}, gate_clusters{0};

// The gate this conv's split merge can compute (LOCKSTEP_CUDA_ABSORB=0: none): a plain conv with
// no epilogue, split, on the mma.sync kernel.
std::optional<backends::GatePattern> absorbable_gate(const Context& ctx, int node_index, const tc::Params& base, bool hopper) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  if (env_is("LOCKSTEP_CUDA_ABSORB", "0") || base.splits < 2 || base.shuffle != 1 || hopper || !node.epilogue.empty())
    return std::nullopt;
  return backends::gate_pattern(g, ctx.channel_facts(), node_index);
}

// How many leading epilogue steps the kernel's store applies (Add of a same-shape float operand,
// LeakyRelu, Relu; at most one Add), filling p.post / p.alpha; the operand of the Add in *z.
size_t fuse_post(const ir::Graph& g, const ir::Node& node, tc::Params& p, ir::ValueId* z) {
  if (env_is("LOCKSTEP_CUDA_CONV_TC_FUSE", "0")) return 0;
  const Shape& out = g.value(node.outputs[0]).shape;
  size_t n = 0;
  for (; n < node.epilogue.size() && n < static_cast<size_t>(tc::kMaxPost); ++n) {
    const ir::EpilogueStep& step = node.epilogue[n];
    if (step.op == ir::Op::Add && *z == ir::kNoValue && step.operand != ir::kNoValue &&
        g.value(step.operand).shape == out && device_dtype(g.value(step.operand).dtype) == DType::Float32) {
      *z = step.operand;
      p.post[n] = tc::kPostAdd;
    } else if (step.op == ir::Op::LeakyRelu && step.operand == ir::kNoValue) {
      if (p.post[0] == tc::kPostLeaky) break;  // one alpha
      p.post[n] = tc::kPostLeaky;
      p.alpha = step.alpha;
    } else if (step.op == ir::Op::Relu && step.operand == ir::kNoValue) {
      p.post[n] = tc::kPostRelu;
    } else {
      break;
    }
  }
  return n;
}

// The wgmma kernel (conv_wgmma.h) where it exists: built for sm_90a, a compute capability 9.0
// device, and LOCKSTEP_CUDA_CONV_WGMMA=1 (opt-in until measured).
bool wgmma_enabled(int device) {
  if (!wg::compiled_for_sm90a() || !env_is("LOCKSTEP_CUDA_CONV_WGMMA", "1")) return false;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return false;
  return major == 9 && minor == 0;
}

// The LeakyRelu node whose output is this Conv's input and is read only as Conv inputs (no graph
// output, no epilogue operand; HiFi-GAN's stages feed one LeakyRelu to three resblocks' first convs),
// with no epilogue of its own and a float input: the Conv can apply it as it reads
// (Params::pre_alpha). The executor drops the LeakyRelu's kernel only where every reader does.
// -1 when there is none.
int leaky_producer(const Context& ctx, int conv) {
  const ir::Graph& g = ctx.graph();
  const ir::ValueId x = g.nodes[static_cast<size_t>(conv)].inputs[0];
  const int producer = env_is("LOCKSTEP_CUDA_FUSE_PROLOGUE_SHARED", "0") ? sole_reader_producer(g, ctx.channel_facts(), x)
                                                                          : conv_input_producer(g, ctx.channel_facts(), x);
  if (producer < 0) return -1;
  const ir::Node& l = g.nodes[static_cast<size_t>(producer)];
  if (l.op != ir::Op::LeakyRelu || !l.epilogue.empty() || l.outputs.size() != 1 || l.inputs.size() != 1) return -1;
  const ir::Value& src = g.value(l.inputs[0]);
  if (device_dtype(src.dtype) != DType::Float32 || src.shape != g.value(x).shape) return -1;
  return producer;
}

bool fail(std::string* why_not, const char* why) {
  if (why_not) *why_not = why;
  return false;
}

// The stride-1 1-D conv the kernel runs for a node. A Conv is itself. A ConvTranspose of stride
// s and kernel K = J*s is one conv with C_out*s rows (row co*s + phase, taps of w reversed every
// s: w'[co*s+ph, ci, j] = w[ci, co, ph + (J-1-j)*s]), kernel J, pad J-1 and
// ceil((T_out + pad)/s) steps, stored with Params::shuffle.
struct VirtualConv {
  int64_t n = 0, cin = 0, cout = 0, t_in = 0, t_out = 0, ks = 0, dil = 1, pad = 0;
  int64_t shuffle = 1, shuffle_pad = 0, y_len = 0;  // y_len: the real output's steps
};

std::optional<VirtualConv> virtual_conv(const ir::Graph& g, const ir::Node& node, std::string* why_not) {
  auto none = [&](const char* why) -> std::optional<VirtualConv> {
    fail(why_not, why);
    return std::nullopt;
  };
  const ir::Value& xv = g.value(node.inputs[0]);
  const ir::Value& wv = g.value(node.inputs[1]);
  const ir::Value& yv = g.value(node.outputs[0]);
  if (xv.shape.size() != 3 || wv.shape.size() != 3 || yv.shape.size() != 3) return none("not 1-D");
  VirtualConv v;
  v.n = xv.shape[0];
  v.cin = xv.shape[1];
  v.t_in = xv.shape[2];
  v.y_len = yv.shape[2];
  if (node.op == ir::Op::Conv) {
    const ir::ConvGeometry geo = ir::conv_geometry(node, xv.shape, wv.shape);  // pads with auto_pad resolved
    if (geo.group != 1) return none("grouped");
    if (geo.strides[0] != 1) return none("stride != 1");
    if (wv.shape[1] != v.cin || yv.shape[1] != wv.shape[0]) return none("channel mismatch");
    v.cout = wv.shape[0];
    v.ks = wv.shape[2];
    v.dil = geo.dilations[0];
    v.pad = geo.pad_begin[0];
    v.t_out = v.y_len;
    return v;
  }
  const ir::ConvGeometry geo = ir::conv_transpose_geometry(node, xv.shape, wv.shape);
  const int64_t s = geo.strides[0], k = wv.shape[2];
  if (geo.group != 1) return none("grouped");
  if (geo.dilations[0] != 1) return none("dilated ConvTranspose");
  if (wv.shape[0] != v.cin || yv.shape[1] != wv.shape[1]) return none("channel mismatch");
  if (s < 1 || k % s != 0) return none("ConvTranspose kernel not a multiple of the stride");
  if (geo.pad_begin[0] < 0) return none("negative ConvTranspose padding");
  v.cout = wv.shape[1] * s;
  v.ks = k / s;
  v.pad = v.ks - 1;
  v.shuffle = s;
  v.shuffle_pad = geo.pad_begin[0];
  v.t_out = (v.y_len - 1 + v.shuffle_pad) / s + 1;
  return v;
}

// The virtual conv's weights [cout, cin, ks] (float32).
std::vector<float> virtual_weights(const ir::Node& node, const VirtualConv& v, const float* w) {
  if (node.op == ir::Op::Conv) return std::vector<float>(w, w + v.cout * v.cin * v.ks);
  std::vector<float> out(static_cast<size_t>(v.cout * v.cin * v.ks));
  const int64_t s = v.shuffle, cout_real = v.cout / s, k = v.ks * s;
  for (int64_t co = 0; co < cout_real; ++co)
    for (int64_t ph = 0; ph < s; ++ph)
      for (int64_t ci = 0; ci < v.cin; ++ci)
        for (int64_t j = 0; j < v.ks; ++j)
          out[static_cast<size_t>(((co * s + ph) * v.cin + ci) * v.ks + j)] = w[(ci * cout_real + co) * k + ph + (v.ks - 1 - j) * s];
  return out;
}

// Why a weight constant does not suit the split (nullptr: it does): an infinite weight stays whole
// in hi with lo = 0 and ah*bl = inf*0 would be NaN where float64 gives +-inf, and the small
// products run on fp16 (conv_tc_kernel.h), so weights stay inside its range. Remembered per
// storage while it lives: reading every weight again at each new length cost 0.2-0.5 ms a conv.
const char* weights_unsuitable(const Tensor& wc) {
  struct Memo {
    std::weak_ptr<const std::byte[]> owner;
    const char* why;
  };
  static std::mutex mutex;
  static std::unordered_map<std::string, Memo> memo;
  const std::string key = storage_key(wc);
  const auto owner = wc.storage_owner();
  auto same = [&](const Memo& m) { return !m.owner.expired() && !m.owner.owner_before(owner) && !owner.owner_before(m.owner); };
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memo.find(key); it != memo.end() && same(it->second)) return it->second.why;
  }
  const Tensor wf = wc.dtype() == DType::Float32 ? wc : wc.to(DType::Float32);
  const float* w = wf.data<float>();
  const char* why = nullptr;
  for (int64_t i = 0; i < wf.numel() && !why; ++i) {
    if (!std::isfinite(w[i])) why = "non-finite weights";
    else if (std::fabs(w[i]) >= 32768.0f) why = "a weight of magnitude 2^15 or more";
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (memo.size() >= 4096)
    for (auto it = memo.begin(); it != memo.end();) it = it->second.owner.expired() ? memo.erase(it) : std::next(it);
  memo[key] = {owner, why};
  return why;
}

}  // namespace

bool conv_tc_eligible(const ir::Graph& g, const ir::Node& node, Precision precision, std::string* why_not) {
  if (env_is("LOCKSTEP_CUDA_CONV_TC", "0")) return fail(why_not, "LOCKSTEP_CUDA_CONV_TC=0");
  const bool transpose = node.op == ir::Op::ConvTranspose;
  if (node.op != ir::Op::Conv && !transpose) return fail(why_not, "not a Conv or ConvTranspose");
  // ConvTranspose phases (7e-8..1.1e-7 per op): faster than the SGEMM + col2im path on long
  // outputs, slower on short ones (H200, 2026-11-30, every ConvTranspose as phases: 1024 frames
  // -0.04..-0.06 ms per preset, 4096 frames -0.2..-0.7, 128 frames +0.02). So by default from
  // kMinConvTSteps output steps; LOCKSTEP_CUDA_CONVT_TC=1 takes every size, =0 none.
  if (transpose && (env_is("LOCKSTEP_CUDA_CONVT_TC", "0") ||
                    (!env_is("LOCKSTEP_CUDA_CONVT_TC", "1") && !convt_long_enough(g, node))))
    return fail(why_not, "ConvTranspose output shorter than the phases' measured range (LOCKSTEP_CUDA_CONVT_TC=1 forces)");
  // tf32 runs the same kernel with TF32-rounded weights; fp16/bf16 keep cuDNN's paths, and
  // the fast modes keep ConvTranspose on the TF32 GEMM.
  if (precision != Precision::kFp32 && (precision != Precision::kTf32 || transpose))
    return fail(why_not, "fast modes keep cuDNN's and cuBLAS's tensor-op paths");
  if (precision == Precision::kTf32 && env_is("LOCKSTEP_CUDA_CONV_TC_TF32", "0")) return fail(why_not, "LOCKSTEP_CUDA_CONV_TC_TF32=0");
  if (node.inputs.size() < 2 || node.outputs.empty()) return fail(why_not, "missing inputs");
  const ir::Value& xv = g.value(node.inputs[0]);
  const ir::Value& wv = g.value(node.inputs[1]);
  if (device_dtype(xv.dtype) != DType::Float32) return fail(why_not, "not float");
  if (!wv.constant.defined()) return fail(why_not, "weights are not a constant");
  const std::optional<VirtualConv> v = virtual_conv(g, node, why_not);
  if (!v) return false;
  const int64_t n = v->n, cin = v->cin, t_in = v->t_in, cout = v->cout, ks = v->ks, t_out = v->t_out, d = v->dil;
  // Kernel size 1 stays opt-in (LOCKSTEP_CUDA_CONV_TC_K1=1): 6-9x faster than cuDNN in the probe on
  // the flow's 1x1 shapes, but at model level (H200, 1024 frames) seed -0.1 ms, low and ljs +0.1 ms.
  // Kernel 2 only as ConvTranspose phases (K = 2*stride, the HiFi-GAN upsamplers).
  const bool k1_ok = ks == 1 && env_is("LOCKSTEP_CUDA_CONV_TC_K1", "1");
  if (!tc::supported_ks(static_cast<int>(ks)) && !k1_ok && !(transpose && ks == 2))
    return fail(why_not, transpose ? "ConvTranspose kernel/stride not 2/3/5/7/11" : "kernel size not 3/5/7/11");
  if (cin % tc::kChunk != 0) return fail(why_not, "C_in % 8 not 0");
  const bool small_ok = !env_is("LOCKSTEP_CUDA_CONV_TC_SMALL", "0");
  const int64_t min_cin = small_ok ? kMinChannelsSmall : kMinChannels, min_cout = small_ok ? 1 : kMinChannels;
  const char* steps_env = std::getenv("LOCKSTEP_CUDA_CONV_TC_MIN_STEPS");
  const int64_t min_steps = steps_env && *steps_env ? std::atoll(steps_env) : kMinSteps;
  // tf32: cuDNN's TF32 kernels win from 32 channels up (H200, 1024 frames: ljs 9.2 ms against
  // 15.5 with every conv here, low 2.6 against 3.1), this kernel on the 8/16-channel stages (seed
  // 3.3 ms against 4.5 on cuDNN alone).
  if (precision == Precision::kTf32 && std::min(cin, cout) > kMaxTf32Channels && !env_is("LOCKSTEP_CUDA_CONV_TC_TF32", "1"))
    return fail(why_not, "tf32 with more than 16 channels: cuDNN's TF32 path is faster");
  if (cin < min_cin || cout < min_cout || n * t_out < min_steps) return fail(why_not, "below the measured size range");
  if (d < 1 || (ks - 1) * d > 4096) return fail(why_not, "dilation out of range");
  if (v->pad < 0 || v->pad > (ks - 1) * d) return fail(why_not, "pad outside [0, (k-1)*d]");
  if (cin * t_in >= (int64_t{1} << 31) || cout * t_out >= (int64_t{1} << 31) || v->y_len * cout >= (int64_t{1} << 31) ||
      tc::split_weight_floats(static_cast<int>(cin), static_cast<int>(cout), static_cast<int>(ks)) >= (size_t{1} << 31) ||
      n > 65535 / tc::kMaxSplits)
    return fail(why_not, "too large for 32-bit indices");
  if (const char* why = weights_unsuitable(wv.constant)) return fail(why_not, why);  // they stay on cuDNN
  return true;
}

bool record_conv_tc(Context& ctx, int node_index, NodeProgram& program) {
  const ir::Graph& g = ctx.graph();
  const ir::Node& node = g.nodes[static_cast<size_t>(node_index)];
  const ir::Value& wv = g.value(node.inputs[1]);
  const VirtualConv v = *virtual_conv(g, node, nullptr);
  const int n = static_cast<int>(v.n), cin = static_cast<int>(v.cin), cout = static_cast<int>(v.cout), ks = static_cast<int>(v.ks);
  tc::Params base{};
  base.cin = cin;
  base.cout = cout;
  base.t_in = static_cast<int>(v.t_in);
  base.x_vec = v.t_in % 4 == 0 ? 1 : 0;  // every row 16-byte aligned where x is (checked at launch)
  base.t_out = static_cast<int>(v.t_out);
  base.dil = static_cast<int>(v.dil);
  base.pad = static_cast<int>(v.pad);
  base.shuffle = static_cast<int>(v.shuffle);
  base.shuffle_pad = static_cast<int>(v.shuffle_pad);
  base.y_len = static_cast<int>(v.y_len);
  base.small_f16 = env_is("LOCKSTEP_CUDA_CONV_TC_F16", "0") ? 0 : 1;
  base.split_planes = env_is("LOCKSTEP_CUDA_CONV_TC_SPLIT_PLANES", "2") ? 2 : 1;
  const bool tf32 = ctx.precision == Precision::kTf32;
  int optin = 0, sms = 0, device = 0;
  check_cuda(cudaGetDevice(&device), "current device", node.name);
  check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "shared memory limit", node.name);
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count", node.name);
  tc::TileKind tile = tc::choose_tile(n, cout, base.t_out, ks, sms);
  // LOCKSTEP_CUDA_CONV_TC_TILE_AB=key=tile (A/B timing): the tile (32x256, 64x128, 64x64) for the
  // ConvTranspose phases (key "t") or the convs of one kernel size (key "3", "5", ...).
  if (const char* ab = std::getenv("LOCKSTEP_CUDA_CONV_TC_TILE_AB"); ab && *ab) {
    const std::string spec = ab, key = spec.substr(0, spec.find('=')), want = spec.substr(spec.find('=') + 1);
    if (v.shuffle > 1 ? key == "t" : key == std::to_string(ks))
      tile = want == "32x256" ? tc::TileKind::k32x256 : want == "64x64" ? tc::TileKind::k64x64 : tc::TileKind::k64x128;
  }
  long target_blocks = tc::kSplitTargetBlocks;
  int min_taps = tc::kSplitMinTaps;
  if (const char* rule = std::getenv("LOCKSTEP_CUDA_CONV_TC_SPLIT_RULE"); rule && *rule)  // "blocks:taps" (A/B timing)
    std::sscanf(rule, "%ld:%d", &target_blocks, &min_taps);
  // Below kUnsplitSteps output steps a conv runs whole (on Hopper: the wgmma kernel). On the joe
  // voice's 1 s sentence the flows' 49-frame convs split 8 ways put the audio 2.38e-5 / 2.27e-5 from
  // float64 (noise off / on), unsplit 1.88e-5 / 6.9e-6 (H200, 2026-12-04; the voice multiplies its
  // decoder's input error ~17x, docs/voices.md). LOCKSTEP_CUDA_CONV_TC_SPLIT_SHORT=1 splits them again.
  const bool short_whole = n * base.t_out < kUnsplitSteps && !env_is("LOCKSTEP_CUDA_CONV_TC_SPLIT_SHORT", "1");
  base.splits = env_is("LOCKSTEP_CUDA_CONV_TC_SPLIT", "0") || short_whole
                    ? 1
                    : tc::choose_splits(n, cin, cout, base.t_out, ks, tile, target_blocks, min_taps);
  // LOCKSTEP_CUDA_CONV_TC_SPLITS=s: s splits for every conv the 4-warp tile already splits (A/B timing).
  if (const char* forced = std::getenv("LOCKSTEP_CUDA_CONV_TC_SPLITS"); forced && *forced && base.splits > 1)
    base.splits = std::clamp(std::atoi(forced), 1, std::min(tc::kMaxSplits, cin / tc::kChunk));
  const bool hopper = base.splits == 1 && base.shuffle == 1 && wgmma_enabled(device) && wg::supported_ks(ks);
  size_t smem = 0;
  if (hopper) {
    wg::geometry(base, ks);
    smem = wg::smem_bytes(base, ks);
  } else {
    tc::geometry(base, ks, tc::tile_bn(tile));
    smem = tc::smem_bytes(base, ks, tc::stages_for(ks), tc::tile_bm(tile));
  }
  if (smem > static_cast<size_t>(optin)) return false;  // very long dilations: cuDNN takes it
  // The WN gate this conv's merge can compute, and whether the split ranges merge in a cluster.
  const auto gate = absorbable_gate(ctx, node_index, base, hopper);
  bool cluster = gate && gate_cluster_ok(*gate, base, tile, cout, ks, smem);
  GateParams gp;
  if (gate) {
    const ir::Node& ua = g.nodes[static_cast<size_t>(gate->unary_a)];
    const ir::Node& ub = g.nodes[static_cast<size_t>(gate->unary_b)];
    gp.a = static_cast<int>(gate->a.c0);
    gp.b = static_cast<int>(gate->b.c0);
    gp.len = static_cast<int>(gate->a.len);
    gp.code_a = ew_code(ua.op);
    gp.code_b = ew_code(ub.op);
    gp.alpha_a = ua.attrs.get_float("alpha", 0.01f);
    gp.alpha_b = ub.attrs.get_float("alpha", 0.01f);
    gp.a_is_lhs = gate->a_is_lhs ? 1 : 0;
  }
  if (cluster) {  // only where every cluster runs at once; the merge kernel otherwise
    tc::Params q = base;
    q.cout = gate_cluster_cout(gp.len);
    cluster = gate_clusters_fit(q, ks, n, optin, smem);
  }
  base.cluster_tile = cluster ? 1 : 0;
  const size_t partial_bytes =
      cluster ? 0 : tc::split_partial_floats(n, cout, base.t_out, base.splits, base.split_planes) * sizeof(float);
  ctx.need_workspace(partial_bytes);
  {  // 18 (wgmma: 4) cudaFuncSetAttribute calls: once per device and kernel family, not per conv
    static std::mutex mutex;
    static std::vector<std::pair<int, bool>> prepared;
    std::lock_guard<std::mutex> lock(mutex);
    if (std::find(prepared.begin(), prepared.end(), std::make_pair(device, hopper)) == prepared.end()) {
      check_cuda(hopper ? wg::prepare(optin) : tc::prepare(optin), "tensor-core conv shared memory opt-in", node.name);
      prepared.emplace_back(device, hopper);
    }
  }
  if (cluster) {
    base.cout = gate_cluster_cout(gp.len);
    gate_clusters.fetch_add(1);
  }
  // Split once per process, on the device: the weights are constants, and every executable that
  // splits the same constant's storage the same way (a voice's segment at another length, say)
  // shares the device copy (core/shared_by_key.h, storage_key). The key holds everything the split reads.
  const Tensor& wc = wv.constant;
  const auto t_key = std::chrono::steady_clock::now();
  const std::string key = storage_key(wc) + "|" + ir::op_name(node.op) + "|v" + std::to_string(v.cout) + "," + std::to_string(v.cin) + "," +
                          std::to_string(v.ks) + "," + std::to_string(v.shuffle) + "|cl" + std::to_string(cluster) + "," +
                          std::to_string(gp.a) + "," + std::to_string(gp.b) + "," + std::to_string(gp.len) + "|tf32 " +
                          std::to_string(tf32) + "|hopper " + std::to_string(hopper) + "|" + std::to_string(base.cout) + "," +
                          std::to_string(cin) + "," + std::to_string(cout) + "," + std::to_string(ks);
  const auto t_split = std::chrono::steady_clock::now();
  bool made = false;
  const std::shared_ptr<const DeviceFloats> split = shared_by_key<DeviceFloats>(key, [&] {
    made = true;
    const Tensor wf = wc.dtype() == DType::Float32 ? wc : wc.to(DType::Float32);
    std::vector<float> w = virtual_weights(node, v, wf.data<float>());
    if (cluster) w = gate_cluster_weights(w, gp, cin, ks);
    // tf32: the weights rounded to TF32 (their lo parts zero), the activations still split: about
    // the weights' rounding error, and no separate kernel (a mode flag in the loop cost registers).
    if (tf32)
      for (float& x : w) {
        float h, l;
        tc::split_tf32_host(x, h, l);
        x = h;
      }
    return split_weights_on_device(w, hopper ? cout : base.cout, cin, ks, hopper, node.name);
  });
  if (env_is("LOCKSTEP_CUDA_COMPILE_TIMES", "1")) {  // where a tensor-core conv's record time goes
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::fprintf(stderr, "lockstep cuda tc conv %s: key %.2f ms, split %s %.2f ms (splits %d, cluster %d, hopper %d, t_out %d)\n",
                 node.name.c_str(), ms(t_key, t_split), made ? "made" : "shared", ms(t_split, std::chrono::steady_clock::now()),
                 base.splits, cluster ? 1 : 0, hopper ? 1 : 0, base.t_out);
  }
  base.wp = split->ptr;
  const ir::ValueId x = node.inputs[0], y = node.outputs[0];
  const ir::ValueId bias = node.inputs.size() > 2 ? node.inputs[2] : ir::kNoValue;
  ir::ValueId z = ir::kNoValue;
  const size_t fused = fuse_post(g, node, base, &z);
  const Context* c = &ctx;
  const std::string name = node.name;
  const std::string kernel = v.shuffle > 1 ? "conv_transpose_3xtf32_s" + std::to_string(v.shuffle) + "_k" + std::to_string(ks) +
                                                (base.splits > 1 ? "_split" + std::to_string(base.splits) : "") + (fused ? "+epilogue" + std::to_string(fused) : "") :
                             tf32 ? "conv1d_tf32w_k" + std::to_string(ks) + (hopper ? "_wgmma" : "") :
                             hopper ? "conv1d_3xtf32_wgmma_k" + std::to_string(ks) + (fused ? "+epilogue" + std::to_string(fused) : "") :
                             "conv1d_3xtf32_k" + std::to_string(ks) + "_tile" + std::to_string(tc::tile_bm(tile)) + "x" +
                             std::to_string(tc::tile_bn(tile)) +
                             (base.splits > 1 ? "_split" + std::to_string(base.splits) : "") + (cluster ? "_cluster" : "") +
                             (fused ? "+epilogue" + std::to_string(fused) : "");
  // The launch reading `input` with LeakyRelu(alpha) applied as it is read (alpha 1: none); with
  // a gate output, the merge computes the WN gate into it instead of storing y.
  auto launch_from = [=](ir::ValueId input, float alpha, GateParams gate = {}, ir::ValueId gate_out = ir::kNoValue) {
    return [=](cudaStream_t s) {
      tc::Params p = base;
      p.x = c->fptr(input);
      p.x_vec = base.x_vec && reinterpret_cast<uintptr_t>(p.x) % 16 == 0;
      p.pre_alpha = alpha;
      p.y = c->fptr(y);
      p.bias = bias == ir::kNoValue ? nullptr : c->fptr(bias);
      p.z = z == ir::kNoValue ? nullptr : c->fptr(z);
      p.partial = partial_bytes ? static_cast<float*>(c->workspace()) : nullptr;
      p.merge_elsewhere = gate_out != ir::kNoValue;
      (void)split;  // keeps the split weights alive with the program
      if (cluster) {  // the cluster merges: the gate, or y at its real rows (eager runs)
        GateParams cp = gate;
        cp.y = gate_out == ir::kNoValue ? nullptr : c->fptr(gate_out);
        check_cuda(launch_gate_cluster(p, cp, ks, n, smem, s), "tensor-core gate cluster conv launch", name);
        return;
      }
      check_cuda(hopper ? wg::launch(p, ks, n, s) : tc::launch(p, ks, tile, n, s), "tensor-core conv launch", name);
      if (gate_out == ir::kNoValue) return;
      GateParams gp = gate;
      gp.y = c->fptr(gate_out);
      check_cuda(launch_gate_merge(p, gp, n, s), "gate merge launch", name);
    };
  };
  program.launches.push_back({kernel, launch_from(x, 1.0f, gp)});
  // The same conv with the WN gate in its merge (graph replay; the executor keeps it where the
  // gate's bytes may be written this early, see Absorption).
  if (gate) {
    const ir::Node& ua = g.nodes[static_cast<size_t>(gate->unary_a)];
    const ir::Node& ub = g.nodes[static_cast<size_t>(gate->unary_b)];
    const size_t plain = program.launches.size() - 1;
    Launch gated{kernel + "+gate_" + ir::op_name(ua.op) + "_" + ir::op_name(ub.op), launch_from(x, 1.0f, gp, gate->out)};
    gated.when = Launch::When::kGraphOnly;
    program.launches.push_back(std::move(gated));
    ctx.absorptions.push_back({{node_index, {gate->slice_a, gate->slice_b, gate->unary_a, gate->unary_b}, {gate->out}, {}, {}},
                               plain, plain + 1});
  }
  // The same launch reading the LeakyRelu producer's input (graph replay only; the executor
  // keeps it where that input survives until here, see PrologueFusion). Every output-channel tile
  // repeats the in-place pass over each input chunk (and its barrier), so it pays only where one
  // tile covers the outputs: H200 2026-12-01, all HiFi-GAN resblock convs fused against none, net
  // ms per channel width: 8/16/32 channels -0.025 each on seed, 32 -0.054 on low, -0.041 on ljs;
  // 64 -0.015 / -0.004 / +0.041; 128 +0.022 (low) and +0.206 (ljs); 256 +0.109 (ljs). Applying it
  // on every read saved the pass but raised the kernel's register spills (k3 16 -> 164 bytes). A
  // conv with the gate in its merge takes no prologue: one graph-only launch per node.
  // LOCKSTEP_CUDA_FUSE_PROLOGUE=1 fuses every eligible conv, =0 none; LOCKSTEP_CUDA_PROLOGUE_MAX_COUT=n
  // moves the width bar (A/B timing).
  const char* max_cout_env = std::getenv("LOCKSTEP_CUDA_PROLOGUE_MAX_COUT");
  const int max_cout = max_cout_env && *max_cout_env ? std::atoi(max_cout_env) : tc::kPrologueMaxCout;
  const bool prologue_ok = env_is("LOCKSTEP_CUDA_FUSE_PROLOGUE", "1") ||
                           (!env_is("LOCKSTEP_CUDA_FUSE_PROLOGUE", "0") && cout <= max_cout);
  const int producer = !gate && prologue_ok ? leaky_producer(ctx, node_index) : -1;
  if (producer >= 0) {
    const ir::Node& l = g.nodes[static_cast<size_t>(producer)];
    const size_t plain = program.launches.size() - 1;
    Launch with_prologue{kernel + "+prologue", launch_from(l.inputs[0], l.attrs.get_float("alpha", 0.01f))};
    with_prologue.when = Launch::When::kGraphOnly;
    program.launches.push_back(std::move(with_prologue));
    ctx.prologues.push_back({producer, node_index, l.inputs[0], plain, plain + 1});
  }
  recorded.fetch_add(1);
  record_epilogue(ctx, node_index, program, ir::kNoValue, fused);
  return true;
}

int conv_tc_recorded_count() { return recorded.load(); }
int gate_cluster_recorded_count() { return gate_clusters.load(); }

}  // namespace lockstep::cuda
