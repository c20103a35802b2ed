#!/usr/bin/env python3
"""Rel L2 (|test - ref| / |ref|, as lockstep compare) of one backend's audio against saved outputs,
per committed sentence, noise off and on (bench/gpu/f64_decoder.sh writes the folders):

  python3 bench/gpu/f64_relerr.py TEST_DIR REF_DIR [REF_DIR...]

Each DIR holds K_MODE/output.npy for K = 0..5, MODE = off, on. One markdown row per sentence
with the rel L2 against each REF_DIR (noise off / on), then how many are within 1e-5; a length
that differs is printed as "len A != B" and counts as over.
"""
import os
import sys

import numpy as np

BAR = 1e-5


def rel_l2(test, ref):
    if test.shape != ref.shape:
        return None
    d = test.astype(np.float64) - ref.astype(np.float64)
    rr = float(np.sum(ref.astype(np.float64) ** 2))
    dd = float(np.sum(d * d))
    return np.sqrt(dd / rr) if rr else np.sqrt(dd)


def main():
    test, refs = sys.argv[1], sys.argv[2:]
    keys = sorted({d.split("_")[0] for d in os.listdir(test)}, key=int)
    header = " | ".join(f"vs {os.path.basename(r.rstrip('/'))}: off / on" for r in refs)
    print(f"| sentence | samples | {header} |")
    print("|---|---|" + "---|" * len(refs))
    within = {(r, m): 0 for r in refs for m in ("off", "on")}
    worst = {(r, m): 0.0 for r in refs for m in ("off", "on")}
    for k in keys:
        cells = []
        n = np.load(f"{test}/{k}_off/output.npy").size
        for r in refs:
            pair = []
            for m in ("off", "on"):
                t = np.load(f"{test}/{k}_{m}/output.npy")
                f = np.load(f"{r}/{k}_{m}/output.npy")
                e = rel_l2(t, f)
                if e is None:
                    pair.append(f"len {t.size} != {f.size}")
                    worst[(r, m)] = float("inf")
                    continue
                within[(r, m)] += e <= BAR
                worst[(r, m)] = max(worst[(r, m)], e)
                pair.append(f"{e:.3g}")
            cells.append(" / ".join(pair))
        print(f"| {k} | {n} | " + " | ".join(cells) + " |")
    for r in refs:
        print(f"vs {os.path.basename(r.rstrip('/'))}: noise off worst {worst[(r, 'off')]:.3g}, {within[(r, 'off')]} of {len(keys)} "
              f"within {BAR:g}; noise on worst {worst[(r, 'on')]:.3g}, {within[(r, 'on')]} of {len(keys)}")


if __name__ == "__main__":
    main()
