#!/usr/bin/env python3
"""The CPU backend beside other work (issue 44): the real voice's committed sentences
(tests/fixtures/piper/sentences.json, Piper's default scales, seed 7) through lockstep's Python
package and ONNX Runtime at 1 and 2 threads, with 0, 1 and 2 busy processes
(`while True: pass`) started beside them, side by side in one run. Each cell is a fresh process
that loads the voice, runs every sentence once (each length compiled), then times --passes passes
over the sentences; a pass is the sum of its six calls. Printed: each cell's median pass, its
first and worst pass, slowdown from quiet, and lockstep's speed-up over ONNX Runtime.

  .venv/bin/python bench/under_load.py [--voice .cache/voices/en_US-joe-medium.onnx]
      [--threads 1 2] [--loads 0 1 2] [--passes 10] [--rounds 1] [--env K=V ...]

--rounds N repeats the sweep N times (runtimes alternating) and keeps each cell's median of the
rounds' medians. --env sets variables in the measured processes (e.g. OMP_WAIT_POLICY=passive).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CHILD = r"""
import json, sys, time
import numpy as np
runtime, voice, threads, passes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sentences = json.load(open(sys.argv[5]))["sentences"]
feeds = [{"input": np.array([s["ids"]], dtype=np.int64), "input_lengths": np.array([len(s["ids"])], dtype=np.int64),
          "scales": np.array([0.667, 1.0, 0.8], dtype=np.float32)} for s in sentences]
if runtime == "lockstep":
    import lockstep
    m = lockstep.compile(voice, backend="cpu", **({"threads": threads} if threads else {}))
    call = lambda f: m.run(None, f, seed=7)
else:
    import onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
    s = ort.InferenceSession(voice, so, providers=["CPUExecutionProvider"])
    call = lambda f: s.run(None, f)
for f in feeds: call(f)  # every length once
out = []
for _ in range(passes):
    t = time.perf_counter()
    for f in feeds: call(f)
    out.append((time.perf_counter() - t) * 1e3)
print(json.dumps(out))
"""


def busy(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def cell(runtime, args, threads, env):
    label, _, path = runtime.partition("=")  # NAME=PYTHONPATH: lockstep from another build (before/after)
    if path:
        env = dict(env, PYTHONPATH=path)
        runtime = "lockstep"
    cmd = [sys.executable, "-c", CHILD, runtime, args.voice, str(threads), str(args.passes),
           os.path.join(ROOT, "tests/fixtures/piper/sentences.json")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode:
        sys.exit(f"under_load: {runtime} at {threads} threads failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--loads", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--runtimes", nargs="+", default=["lockstep", "ort"],
                    help="lockstep, ort, or NAME=PYTHONPATH (lockstep from that path, e.g. the build before a change)")
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--env", nargs="*", default=[], help="K=V for the measured processes")
    args = ap.parse_args()
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    cells = {}
    for _ in range(args.rounds):
        for load in args.loads:
            procs = busy(load)
            try:
                time.sleep(1.0)
                for threads in args.threads:
                    for rt in args.runtimes:
                        passes = cell(rt, args, threads, env)
                        rt = rt.partition("=")[0]
                        c = cells.setdefault((rt, threads, load), {"medians": [], "first": [], "worst": []})
                        c["medians"].append(statistics.median(passes)); c["first"].append(passes[0]); c["worst"].append(max(passes))
                        print(f"  {rt} threads={threads} load={load}: passes {' '.join(f'{p:.0f}' for p in passes)} ms",
                              file=sys.stderr, flush=True)
            finally:
                for p in procs:
                    p.kill()
                for p in procs:
                    p.wait()
    print(f"under_load: {os.path.basename(args.voice)}, {len(json.load(open(os.path.join(ROOT, 'tests/fixtures/piper/sentences.json')))['sentences'])} "
          f"sentences a pass, {args.passes} passes a cell, {args.rounds} round(s), env {' '.join(args.env) or '(default)'}")
    print("| runtime | threads | busy processes | median pass ms | first pass ms | worst pass ms | slowdown from quiet | speed-up over ORT |")
    print("|---|---|---|---|---|---|---|---|")
    names = [rt.partition("=")[0] for rt in args.runtimes]
    for threads in args.threads:
        for load in args.loads:
            for rt in names:
                c = cells[(rt, threads, load)]
                med = statistics.median(c["medians"])
                quiet = statistics.median(cells[(rt, threads, args.loads[0])]["medians"])
                ratio = ""
                if rt != "ort" and ("ort", threads, load) in cells:
                    ratio = f"{statistics.median(cells[('ort', threads, load)]['medians']) / med:.2f}x"
                print(f"| {rt} | {threads} | {load} | {med:.0f} | {max(c['first']):.0f} | {max(c['worst']):.0f} | "
                      f"{med / quiet:.2f}x | {ratio} |")


if __name__ == "__main__":
    main()
