#!/usr/bin/env python3
"""Scaling on the GPU (issue 6): lockstep CUDA (strict fp32) and PyTorch eager fp32 against frames
(batch 1) and batch (at 1024 frames) on the VITS presets, each time beside its relative L2 error
against the same module in float64. Writes OUT/scaling.jsonl and OUT/scaling.md as it goes.

  scaling_gpu.py --bin DIR (lockstep_bench) --tools DIR (vits_export.py) --work DIR --out DIR
                 [--presets seed,low,ljs] [--frames 128,...,8192] [--batches 1,4,16] [--budget-s 200]
                 [--device cuda|cpu] [--backend cuda|cpu] [--jobs N]

Phase 1 exports every configuration's ONNX in --jobs processes in parallel, tracing on --device
(falling back to the CPU), before any timing; phase 2 times them one at a time, smallest work
first, and starts no configuration once --budget-s is spent (those are listed as skipped). torch.compile is not repeated here:
bench_gpu.py times it at batch 1, 1024 frames. --device cpu --backend cpu is the dry run."""
import argparse, json, multiprocessing, os, statistics, subprocess, sys, time, traceback
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scaling"))
import rows as R  # noqa: E402

RUNS_BUDGET_MS = 1000  # timed runs per runtime aim at about this much time, within [MIN_RUNS, MAX_RUNS]
MIN_RUNS, MAX_RUNS = 5, 50
EAGER_WARMUP = 3
LOCKSTEP_WARMUP = 3
# Relative cost of one frame per preset (batch-1 1024-frame GPU times in bench/RESULTS.md), to order work.
PRESET_COST = {"seed": 5.6, "low": 3.9, "ljs": 22.7}


def log(*a):
    print(*a, flush=True)


def _export_one(args):
    """Pool worker: export one configuration's ONNX and inputs (no oracle; phase 2 computes it)."""
    tools, preset, frames, batch, stem, device = args
    import torch
    torch.set_num_threads(2)
    import export as E
    t0 = time.time()
    ve = E.load_vits_export(tools)
    if os.path.exists(stem + ".onnx"):
        return stem, None, 0.0
    try:
        E.export(ve, preset, frames, batch, stem, with_ref=False, export_device=device)
        return stem, None, time.time() - t0
    except Exception as e:
        first = f"{type(e).__name__}: {str(e)[-200:]}"
    try:  # the trace on the GPU failed: the CPU is slower but is how bench_gpu.py exports
        E.export(ve, preset, frames, batch, stem, with_ref=False, export_device="cpu")
        return stem, None, time.time() - t0
    except Exception as e:  # report, keep going
        return stem, f"export ({device}: {first}); cpu: {type(e).__name__}: {str(e)[-200:]}", time.time() - t0


def runs_for(ms):
    return max(MIN_RUNS, min(MAX_RUNS, round(RUNS_BUDGET_MS / max(ms, 1e-3))))


def timed(device, fn, iters, warm):
    """Median ms: CUDA events on cuda (bench_peers.med_cuda's recipe), perf_counter on cpu."""
    import torch
    for _ in range(warm):
        fn()
    ts = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b))
    else:
        for _ in range(iters):
            t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


class Modules:
    """One float32 and one float64 copy per preset on the device (weights do not depend on T or B)."""
    def __init__(self, vits_export, device):
        self.ve, self.device, self.cache = vits_export, device, {}

    def get(self, preset):
        if preset not in self.cache:
            import export as E
            m32 = E.build_module(self.ve, preset).float().to(self.device)
            m64 = E.build_module(self.ve, preset).double().to(self.device)
            self.cache[preset] = (m32, m64)
        return self.cache[preset]


def eager_and_ref(mods, preset, stem, device):
    """Writes STEM.ref64.npy (float64 module) and returns (eager fp32 ms, rel L2, iters)."""
    import numpy as np, torch
    m32, m64 = mods.get(preset)
    z, mk = np.load(stem + ".z_p.npy"), np.load(stem + ".y_mask.npy")
    with torch.no_grad():
        ref = m64(torch.from_numpy(z).double().to(device), torch.from_numpy(mk).double().to(device)).cpu().numpy()
        np.save(stem + ".ref64.npy", ref)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        zc, mc = torch.from_numpy(z).to(device), torch.from_numpy(mk).to(device)
        out = m32(zc, mc)
        err = R.rel_l2(out.double().cpu().numpy(), ref)
        one = timed(device, lambda: m32(zc, mc), 1, EAGER_WARMUP)  # warm, and sizes the timed runs
        iters = runs_for(one)
        ms = timed(device, lambda: m32(zc, mc), iters, 0)
        del out, zc, mc
    if device == "cuda":
        torch.cuda.empty_cache()  # leave the GPU's memory to lockstep_bench's process
    return ms, err, iters


