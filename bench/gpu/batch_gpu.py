#!/usr/bin/env python3
"""Batched throughput on the GPU (issue 47's GPU target, issue 48 point 3): Piper's own PyTorch model
(piper/train/vits, the medium architecture with seeded weights, as bench_piper_gpu.py builds it) on
padded batches of B rows, eager and under torch.compile, against lockstep cuda running the same rows
in the same batches as ragged batches (`lockstep_bench --ragged --batch-size B --lanes L`: each row
within its own length, its batch-1 bits checked). ROWS rows of 20-200 phonemes (seeded), Piper's
default scales (0.667, 1, 0.8), strict float32 everywhere (TF32 off in torch). Clips/s = ROWS over
the wall time of one pass over every row, warm (every shape met once), median of RUNS passes.
Prints JSON rows, then a markdown table.
Usage: batch_gpu.py --bin DIR (lockstep_bench) --piper-src DIR (holds piper/train/vits) --work DIR
Environment: ROWS (64), BATCHES (1,8,32,64), LANES (1,2,4), RUNS (5), WARMUP (1: lockstep's untimed passes
after the first), EAGER (1), COMPILE (1), COMPILE_BUDGET_S (240: torch.compile's warm-ups stop being started
past it), PREDICT (1; "1,0" also times lockstep with LOCKSTEP_PREDICT_SELECTIONS=0, every NonZero on the host)."""
import json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_piper_gpu import build_medium, export_onnx, log, strict_fp32_args, wall_ms, wrap  # noqa: E402

SCALES = (0.667, 1.0, 0.8)


def main():
    a = strict_fp32_args()
    import numpy as np, torch
    n_rows, runs = int(os.environ.get("ROWS", "64")), int(os.environ.get("RUNS", "5"))
    batches = [int(b) for b in os.environ.get("BATCHES", "1,8,32,64").split(",")]
    lanes = [int(x) for x in os.environ.get("LANES", "1,2,4").split(",") if x]
    rng = np.random.default_rng(11)
    lengths = rng.integers(20, 201, size=n_rows)
    ids = np.zeros((n_rows, int(lengths.max())), np.int64)
    for r, n in enumerate(lengths):
        ids[r, :n] = rng.integers(1, 256, size=n)
    np.save(f"{a.work}/input.npy", ids)
    np.save(f"{a.work}/input_lengths.npy", lengths.astype(np.int64))
    np.save(f"{a.work}/scales.npy", np.array(SCALES, np.float32))
    onnx_path = export_onnx(f"{a.work}/piper_medium.onnx")
    voice = wrap(build_medium()).cuda()
    scales = torch.tensor(SCALES, device="cuda")

    def chunks(b):  # the rows in order, b at a time, each batch padded to its longest row
        out = []
        for first in range(0, n_rows, b):
            n = lengths[first:first + b]
            out.append((torch.from_numpy(ids[first:first + b, :int(n.max())]).cuda(), torch.from_numpy(n).cuda()))
        return out

    def pass_ms(model, feeds):
        def one_pass():
            with torch.no_grad():
                for x, n in feeds:
                    model(x, n, scales)
        return wall_ms(one_pass)

    def timed(model, feeds):
        pass_ms(model, feeds)  # warm: every shape met once
        return sorted(pass_ms(model, feeds) for _ in range(runs))[runs // 2]

    results = {}
    for b in batches if os.environ.get("EAGER", "1") == "1" else []:
        feeds = chunks(b)
        ms = timed(voice, feeds)
        results[(b, "eager")] = n_rows * 1e3 / ms
        log(json.dumps(dict(batch=b, peer="torch-eager", pass_ms=round(ms, 2), clips_per_s=round(n_rows * 1e3 / ms, 1),
                            peak_mb=round(torch.cuda.max_memory_allocated() / 2**20))))
    if os.environ.get("COMPILE", "1") == "1":
        budget, spent = float(os.environ.get("COMPILE_BUDGET_S", "240")), 0.0
        torch._dynamo.reset()
        cm = torch.compile(voice, dynamic=True)
        for b in batches:
            if spent > budget:
                log(json.dumps(dict(batch=b, peer="torch-compile", skipped=f"compile budget {budget} s spent")))
                continue
            feeds = chunks(b)
            t = time.perf_counter()
            try:
                pass_ms(cm, feeds)
                warm_s = time.perf_counter() - t
                spent += warm_s
                ms = timed(cm, feeds)
            except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
                log(json.dumps(dict(batch=b, peer="torch-compile", error=str(e)[:300])))
                continue
            results[(b, "compile")] = n_rows * 1e3 / ms
            log(json.dumps(dict(batch=b, peer="torch-compile", warm_up_s=round(warm_s, 1), pass_ms=round(ms, 2),
                                clips_per_s=round(n_rows * 1e3 / ms, 1))))
    files = [f"{a.work}/{x}.npy" for x in ("input", "input_lengths", "scales")]
    predict = [x for x in os.environ.get("PREDICT", "1").split(",") if x]
    for b, lane_count, pr in [(b, l, pr) for b in batches for l in lanes for pr in predict]:
        cmd = [os.path.join(a.bin, "lockstep_bench"), onnx_path, "--backend", "cuda", "--ragged", "--batch-size", str(b),
               "--lanes", str(lane_count), "--runs", str(runs), "--warmup", os.environ.get("WARMUP", "1"), "--seed", "7", "--inputs", *files]
        env = dict(os.environ, LOCKSTEP_PREDICT_SELECTIONS=pr)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        if p.returncode:
            log(json.dumps(dict(batch=b, lanes=lane_count, predict=pr, peer="lockstep", error=p.stderr[-300:])))
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results[(b, f"lockstep{lane_count}" + ("" if pr == "1" else " hosted"))] = r["clips_per_s"]
        log(json.dumps(dict(batch=b, peer="lockstep", predict=pr, **{k: r.get(k) for k in (
            "lanes", "first_pass_ms", "median_ms", "clips_per_s", "audio_s", "rows_same_bits_as_batch1", "rows_failed", "first_error",
            "timed_segments_compiled", "peak_rss_mb")})))
    cols = [f"lockstep{l}" + ("" if pr == "1" else " hosted") for l in lanes for pr in predict]
    head = ["batch", "torch eager clips/s", "torch.compile clips/s"] + [c.replace("lockstep", "lockstep ") + " lane(s)" for c in cols] + \
        ["best lockstep / eager", "best lockstep / torch.compile"]
    log("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    fmt = lambda v: f"{v:.1f}" if v else "-"
    for b in batches:
        best = max([results.get((b, f"lockstep{l}"), 0) for l in lanes])  # the default (predicted) runs
        eager, comp = results.get((b, "eager")), results.get((b, "compile"))
        cells = [str(b), fmt(eager), fmt(comp)] + [fmt(results.get((b, c))) for c in cols] + \
            [f"{best / eager:.2f}x" if eager and best else "-", f"{best / comp:.2f}x" if comp and best else "-"]
        log("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
