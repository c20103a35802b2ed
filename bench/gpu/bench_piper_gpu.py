#!/usr/bin/env python3
"""Whole Piper voices on the GPU (issue 22): Piper's own PyTorch model (piper/train/vits from the
piper-tts wheel, the medium architecture: hidden 192, 6 layers, HiFi-GAN "2" at 256 channels,
random seeded weights) in eager mode and under torch.compile, against lockstep cuda on the same
weights exported to ONNX as Piper exports them, batch 1, strict float32, scales (0, 1, 0), on
sentences of about 1, 4 and 12 seconds of audio, in one run. Prints JSON rows, then a table with
the real-time factors, the first call of a new length against a cached one, rel L2 against the
float64 PyTorch model and peak GPU memory.
Usage: bench_piper_gpu.py --bin DIR (lockstep_bench) --piper-src DIR (holds piper/train/vits) --work DIR
Environment: RUNS (20), SECONDS (1,4,12), COMPILE (1: also torch.compile), COMPILE_MODES (default),
BACKENDS (cuda: also e.g. cuda,vulkan, a table per extra backend)."""
import argparse, json, os, subprocess, sys, threading, time

SAMPLE_RATE = 22050
HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print(*a, flush=True)


def build_medium(seed=20261202):
    import torch
    from piper.train.vits.models import SynthesizerTrn
    torch.manual_seed(seed)
    m = SynthesizerTrn(
        n_vocab=256, spec_channels=513, segment_size=32, inter_channels=192, hidden_channels=192,
        filter_channels=768, n_heads=2, n_layers=6, kernel_size=3, p_dropout=0.0, resblock="2",
        resblock_kernel_sizes=(3, 5, 7), resblock_dilation_sizes=((1, 2), (2, 6), (3, 12)),
        upsample_rates=(8, 8, 4), upsample_initial_channel=256, upsample_kernel_sizes=(16, 16, 8),
        n_speakers=1, gin_channels=0, use_sdp=True)
    m.eval()
    with torch.no_grad():
        m.dec.remove_weight_norm()
    return m


def wrap(m):
    import torch

    class Voice(torch.nn.Module):  # as Piper's export_onnx.py wraps infer
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, text, text_lengths, scales):
            return self.m.infer(text, text_lengths, noise_scale=scales[0], length_scale=scales[1],
                                noise_scale_w=scales[2])[0].unsqueeze(1)
    return Voice().eval()


def export_onnx(path):
    """The seeded medium model exported as Piper exports a voice (opset 15, TorchScript exporter,
    batch and phonemes dynamic); returns the path."""
    import numpy as np, torch
    ids = np.random.default_rng(5).integers(1, 256, size=(1, 50)).astype(np.int64)
    with torch.no_grad():
        dummy = (torch.from_numpy(ids), torch.LongTensor([50]), torch.FloatTensor([0.667, 1.0, 0.8]))
        axes = {"input": {0: "batch_size", 1: "phonemes"}, "input_lengths": {0: "batch_size"},
                "output": {0: "batch_size", 2: "time"}}
        torch.onnx.export(wrap(build_medium()), dummy, path, opset_version=15, input_names=["input", "input_lengths", "scales"],
                          output_names=["output"], dynamic_axes=axes, dynamo=False)
    return path


