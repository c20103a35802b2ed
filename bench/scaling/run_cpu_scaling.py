#!/usr/bin/env python3
"""Scaling on the CPU: lockstep CPU and ONNX Runtime CPU (same threads, fresh processes) against
frames (batch 1) and batch (at 1024 frames) on the seed decoder, each time beside its relative L2
error against float64; writes JSON lines, a markdown table and the plots.

  python3 bench/scaling/run_cpu_scaling.py [--build build] [--threads 2] [--rounds 1]

Models are exported once into --work (reused when present) by export.py, with a Python that has
torch (found automatically: this one, else /usr/bin/python3). Configurations run smallest first;
one whose single run is predicted (linearly in frames x batch, at the best ms per frame so far)
to exceed --max-run-s is skipped and listed as such, as is one at least as long and as wide as a
configuration that failed (e.g. out of memory under the --max-mem-gib cap)."""
import argparse, json, os, resource, shutil, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import rows as R  # noqa: E402

RUNS_BUDGET_MS = 3000  # timed runs per process aim at about this much time, within [MIN_RUNS, MAX_RUNS]
MIN_RUNS, MAX_RUNS = 2, 10


def memory_cap(gib):
    """preexec_fn: cap the child's address space, so a runaway allocation fails in that process
    (bad_alloc, reported) instead of pushing the shared machine into the OOM killer."""
    limit = int(gib * (1 << 30))
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def failure(p):
    why = (p.stderr or p.stdout).strip()[-300:]
    return f"exit {p.returncode}" + (f" (signal {-p.returncode})" if p.returncode < 0 else "") + (": " + why if why else "")


def python_with(module, candidates):
    for py in candidates:
        if py and shutil.which(py) and subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return py
    sys.exit(f"no Python among {candidates} imports {module}; install it (see bench/scaling/README.md)")


def predicted_ms(history, work):
    """Linear in work at the best ms per frame x batch measured so far (None before any): optimistic,
    so that one run slowed by a busy machine does not skip every larger configuration."""
    if not history:
        return None
    return work * min(ms / w for w, ms in history)


def runs_for(pred):
    return MAX_RUNS if pred is None else max(MIN_RUNS, min(MAX_RUNS, round(RUNS_BUDGET_MS / pred)))


def run_lockstep(a, stem, runs, timeout):
    cmd = [os.path.join(a.build, "lockstep_bench"), stem + ".onnx", "--backend", "cpu", "--threads", str(a.threads),
           "--runs", str(runs), "--warmup", "1", "--inputs", stem + ".z_p.npy", stem + ".y_mask.npy",
           "--ref", stem + ".ref64.npy"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=memory_cap(a.max_mem_gib))
    if p.returncode != 0:
        raise RuntimeError(failure(p))
    j = json.loads(p.stdout.strip().splitlines()[-1])
    return j["median_ms"], j["rel_l2"], j["compile_ms"], j["min_ms"]


def run_ort(a, py, stem, runs, timeout):
    import numpy as np
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([py, os.path.join(a.tools, "ort_run.py"), stem + ".onnx", out, str(a.threads),
                            stem + ".z_p.npy", stem + ".y_mask.npy", "--runs", str(runs)],
                           capture_output=True, text=True, timeout=timeout, preexec_fn=memory_cap(a.max_mem_gib))
        if p.returncode != 0:
            raise RuntimeError(failure(p))
        j = json.loads(p.stdout.strip().splitlines()[-1])
        out_file = os.path.join(out, sorted(os.listdir(out))[0])
        return j["median_ms"], R.rel_l2(np.load(out_file), np.load(stem + ".ref64.npy")), j["load_ms"], None


