#!/usr/bin/env python3
"""A real Piper voice, text to waveform, lockstep CPU against ONNX Runtime CPU side by side in one
run (issue 21): every committed sentence (tests/fixtures/piper/sentences.json) at
scales (0, 1, 0), the same thread count. Prints per sentence the real-time factor (run time /
audio duration) of lockstep (a cached call, and the first call of that length in a process that
has run another length), ONNX Runtime with ORT_ENABLE_ALL and with ORT_DISABLE_ALL (what Piper
itself uses), the ratios, and each side's peak RSS. Each side runs in its own process.

  .venv/bin/python bench/piper_bench.py [--voice .cache/voices/en_US-joe-medium.onnx]
      [--lockstep-bench build/lockstep_bench] [--threads 2] [--runs 5] [--rounds 1]

--rounds N repeats the whole side-by-side sweep N times, lockstep and ORT alternating per
sentence, and keeps each side's fastest median per sentence: on a shared 2-core machine either
side's time drifts by 20-30% between minutes, and interleaved rounds let neither side keep a lucky
or an unlucky minute to itself.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SAMPLE_RATE = 22050

ORT_CHILD = r"""
import json, resource, sys, time
import numpy as np, onnxruntime as ort
voice, folder, level, threads, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
s = ort.InferenceSession(voice, so, providers=["CPUExecutionProvider"])
feed = {n: np.load(f"{folder}/{n}.npy") for n in ("input", "input_lengths", "scales")}
t = time.perf_counter(); y = s.run(None, feed)[0]; first = (time.perf_counter() - t) * 1e3
times = []
for _ in range(runs):
    t = time.perf_counter(); y = s.run(None, feed)[0]; times.append((time.perf_counter() - t) * 1e3)
times.sort()
print(json.dumps({"median_ms": times[len(times) // 2], "first_run_ms": first, "samples": int(y.size),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_inputs(folder, ids):
    os.makedirs(folder, exist_ok=True)
    np.save(f"{folder}/input.npy", np.array([ids], dtype=np.int64))
    np.save(f"{folder}/input_lengths.npy", np.array([len(ids)], dtype=np.int64))
    np.save(f"{folder}/scales.npy", np.array([0, 1, 0], dtype=np.float32))


def files(folder):
    return [f"{folder}/{n}.npy" for n in ("input", "input_lengths", "scales")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--lockstep-bench", default=os.path.join(ROOT, "build/lockstep_bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--f64-accumulate", nargs="+", default=None,
                    help="passed to lockstep_bench (e.g. none: the text encoder in float32 too)")
    args = ap.parse_args()
    sentences = json.load(open(os.path.join(ROOT, "tests/fixtures/piper/sentences.json"), encoding="utf-8"))["sentences"]
    tmp = tempfile.mkdtemp(prefix="piper_bench_")
    for k, s in enumerate(sentences):
        write_inputs(f"{tmp}/{k}", s["ids"])
    best = lambda a, b: b if a is None or b["median_ms"] < a["median_ms"] else a
    found = {}  # sentence -> (lockstep, {level: ort}), the fastest median of each over the rounds
    for _ in range(args.rounds):
        for k, s in enumerate(sentences):
            prime = f"{tmp}/{(k + 1) % len(sentences)}"  # another length first: k's first call is a miss in a warm process
            ls = json.loads(subprocess.run(
                [args.lockstep_bench, args.voice, "--backend", "cpu", "--threads", str(args.threads), "--warmup", "0",
                 "--runs", str(args.runs), "--inputs", *files(f"{tmp}/{k}"), "--prime", *files(prime),
                 *(["--f64-accumulate", *args.f64_accumulate] if args.f64_accumulate else [])],
                check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
            prev_ls, prev_ort = found.get(k, (None, {}))
            ort_rows = {}
            for level in ("ORT_ENABLE_ALL", "ORT_DISABLE_ALL"):
                out = subprocess.run([sys.executable, "-c", ORT_CHILD, args.voice, f"{tmp}/{k}", level,
                                      str(args.threads), str(args.runs)], check=True, capture_output=True, text=True)
                ort_rows[level] = best(prev_ort.get(level), json.loads(out.stdout.strip().splitlines()[-1]))
            found[k] = (best(prev_ls, ls), ort_rows)
    rows = []
    for k, s in enumerate(sentences):
        ls, ort_rows = found[k]
        samples = int(np.prod(ls["output_shape"]))
        if samples != ort_rows["ORT_ENABLE_ALL"]["samples"]:
            print(f"sentence {k}: lengths differ: lockstep {samples}, ORT {ort_rows['ORT_ENABLE_ALL']['samples']}")
        audio_ms = samples / SAMPLE_RATE * 1e3
        rows.append((k, len(s["ids"]), samples, ls, ort_rows, audio_ms))
    print(f"threads {args.threads}, runs {args.runs} (median; fastest median of {args.rounds} interleaved rounds), "
          "scales (0,1,0); RTF = run time / audio duration")
    hdr = ("sent", "phon", "audio s", "lockstep RTF", "first/cached", "ORT all RTF", "ORT none RTF",
           "x vs all", "x vs none", "RSS MB ls/ort")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for k, n, samples, ls, o, audio_ms in rows:
        a, d = o["ORT_ENABLE_ALL"], o["ORT_DISABLE_ALL"]
        print(f"| {k} | {n} | {audio_ms / 1e3:.2f} | {ls['median_ms'] / audio_ms:.3f} | "
              f"{ls['first_run_ms'] / ls['median_ms']:.2f} | {a['median_ms'] / audio_ms:.3f} | "
              f"{d['median_ms'] / audio_ms:.3f} | {a['median_ms'] / ls['median_ms']:.2f} | "
              f"{d['median_ms'] / ls['median_ms']:.2f} | {ls['peak_rss_mb']:.0f}/{a['peak_rss_mb']:.0f} |")
    tot = lambda f: sum(f(r) for r in rows)
    ls_ms = tot(lambda r: r[3]["median_ms"])
    all_ms = tot(lambda r: r[4]["ORT_ENABLE_ALL"]["median_ms"])
    none_ms = tot(lambda r: r[4]["ORT_DISABLE_ALL"]["median_ms"])
    audio = tot(lambda r: r[5])
    print(f"all sentences: lockstep RTF {ls_ms / audio:.3f}, ORT_ENABLE_ALL {all_ms / audio:.3f} "
          f"({all_ms / ls_ms:.2f}x), ORT_DISABLE_ALL {none_ms / audio:.3f} ({none_ms / ls_ms:.2f}x)")


if __name__ == "__main__":
    main()