def lockstep(binary, backend, stem, runs, timeout):
    cmd = [binary, stem + ".onnx", "--backend", backend, "--inputs", stem + ".z_p.npy", stem + ".y_mask.npy",
           "--ref", stem + ".ref64.npy", "--runs", str(runs), "--warmup", str(LOCKSTEP_WARMUP)]
    if backend == "cuda":
        cmd += ["--precision", "fp32"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        why = (p.stderr or p.stdout).strip()[-300:]
        raise RuntimeError(f"exit {p.returncode}" + (f" (signal {-p.returncode})" if p.returncode < 0 else "") + ": " + why)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--presets", default="seed,low,ljs")
    ap.add_argument("--frames", default=",".join(map(str, R.DEFAULT_FRAMES)))
    ap.add_argument("--batches", default=",".join(map(str, R.DEFAULT_BATCHES)))
    ap.add_argument("--batch-frames", type=int, default=R.BATCH_FRAMES)
    ap.add_argument("--budget-s", type=float, default=200, help="start no configuration after this many seconds")
    ap.add_argument("--device", default="cuda", help="PyTorch eager device (cpu for a dry run)")
    ap.add_argument("--backend", default="cuda", help="lockstep backend (cpu for a dry run)")
    ap.add_argument("--jobs", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)))
    a = ap.parse_args()
    t_start = time.time()
    sys.path.insert(0, os.path.abspath(a.tools))
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    jsonl, md = os.path.join(a.out, "scaling.jsonl"), os.path.join(a.out, "scaling.md")
    open(jsonl, "w").close()
    presets = a.presets.split(",")
    cfgs = R.configs(R.parse_ints(a.frames), R.parse_ints(a.batches), a.batch_frames)
    work = sorted(((p, t, b) for p in presets for t, b in cfgs), key=lambda c: PRESET_COST.get(c[0], 10) * c[1] * c[2])
    stems = {c: os.path.join(a.work, R.stem_name(*c)) for c in work}

    # Phase 1: exports in parallel on the CPU cores, before any timing.
    errors = {}
    # spawn, not fork: each worker initialises CUDA itself to run its trace on the GPU.
    try:
        with ProcessPoolExecutor(max_workers=a.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for stem, err, s in pool.map(_export_one, [(a.tools, *c, stems[c], a.device) for c in work]):
                if err:
                    errors[stem] = err
    except Exception as e:  # a worker died (crash, out of memory): the models written so far still run
        log(f"# export pool failed: {type(e).__name__}: {e}")
    for stem in stems.values():
        if stem not in errors and not os.path.exists(stem + ".onnx"):
            errors[stem] = "export: no model written (the export worker died)"
    log(f"# exported {len(work) - len(errors)}/{len(work)} configurations in {time.time() - t_start:.0f} s"
        f" ({a.jobs} processes)")

    # Phase 2: one configuration at a time.
    import torch, vits_export
    lp, pp = f"lockstep-{a.backend}", f"torch-eager-{a.device}"
    mods = Modules(vits_export, a.device)
    binary = os.path.join(a.bin, "lockstep_bench")
    all_rows = []
    for c in work:
        preset, frames, batch = c
        stem = stems[c]
        base = dict(machine="gpu" if a.device == "cuda" else "dry-run", preset=preset, frames=frames, batch=batch)
        if time.time() - t_start > a.budget_s:
            rows = [dict(base, runtime=rt, skipped=f"time budget {a.budget_s:g} s spent") for rt in (lp, pp)]
        elif stem in errors:
            rows = [dict(base, runtime=rt, error=errors[stem]) for rt in (lp, pp)]
        else:
            t0 = time.time()
            er = dict(base, runtime=pp)
            try:
                ms, err, iters = eager_and_ref(mods, preset, stem, a.device)
                er.update(ms=ms, rel_l2=err, runs=iters)
            except Exception as e:  # report, keep going (the oracle may be missing then too)
                er["error"] = f"{type(e).__name__}: {str(e)[-300:]}"
                traceback.print_exc()
                if a.device == "cuda":
                    torch.cuda.empty_cache()
            lr = dict(base, runtime=lp)
            if os.path.exists(stem + ".ref64.npy"):
                runs = runs_for(er["ms"]) if "ms" in er else MIN_RUNS
                try:
                    left = a.budget_s + 60 - (time.time() - t_start)  # the step's own timeout is near
                    j = lockstep(binary, a.backend, stem, runs, timeout=max(30, min(120, left)))
                    lr.update(ms=j["median_ms"], rel_l2=j.get("rel_l2"), runs=runs, compile_ms=j["compile_ms"],
                              min_ms=j.get("min_ms"), device_ms=j.get("device_median_ms"))
                except Exception as e:
                    lr["error"] = f"{type(e).__name__}: {str(e)[-400:]}"
            else:
                lr["error"] = "no float64 oracle (see the eager row's error)"
            lr["wall_s"] = round(time.time() - t0, 1)
            rows = [lr, er]
        for r in rows:
            R.append_row(jsonl, r)
        all_rows += rows
        R.write_text(md, R.markdown(all_rows, lp, pp, title(a, lp, pp)))
    log("")
    log(open(md).read())
    log(f"# scaling step took {time.time() - t_start:.0f} s")


def title(a, lp, pp):
    return (f"Scaling: {lp} (lockstep_bench, host wall clock incl. copies, strict fp32) and {pp} fp32 "
            f"({'CUDA events' if a.device == 'cuda' else 'perf_counter'}), medians; rel L2 against float64")


if __name__ == "__main__":
    main()
