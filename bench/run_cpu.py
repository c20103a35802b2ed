#!/usr/bin/env python3
"""lockstep CPU against ONNX Runtime CPU, side by side in one run, same inputs, same threads.

  python3 bench/run_cpu.py [--threads N] [--rounds R] [--runs K] [--build DIR] [--models DIR]

Rounds alternate the two runtimes (each round is a fresh process of each) so that machine
noise hits both; the table reports the median over rounds of each process's median, the
ratio ORT/lockstep (> 1 means lockstep is faster) and the relative L2 error of each output
against the float64 oracle."""
import argparse, json, os, statistics, subprocess, sys, tempfile
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

def rel_l2(out, ref):
    out = out.astype(np.float64).ravel(); ref = ref.astype(np.float64).ravel()
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--only", default="", help="comma-separated model stems")
    ap.add_argument("--ort-run", default=os.path.join(ROOT, "..", "shared", "tools", "ort_run.py"),
                    help="the shared ONNX Runtime runner (ort_run.py)")
    args = ap.parse_args()
    stems = sorted(f[:-5] for f in os.listdir(args.models) if f.endswith(".onnx"))
    if args.only: stems = [s for s in stems if s in args.only.split(",")]
    ort_run = args.ort_run
    bench = os.path.join(args.build, "lockstep_bench")
    rows = []
    for stem in stems:
        base = os.path.join(args.models, stem)
        inputs = [base + ".z_p.npy", base + ".y_mask.npy"]
        ref = np.load(base + ".ref64.npy")
        ls_ms, ort_ms, ls_err, ort_err, compile_ms = [], [], None, None, None
        for _ in range(args.rounds):
            r = subprocess.run([bench, base + ".onnx", "--backend", "cpu", "--threads", str(args.threads),
                                "--runs", str(args.runs), "--inputs", *inputs, "--ref", base + ".ref64.npy"],
                               check=True, capture_output=True, text=True)
            j = json.loads(r.stdout.strip().splitlines()[-1])
            ls_ms.append(j["median_ms"]); ls_err = j["rel_l2"]; compile_ms = j["compile_ms"]
            with tempfile.TemporaryDirectory() as out:
                r = subprocess.run([sys.executable, ort_run, base + ".onnx", out, str(args.threads), *inputs,
                                    "--runs", str(args.runs)], check=True, capture_output=True, text=True)
                j = json.loads(r.stdout.strip().splitlines()[-1])
                ort_ms.append(j["median_ms"])
                out_file = os.path.join(out, sorted(os.listdir(out))[0])
                ort_err = rel_l2(np.load(out_file), ref)
        ls, ort = statistics.median(ls_ms), statistics.median(ort_ms)
        rows.append((stem, ls, ort, ort / ls, ls_err, ort_err, compile_ms))
        print(json.dumps({"model": stem, "lockstep_ms": ls, "ort_ms": ort, "ort_over_lockstep": ort / ls,
                          "lockstep_rel_l2": ls_err, "ort_rel_l2": ort_err, "lockstep_compile_ms": compile_ms}),
              file=sys.stderr, flush=True)
    print(f"| model | threads | lockstep CPU ms | ORT CPU ms | ORT/lockstep | lockstep rel L2 | ORT rel L2 | lockstep compile ms |")
    print("|---|---|---|---|---|---|---|---|")
    for stem, ls, ort, ratio, le, oe, cm in rows:
        print(f"| {stem} | {args.threads} | {ls:.2f} | {ort:.2f} | {ratio:.2f}x | {le:.2e} | {oe:.2e} | {cm:.0f} |")

if __name__ == "__main__":
    main()
