#!/usr/bin/env python3
"""Time to first audio with lockstep.piper's in-sentence streaming (issue 46) against the time of
the whole sentence, on sentences of about 1, 4 and 12 s (the joe voice, cpu, Piper's default scales,
seed 0): after a warm-up of each sentence, the median of --runs of (a) synthesize(stream=False) to
its one chunk and (b) synthesize(stream=True) to its first chunk and to its last.

  .venv/bin/python bench/stream_latency.py [--voice .cache/voices/en_US-joe-medium.onnx] [--threads 2] [--runs 5]
"""
import argparse
import os
import statistics
import time

import lockstep.piper as lp

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SENTENCES = {
    "~1 s": "Good morning to you.",
    "~4 s": "The library opens at nine on weekdays and closes early on Sunday afternoons.",
    "~12 s": ("When the evening train finally pulled into the small station at the edge of the valley, the "
              "passengers who had waited through the long delay gathered their bags, thanked the conductor, and "
              "stepped out into the cool air that smelled of rain and pine."),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    voice = lp.PiperVoice.load(args.voice, threads=args.threads)
    syn = lp.SynthesisConfig(normalize_audio=False)
    print(f"stream_latency: {os.path.basename(args.voice)}, cpu, {args.threads} threads, median of {args.runs}")
    print("| sentence | audio s | whole sentence ms | first audio (stream) ms | first / whole | all chunks (stream) ms | chunks |")
    print("|---|---|---|---|---|---|---|")
    for label, text in SENTENCES.items():
        chunks = list(voice.synthesize(text, syn, stream=True))  # warm-up: every window length compiled
        list(voice.synthesize(text, syn))
        whole, first, total = [], [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            list(voice.synthesize(text, syn))
            whole.append(time.perf_counter() - t)
            t = time.perf_counter()
            it = voice.synthesize(text, syn, stream=True)
            next(it)
            first.append(time.perf_counter() - t)
            for _ in it:
                pass
            total.append(time.perf_counter() - t)
        audio_s = sum(len(c.audio_float_array) for c in chunks) / voice.config.sample_rate
        w, f, a = (statistics.median(x) * 1e3 for x in (whole, first, total))
        print(f"| {label} | {audio_s:.2f} | {w:.0f} | {f:.0f} | {f / w:.2f} | {a:.0f} | {len(chunks)} |")


if __name__ == "__main__":
    main()
