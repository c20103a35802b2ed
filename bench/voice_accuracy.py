#!/usr/bin/env python3
"""A voice's audio against lockstep's float64 reference on every committed sentence (issue 21,
issue 22; docs/accuracy.md): `lockstep compare --ref reference --test BACKEND` per sentence at
scales (0, 1, 0) and with noise on (0.667, 1, 0.8) at --seed 7, the rel L2 of each, and how many
pass 1e-5.

  .venv/bin/python bench/voice_accuracy.py [--voice .cache/voices/en_US-joe-medium.onnx]
      [--lockstep build/lockstep] [--ref reference] [--test cpu] [-- EXTRA lockstep compare ARGS...]

EXTRA goes to every compare (e.g. `-- --f64-accumulate none`, or LOCKSTEP_CUDA_F64=1 in the
environment for cuda's float64 encoder).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAR = 1e-5


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--lockstep", default=os.path.join(ROOT, "build/lockstep"))
    ap.add_argument("--ref", default="reference", help="the side measured against (e.g. cpu for cuda vs cpu)")
    ap.add_argument("--test", default="cpu")
    ap.add_argument("extra", nargs="*", help="after --: more lockstep compare arguments")
    args = ap.parse_args()
    sentences = json.load(open(os.path.join(ROOT, "tests/fixtures/piper/sentences.json")))["sentences"]
    modes = {"noise off": [0, 1, 0], "noise on, seed 7": [0.667, 1, 0.8]}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, s in enumerate(sentences):
            for mode, scales in modes.items():
                d = f"{tmp}/{k}_{len(rows)}"
                os.makedirs(d)
                np.save(f"{d}/input.npy", np.array([s["ids"]], dtype=np.int64))
                np.save(f"{d}/input_lengths.npy", np.array([len(s["ids"])], dtype=np.int64))
                np.save(f"{d}/scales.npy", np.array(scales, dtype=np.float32))
                cmd = [args.lockstep, "compare", args.voice, "--ref", args.ref, "--test", args.test, "--seed", "7",
                       "--inputs", f"{d}/input.npy", f"{d}/input_lengths.npy", f"{d}/scales.npy", *args.extra]
                out = subprocess.run(cmd, capture_output=True, text=True).stdout
                m = re.search(r"^output\s+\[[^\]]*\]\s+\S+\s+\S+\s+\S+\s+(\S+)", out, re.M)
                rows.setdefault(k, {})[mode] = float(m.group(1)) if m else float("nan")
    print(f"{args.test} vs {args.ref}, {os.path.basename(args.voice)} {' '.join(args.extra)}")
    print("| sentence | phonemes | " + " | ".join(modes) + " |")
    print("|---|---|" + "---|" * len(modes))
    for k, s in enumerate(sentences):
        print(f"| {k} | {len(s['ids'])} | " + " | ".join(f"{rows[k][m]:.3g}" for m in modes) + " |")
    for m in modes:
        vals = [rows[k][m] for k in rows]
        print(f"{m}: {min(vals):.3g} .. {max(vals):.3g}, {sum(v <= BAR for v in vals)} of {len(vals)} within {BAR:g}")
    return 0 if all(v <= BAR for r in rows.values() for v in r.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
