#!/usr/bin/env python3
"""Plots of the scaling study from JSON lines (run_cpu_scaling.py's and/or scaling_gpu.py's):
time against frames (batch 1, log-log), time against batch (1024 frames), and the cost per frame
of one batch row for both. One line per machine/runtime/preset; configs with an error or skipped
are left out (the markdown tables list them).

  plot.py cpu_scaling.jsonl [scaling.jsonl ...] --out bench/scaling/results/scaling   (-> scaling.png)"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rows as R  # noqa: E402

MARKERS = {"seed": "o", "low": "s", "ljs": "^"}
LINES = {"seed": "-", "low": "--", "ljs": "-."}


def series(rows, batch_frames):
    """{(machine, runtime, preset): {"frames": [(T, ms)], "batch": [(B, ms)]}} of measured rows
    (a configuration measured twice, e.g. in two files, keeps its last row)."""
    out = {}
    for r in rows:
        if r.get("ms") is None:
            continue
        s = out.setdefault((r["machine"], r["runtime"], r["preset"]), {"frames": {}, "batch": {}})
        if r["batch"] == 1:
            s["frames"][r["frames"]] = r["ms"]
        if r["frames"] == batch_frames:
            s["batch"][r["batch"]] = r["ms"]
    return {k: {axis: sorted(v.items()) for axis, v in s.items()} for k, s in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--out", required=True, help="output path without .png")
    ap.add_argument("--batch-frames", type=int, default=R.BATCH_FRAMES)
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    data = series(R.read_rows(a.jsonl), a.batch_frames)
    if not data:
        sys.exit("no measured rows to plot")
    fig, ax = plt.subplots(2, 2, figsize=(13, 9))
    colors = {}
    for (machine, runtime, preset), s in sorted(data.items()):
        c = colors.setdefault((machine, runtime), f"C{len(colors)}")
        kw = dict(color=c, marker=MARKERS.get(preset, "x"), ls=LINES.get(preset, ":"), label=f"{runtime} ({machine}) {preset}")
        if s["frames"]:
            t, ms = zip(*s["frames"])
            ax[0][0].plot(t, ms, **kw)
            ax[1][0].plot(t, [m / x for x, m in zip(t, ms)], **kw)
        if s["batch"]:
            b, ms = zip(*s["batch"])
            ax[0][1].plot(b, ms, **kw)
            ax[1][1].plot(b, [m / (x * a.batch_frames) for x, m in zip(b, ms)], **kw)
    # A slope-1 guide through the smallest frames point of the first frames series: linear cost.
    first = next((s["frames"] for s in data.values() if len(s["frames"]) > 1), None)
    if first:
        (t0, m0), t1 = first[0], first[-1][0]
        ax[0][0].plot([t0, t1], [m0, m0 * t1 / t0], "k:", lw=1, label="linear in frames")
    titles = [["time vs frames (batch 1)", f"time vs batch ({a.batch_frames} frames)"],
              ["ms per frame (batch 1)", f"ms per frame per batch row ({a.batch_frames} frames)"]]
    xl = ["frames", "batch"]
    for i in range(2):
        for j in range(2):
            g = ax[i][j]
            g.set_xscale("log", base=2)
            g.set_yscale("log")
            g.set_title(titles[i][j])
            g.set_xlabel(xl[j])
            g.set_ylabel("median ms" if i == 0 else "ms / frame")
            g.grid(True, which="both", alpha=0.3)
    ax[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle("lockstep scaling (each point also checked against float64: see the table's rel L2)")
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)
    print(a.out + ".png")


if __name__ == "__main__":
    main()
