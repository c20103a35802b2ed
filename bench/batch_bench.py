#!/usr/bin/env python3
"""Batches on the CPU (issue 47): clips/s on the same rows for lockstep batched
(``PiperVoice.synthesize_batch``, one lane per thread), lockstep batch-1 (``synthesize`` one text at a
time at the same thread count) and ONNX Runtime batch-1 (piper-tts 1.8.0, ``intra_op_num_threads``
the same). Rows: wake-word phrases (0.5-2 s) and sentences (2-6 s), piper's default scales, a seed
per row. Each side runs in its own process; rounds alternate the order and each side keeps its
fastest round (the machine drifts between minutes). The batched side's audio is checked against the
batch-1 side's, row by row, bit for bit.

  .venv/bin/python bench/batch_bench.py [--voice V] [--threads 2] [--batch 16] [--rounds 3] [--rows 96]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

PHRASES = ["hey jarvis", "okay lockstep", "alexa", "turn the lights off", "good night", "play some music",
           "stop", "what's the weather like today", "set a timer for ten minutes", "call my sister",
           "skip this song", "hey computer, wake up"]
SENTENCES = ["The train to the coast leaves at half past seven from platform four.",
             "Please remember to water the tomatoes before the weekend, they dry out quickly.",
             "Our meeting has moved to Thursday afternoon, in the small room next to the kitchen.",
             "A heavy fog settled over the harbour, and the ferries waited for it to lift."]


def rows(n):
    out = []
    for i in range(n):
        text = SENTENCES[i % len(SENTENCES)] if i % 4 == 3 else PHRASES[i % len(PHRASES)] + ("." if i % 2 else "!")
        out.append({"text": text, "seed": 1000 + i})
    return out


CHILD = r"""
import hashlib, json, sys, time
side, voice, threads, batch, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
if side.startswith("lockstep"):
    import lockstep.piper as p
    v = p.PiperVoice.load(voice, threads=threads)
else:
    import onnxruntime as ort, piper as p
    v = p.PiperVoice.load(voice)
    so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
    v.session = ort.InferenceSession(voice, sess_options=so, providers=["CPUExecutionProvider"])
def one(r):
    if side == "lockstep":
        v.session.seed = r["seed"]
    return b"".join(c.audio_int16_bytes for c in v.synthesize(r["text"]))
def make():
    if side == "lockstep-batched":
        out = []
        for k in range(0, len(rows), batch):
            part = rows[k:k + batch]
            for chunks in v.synthesize_batch([r["text"] for r in part], seeds=[r["seed"] for r in part]):
                out.append(b"".join(c.audio_int16_bytes for c in chunks))
        return out
    return [one(r) for r in rows]
clips = make()  # warm: every length compiled once
t = time.perf_counter(); clips = make(); s = time.perf_counter() - t
print(json.dumps({"seconds": s, "samples": sum(len(c) // 2 for c in clips),
                  "sha": [hashlib.sha256(c).hexdigest() for c in clips]}))
"""


def side(name, args, rows_):
    r = subprocess.run([sys.executable, "-c", CHILD, name, args.voice, str(args.threads), str(args.batch),
                        json.dumps(rows_)], capture_output=True, text=True, timeout=3600)
    if r.returncode:
        sys.exit(f"batch_bench: {name} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=96)
    args = ap.parse_args()
    rows_ = rows(args.rows)
    sides = ["onnxruntime", "lockstep", "lockstep-batched"]
    best = {}
    for k in range(args.rounds):
        for name in (sides if k % 2 == 0 else sides[::-1]):
            r = side(name, args, rows_)
            print(f"  round {k + 1} {name}: {r['seconds']:.2f} s", file=sys.stderr, flush=True)
            if name not in best or r["seconds"] < best[name]["seconds"]:
                best[name] = r
    same = best["lockstep"]["sha"] == best["lockstep-batched"]["sha"]
    audio_s = best["lockstep"]["samples"] / 22050
    print(f"batch_bench: {len(rows_)} rows ({audio_s:.0f} s of audio), {args.threads} threads, batches of "
          f"{args.batch}, best of {args.rounds} rounds; batched clips bit-identical to batch-1: {same}")
    print("| side | seconds | clips/s | vs ONNX Runtime batch-1 |")
    print("|---|---|---|---|")
    ort_s = best["onnxruntime"]["seconds"]
    for name in sides:
        s = best[name]["seconds"]
        print(f"| {name} | {s:.2f} | {len(rows_) / s:.1f} | {ort_s / s:.2f}x |")
    if not same:
        sys.exit("batch_bench: the batched clips differ from batch-1")


if __name__ == "__main__":
    main()
