#!/usr/bin/env python3
"""Piper's API end to end (issue 45): the same paragraphs through piper-tts 1.8.0 (ONNX Runtime) and
lockstep.piper, text to int16 audio with phonemes included, each side in its own process at the same
thread count, side by side in one run. Piper's default scales; rounds alternate the two sides and
each keeps its fastest round's median, since a shared 2-core machine drifts by 20-30% between minutes.

  .venv/bin/python bench/piper_api_bench.py [--voice .cache/voices/en_US-joe-medium.onnx]
      [--threads 2] [--runs 3] [--rounds 3]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# Paragraphs no test uses: a news item, instructions and a story, 3 to 6 sentences each.
PARAGRAPHS = [
    "The council met on Tuesday evening to discuss the new library. After two hours of debate, members "
    "agreed to extend its opening hours on weekends. Construction of the reading garden begins in spring.",
    "Preheat the oven to two hundred degrees. Mix the flour, the salt and the butter until the dough holds "
    "together. Roll it out thinly, cut it into squares, and bake for twelve minutes. Let the biscuits cool "
    "before you store them.",
    "Nobody in the village remembered when the lighthouse had last been lit. Mara climbed the spiral stairs "
    "with a lantern in one hand and a rusted key in the other. At the top, the wind pushed against the "
    "glass. She turned the key, and far below, a ship changed its course. The keeper's logbook lay open on "
    "the desk. Its last entry said only: wait for the fog to lift.",
]

CHILD = r"""
import json, sys, time
side, voice, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
paragraphs = json.loads(sys.argv[5])
if side == "lockstep":
    import lockstep.piper as p
    v = p.PiperVoice.load(voice, threads=threads, seed=7)
else:
    import onnxruntime as ort, piper as p
    v = p.PiperVoice.load(voice)
    so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
    v.session = ort.InferenceSession(voice, sess_options=so, providers=["CPUExecutionProvider"])
def speak():
    return sum(len(c.audio_int16_bytes) // 2 for text in paragraphs for c in v.synthesize(text))
samples = speak()  # every sentence's length once
times = []
for _ in range(runs):
    t = time.perf_counter(); speak(); times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"median_s": times[len(times) // 2], "samples": samples}))
"""


def side(name, args):
    r = subprocess.run([sys.executable, "-c", CHILD, name, args.voice, str(args.threads), str(args.runs),
                        json.dumps(PARAGRAPHS)], capture_output=True, text=True, timeout=1800)
    if r.returncode:
        sys.exit(f"piper_api_bench: {name} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    best = {}
    for k in range(args.rounds):
        for name in (("piper-tts", "lockstep") if k % 2 == 0 else ("lockstep", "piper-tts")):
            r = side(name, args)
            print(f"  round {k + 1} {name}: {r['median_s']:.3f} s, {r['samples']} samples", file=sys.stderr, flush=True)
            if name not in best or r["median_s"] < best[name]["median_s"]:
                best[name] = r
    audio_s = best["lockstep"]["samples"] / 22050
    print(f"piper_api_bench: {len(PARAGRAPHS)} paragraphs, {sum(map(len, PARAGRAPHS))} characters, "
          f"{args.threads} threads, best of {args.rounds} rounds of the median of {args.runs}")
    print("| package | seconds | real-time factor | samples |")
    print("|---|---|---|---|")
    for name in ("piper-tts", "lockstep"):
        r = best[name]
        print(f"| {name} | {r['median_s']:.3f} | {r['median_s'] / audio_s:.4f} | {r['samples']} |")
    print(f"lockstep.piper is {best['piper-tts']['median_s'] / best['lockstep']['median_s']:.2f}x piper-tts")


if __name__ == "__main__":
    main()