def cuda_ms(fn, runs):
    import torch
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def device_used_mib():
    """Memory in use on the GPU (nvidia-smi, every process), MiB; None where it cannot say."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return int(out.split()[0])
    except Exception:  # noqa: BLE001 - the figure is left out, the benchmark goes on
        return None


def run_sampled(cmd):
    """subprocess.run(cmd) while sampling the device's memory in use every 0.1 s: the result and the
    most the device held above what it held just before (this process's own tensors stay put meanwhile),
    i.e. the child's peak including its CUDA context."""
    base, peak, done = device_used_mib(), [None], threading.Event()
    def sample():
        while not done.is_set():
            m = device_used_mib()
            if m is not None: peak[0] = m if peak[0] is None else max(peak[0], m)
            done.wait(0.1)
    t = threading.Thread(target=sample); t.start()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    finally:
        done.set(); t.join()
    return p, (peak[0] - base if base is not None and peak[0] is not None else None)


def wall_ms(fn):
    import torch
    torch.cuda.synchronize(); t = time.perf_counter(); fn(); torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3


def strict_fp32_args():
    """--bin, --piper-src and --work parsed, Piper's model code importable, the work folder made,
    and torch held to strict float32 (TF32 off): what every Piper GPU benchmark starts with."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--piper-src", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.piper_src)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(a.work, exist_ok=True)
    return a


def main():
    a = strict_fp32_args()
    import numpy as np, torch
    runs = int(os.environ.get("RUNS", "20"))
    targets = [float(s) for s in os.environ.get("SECONDS", "1,4,12").split(",")]
    voice = wrap(build_medium()).cuda()
    rng = np.random.default_rng(5)
    pool = rng.integers(1, 256, size=(1, 600)).astype(np.int64)
    scales = torch.tensor([0.0, 1.0, 0.0], device="cuda")

    def feeds(n):
        return torch.from_numpy(pool[:, :n]).cuda(), torch.tensor([n], device="cuda"), scales

    def seconds(n):
        with torch.no_grad():
            return voice(*feeds(n)).shape[-1] / SAMPLE_RATE
    # Phoneme counts whose audio is nearest each target (the seeded durations are what they are).
    counts = []
    for t in targets:
        lo, hi = 2, 600
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if seconds(mid) < t else (lo, mid)
        counts.append(hi)
    log(json.dumps(dict(phonemes=counts, seconds=[round(seconds(n), 3) for n in counts])))
    onnx_path = export_onnx(f"{a.work}/piper_medium.onnx")
    voice64 = wrap(build_medium()).double().cuda()
    rows = []
    for k, n in enumerate(counts):
        d = f"{a.work}/s{k}"
        os.makedirs(d, exist_ok=True)
        np.save(f"{d}/input.npy", pool[:, :n]); np.save(f"{d}/input_lengths.npy", np.array([n], np.int64))
        np.save(f"{d}/scales.npy", np.array([0, 1, 0], np.float32))
        with torch.no_grad():
            ref = voice64(feeds(n)[0], feeds(n)[1], scales.double()).cpu().numpy()
        np.save(f"{d}/ref64.npy", ref)
        # A length 5% shorter of the same text: the prime of the "after a near length" first call,
        # which leaves out the once-per-process preparation of kernels only long sentences use.
        m = max(2, n - max(1, n // 20))
        os.makedirs(f"{d}/near", exist_ok=True)
        np.save(f"{d}/near/input.npy", pool[:, :m]); np.save(f"{d}/near/input_lengths.npy", np.array([m], np.int64))
        np.save(f"{d}/near/scales.npy", np.array([0, 1, 0], np.float32))
        rows.append(dict(k=k, phonemes=n, samples=int(ref.size), ref=ref, dir=d))
    rel = lambda y, r: float(np.linalg.norm(y.reshape(-1) - r.reshape(-1)) / np.linalg.norm(r))
    # torch.compile once per mode, warmed on every length (dynamo recompiles for new shapes, then
    # marks them dynamic); compile_s is that warm-up's wall time.
    compiled, compile_s = {}, {}
    for mode in ([m for m in os.environ.get("COMPILE_MODES", "default").split(",") if m]
                 if os.environ.get("COMPILE", "1") == "1" else []):
        try:
            torch._dynamo.reset()
            cm = torch.compile(voice, mode=mode)
            t = time.perf_counter()
            with torch.no_grad():
                for r in rows:
                    cm(*feeds(r["phonemes"]))
            torch.cuda.synchronize()
            compiled[mode], compile_s[mode] = cm, time.perf_counter() - t
        except Exception as e:  # noqa: BLE001
            log(json.dumps(dict(peer=f"torch-compile {mode}", error=str(e)[:300])))
    table = []
    for r in rows:
        n, other = r["phonemes"], rows[(r["k"] + 1) % len(rows)]["phonemes"]
        out = {}
        with torch.no_grad():
            voice(*feeds(other)); torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            first = wall_ms(lambda: voice(*feeds(n)))
            y = voice(*feeds(n))
            out["eager"] = dict(ms=cuda_ms(lambda: voice(*feeds(n)), runs), first_ms=first,
                                rel_l2=rel(y.cpu().numpy(), r["ref"]) if y.numel() == r["samples"] else None,
                                samples=int(y.numel()), peak_mb=torch.cuda.max_memory_allocated() / 2**20)
        log(json.dumps(dict(sentence=r["k"], peer="torch-eager", **out["eager"])))
        for mode, cm in compiled.items():
            try:
                with torch.no_grad():
                    torch.cuda.reset_peak_memory_stats()
                    y = cm(*feeds(n))
                    out[mode] = dict(ms=cuda_ms(lambda: cm(*feeds(n)), runs), compile_s=compile_s[mode],
                                     rel_l2=rel(y.cpu().numpy(), r["ref"]) if y.numel() == r["samples"] else None,
                                     samples=int(y.numel()), peak_mb=torch.cuda.max_memory_allocated() / 2**20)
            except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
                out[mode] = dict(error=str(e)[:300])
            log(json.dumps(dict(sentence=r["k"], peer=f"torch-compile {mode}", **out[mode])))
        files = lambda d: [f"{d}/{x}.npy" for x in ("input", "input_lengths", "scales")]
        for backend in os.environ.get("BACKENDS", "cuda").split(","):
            cmd = [os.path.join(a.bin, "lockstep_bench"), onnx_path, "--backend", backend, "--warmup", "0",
                   "--runs", str(runs if backend == "cuda" else 3), "--inputs", *files(r["dir"]),
                   "--prime", *files(rows[(r["k"] + 1) % len(rows)]["dir"]), "--ref", f"{r['dir']}/ref64.npy"]
            p, device_mib = run_sampled(cmd)
            ls = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else dict(error=p.stderr[-400:])
            ls["same_length"] = ls.get("output_shape", [0])[-1] == r["samples"]
            ls["device_mib"] = device_mib
            out["lockstep" if backend == "cuda" else f"lockstep-{backend}"] = ls
            log(json.dumps(dict(sentence=r["k"], peer=f"lockstep-{backend}", **ls)))
            if backend == "cuda":  # the same first call after a near length (only its first_run_ms is used)
                near = [cmd[0], onnx_path, "--backend", backend, "--warmup", "0", "--runs", "1", "--inputs", *files(r["dir"]),
                        "--prime", *files(f"{r['dir']}/near")]
                p = subprocess.run(near, capture_output=True, text=True, timeout=400)
                nl = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else dict(error=p.stderr[-400:])
                ls["first_after_near_ms"] = nl.get("first_run_ms")
                log(json.dumps(dict(sentence=r["k"], peer="lockstep-cuda after a near length", **nl)))
        table.append((r, out))
    log("")
    log(f"Piper medium architecture, batch 1, fp32 strict, scales (0,1,0), median of {runs}; "
        "RTF = time / audio; torch: CUDA events; lockstep: host wall clock incl. copies")
    log("first/cached: a new length's first call after another sentence's length (a long sentence after a short one "
        "pays the once-per-process preparation of the kernels only long inputs use); near: after a length 5% shorter")
    log("GPU memory: eager's peak_memory_allocated (tensors, MB); lockstep's peak over what the device held before "
        "its process started (nvidia-smi, MiB: the whole process, its CUDA context, cuDNN/cuBLAS and arenas included)")
    log("| phonemes | audio s | lockstep RTF | first/cached | first/cached (near) | eager RTF | eager/lockstep | compile RTF (best) | compile/lockstep | eager first ms | lockstep first ms | rel L2 lockstep / eager | peak MB eager | lockstep process MiB |")
    log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r, out in table:
        audio_ms = r["samples"] / SAMPLE_RATE * 1e3
        ls, e = out["lockstep"], out["eager"]
        comp = [v["ms"] for k, v in out.items() if k not in ("eager", "lockstep") and "ms" in v]
        best = min(comp) if comp else None
        lms = ls.get("median_ms")
        f = lambda x, p=3: f"{x:.{p}f}" if isinstance(x, (int, float)) else "-"
        log(f"| {r['phonemes']} | {audio_ms / 1e3:.2f} | {f(lms / audio_ms if lms else None, 4)} | "
            f"{f(ls['first_run_ms'] / lms if lms else None, 2)} | "
            f"{f(ls['first_after_near_ms'] / lms if lms and ls.get('first_after_near_ms') else None, 2)} | {f(e['ms'] / audio_ms, 4)} | "
            f"{f(e['ms'] / lms if lms else None, 2)} | {f(best / audio_ms if best else None, 4)} | "
            f"{f(best / lms if best and lms else None, 2)} | {f(e['first_ms'], 1)} | {f(ls.get('first_run_ms'), 1)} | "
            f"{f(ls.get('rel_l2'), 8)} / {f(e.get('rel_l2'), 8)} | {f(e['peak_mb'], 0)} | {f(ls.get('device_mib'), 0)} |")


    others = sorted({k for _, out in table for k in out if k.startswith("lockstep-")})
    for k in others:
        log("")
        log(f"{k}: the same sentences (median of 3, host wall clock), against float64 PyTorch")
        log("| phonemes | audio s | ms | RTF | rel L2 | torch's length | first call ms |")
        log("|---|---|---|---|---|---|---|")
        for r, out in table:
            v = out.get(k, {})
            audio_ms = r["samples"] / SAMPLE_RATE * 1e3
            if "median_ms" not in v:
                log(f"| {r['phonemes']} | {audio_ms / 1e3:.2f} | {v.get('error', '?')[:80]} | | | | |")
                continue
            log(f"| {r['phonemes']} | {audio_ms / 1e3:.2f} | {v['median_ms']:.2f} | {v['median_ms'] / audio_ms:.4f} | "
                f"{v.get('rel_l2', float('nan')):.2e} | {v['same_length']} | {v['first_run_ms']:.1f} |")


if __name__ == "__main__":
    main()