def ensure_export(a, py, preset, frames, batch):
    stem = os.path.join(a.work, R.stem_name(preset, frames, batch))
    if not all(os.path.exists(stem + ext) for ext in (".onnx", ".z_p.npy", ".y_mask.npy", ".ref64.npy")):
        subprocess.run([py, os.path.join(HERE, "export.py"), "--preset", preset, "--frames", str(frames),
                        "--batch", str(batch), "--out", stem, "--tools", a.tools],
                       check=True, capture_output=True, text=True)
    return stem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="folder with lockstep_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="fresh processes of each runtime per config (median)")
    ap.add_argument("--presets", default="seed")
    ap.add_argument("--frames", default=",".join(map(str, R.DEFAULT_FRAMES)))
    ap.add_argument("--batches", default=",".join(map(str, R.DEFAULT_BATCHES)))
    ap.add_argument("--batch-frames", type=int, default=R.BATCH_FRAMES)
    ap.add_argument("--max-run-s", type=float, default=5.0, help="skip configs predicted to run longer (one run)")
    ap.add_argument("--max-mem-gib", type=float, default=0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30),
                    help="address-space cap of each timed process (default: half the RAM)")
    ap.add_argument("--tools", default=os.path.join(ROOT, "..", "shared", "tools"))
    ap.add_argument("--work", default="/tmp/lockstep_scaling", help="exported models (kept, reused)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="cpu_scaling.jsonl/.md and plots")
    ap.add_argument("--torch-python", default="")
    ap.add_argument("--ort-python", default="")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--export-only", action="store_true", help="fill --work with the models, time nothing")
    a = ap.parse_args()
    torch_py = python_with("torch", [a.torch_python, sys.executable, "/usr/bin/python3"])
    ort_py = python_with("onnxruntime", [a.ort_python, sys.executable, "python3", "/usr/bin/python3"])
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    jsonl = os.path.join(a.out, "cpu_scaling.jsonl")
    open(jsonl, "w").close()
    cfgs = R.configs(R.parse_ints(a.frames), R.parse_ints(a.batches), a.batch_frames)
    if a.export_only:
        for preset in a.presets.split(","):
            for frames, batch in cfgs:
                print(ensure_export(a, torch_py, preset, frames, batch), flush=True)
        return
    all_rows = []
    for preset in a.presets.split(","):
        history = {"lockstep-cpu": [], "ort-cpu": []}
        failed_at = {rt: [] for rt in history}  # (frames, batch) that failed: configs at least as big in both are not tried
        for frames, batch in cfgs:
            # load1: the machine's 1-minute load before the config; lockstep's OpenMP kernels slow down
            # by tens of times when another process competes for the cores (see README.md).
            base = dict(machine="cpu", preset=preset, frames=frames, batch=batch, threads=a.threads,
                        load1=round(os.getloadavg()[0], 2))
            work = frames * batch
            preds = {rt: predicted_ms(h, work) for rt, h in history.items()}
            too_long = {rt: f"predicted {p / 1e3:.1f} s per run > {a.max_run_s:g} s"
                        for rt, p in preds.items() if p is not None and p > 1e3 * a.max_run_s}
            for rt, fails in failed_at.items():
                hit = next(((f, b) for f, b in fails if frames >= f and batch >= b), None)
                if hit:
                    too_long[rt] = f"failed at frames {hit[0]}, batch {hit[1]}"
            if len(too_long) == len(history):
                for rt, why in too_long.items():
                    row = dict(base, runtime=rt, skipped=why)
                    R.append_row(jsonl, row); all_rows.append(row)
                continue
            try:
                stem = ensure_export(a, torch_py, preset, frames, batch)
            except Exception as e:  # report, keep going
                msg = getattr(e, "stderr", "") or str(e)
                for rt in history:
                    row = dict(base, runtime=rt, error="export: " + msg.strip()[-300:])
                    R.append_row(jsonl, row); all_rows.append(row)
                continue
            results = {rt: [] for rt in history}
            runs = {rt: runs_for(preds[rt]) for rt in history}
            timeout = {rt: 120 + 0.02 * (preds[rt] or 0) * (runs[rt] + 1) for rt in history}
            errors = {}
            for _ in range(a.rounds):  # alternate the runtimes so machine noise hits both
                for rt, fn in (("lockstep-cpu", lambda r, t: run_lockstep(a, stem, r, t)),
                               ("ort-cpu", lambda r, t: run_ort(a, ort_py, stem, r, t))):
                    if rt in too_long or rt in errors:
                        continue
                    try:
                        results[rt].append(fn(runs[rt], timeout[rt]))
                    except Exception as e:
                        errors[rt] = str(e)[:400]
            for rt in history:
                row = dict(base, runtime=rt, runs=runs[rt], rounds=a.rounds)
                if rt in too_long:
                    row["skipped"] = too_long[rt]
                elif rt in errors:
                    row["error"] = errors[rt]
                    failed_at[rt].append((frames, batch))
                else:
                    ms = statistics.median(r[0] for r in results[rt])
                    row.update(ms=ms, rel_l2=results[rt][-1][1], process_ms=[round(r[0], 2) for r in results[rt]])
                    if results[rt][-1][3] is not None:
                        row["min_ms"] = min(r[3] for r in results[rt])
                    row["compile_ms" if rt == "lockstep-cpu" else "load_ms"] = results[rt][-1][2]
                    history[rt].append((work, ms))
                R.append_row(jsonl, row); all_rows.append(row)
    md = os.path.join(a.out, "cpu_scaling.md")
    R.write_text(md, R.markdown(all_rows, "lockstep-cpu", "ort-cpu",
                                f"CPU scaling, {a.threads} threads, medians of {a.rounds} fresh process(es) each "
                                f"(lockstep: lockstep_bench; ORT: ort_run.py), rel L2 against float64"))
    print(open(md).read())
    if not a.no_plot:
        py = python_with("matplotlib", [sys.executable, "/usr/bin/python3", os.path.join(ROOT, ".venv", "bin", "python")])
        subprocess.run([py, os.path.join(HERE, "plot.py"), jsonl, "--out", os.path.join(a.out, "scaling_cpu")])


if __name__ == "__main__":
    main()
