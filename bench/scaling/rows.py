"""Shared pieces of the scaling study: the configuration list, the relative L2 error, and the
JSON-lines / markdown output. One JSON row per (machine, preset, frames, batch, runtime):
ms (median), rel_l2 (against float64), runs, and compile_ms / threads / error / skipped when known."""
import json, os

DEFAULT_FRAMES = [128, 256, 512, 1024, 2048, 4096, 8192]
DEFAULT_BATCHES = [1, 4, 16]
BATCH_FRAMES = 1024  # the batch sweep runs at this many frames


def configs(frames=DEFAULT_FRAMES, batches=DEFAULT_BATCHES, batch_frames=BATCH_FRAMES):
    """(frames, batch) pairs: the frame sweep at batch 1, then the batch sweep, smallest work first."""
    out = [(t, 1) for t in frames] + [(batch_frames, b) for b in batches]
    return sorted(set(out), key=lambda c: (c[0] * c[1], c[1]))


def parse_ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def stem_name(preset, frames, batch):
    return f"{preset}_T{frames}_B{batch}"


def rel_l2(out, ref):
    import numpy as np
    out = np.asarray(out, dtype=np.float64).ravel()
    ref = np.asarray(ref, dtype=np.float64).ravel()
    if out.shape != ref.shape:
        raise ValueError(f"output has {out.size} elements, the float64 oracle {ref.size}")
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def append_row(path, row):
    print(json.dumps(row), flush=True)
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def read_rows(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return rows


def markdown(rows, lockstep, peer, title):
    """One table row per (preset, frames, batch): both runtimes' ms and rel L2, the ratio
    peer/lockstep (> 1: lockstep faster) and lockstep's microseconds per frame of one batch row."""
    fmt = lambda r, k, f: f.format(r[k]) if r and r.get(k) is not None else (
        "skipped" if r and r.get("skipped") else ("error" if r and "error" in r else "n/a"))
    keys = sorted({(r["preset"], r["frames"], r["batch"]) for r in rows},
                  key=lambda k: (k[0], k[2] != 1, k[2], k[1]))
    lines = [title, "",
             f"| preset | frames | batch | {lockstep} ms | rel L2 | {peer} ms | rel L2 | {peer}/lockstep | "
             f"lockstep us/frame/row | lockstep compile ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in keys:
        get = lambda rt: next((r for r in rows if (r["preset"], r["frames"], r["batch"]) == key
                               and r["runtime"] == rt), None)
        ls, pr = get(lockstep), get(peer)
        ratio = f"{pr['ms'] / ls['ms']:.2f}x" if ls and pr and ls.get("ms") and pr.get("ms") else "n/a"
        per = f"{1e3 * ls['ms'] / (key[1] * key[2]):.1f}" if ls and ls.get("ms") else "n/a"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {fmt(ls, 'ms', '{:.2f}')} | {fmt(ls, 'rel_l2', '{:.2e}')} | "
                     f"{fmt(pr, 'ms', '{:.2f}')} | {fmt(pr, 'rel_l2', '{:.2e}')} | {ratio} | {per} | "
                     f"{fmt(ls, 'compile_ms', '{:.0f}')} |")
    lines += [""] + growth(rows, [lockstep, peer])
    notes = [f"- {r['preset']} T{r['frames']} B{r['batch']} {r['runtime']}: "
             + (f"skipped ({r['skipped']})" if r.get("skipped") else f"error: {r['error']}")
             for r in rows if r.get("skipped") or "error" in r]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def growth(rows, runtimes, min_frames=BATCH_FRAMES):
    """Per preset and runtime: the log-log slope of time against frames (batch 1, frames >=
    min_frames; 1 = linear) and the batch cost ms(B) / (B x ms(1)) at BATCH_FRAMES (< 1: batching pays)."""
    import math
    out = []
    for preset in sorted({r["preset"] for r in rows}):
        parts = []
        for rt in runtimes:
            ms = {(r["frames"], r["batch"]): r["ms"] for r in rows
                  if r["preset"] == preset and r["runtime"] == rt and r.get("ms")}
            pts = sorted((t, m) for (t, b), m in ms.items() if b == 1 and t >= min_frames)
            txt = f"{rt}: "
            if len(pts) >= 2:
                xs, ys = [math.log(t) for t, _ in pts], [math.log(m) for _, m in pts]
                mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
                slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
                txt += f"slope {slope:.2f} over frames {pts[0][0]}..{pts[-1][0]}"
            else:
                txt += "slope n/a"
            one = ms.get((BATCH_FRAMES, 1))
            bs = sorted((b, m) for (t, b), m in ms.items() if t == BATCH_FRAMES and b > 1)
            if one and bs:
                txt += ", batch cost " + ", ".join(f"B{b} {m / (b * one):.2f}" for b, m in bs)
            parts.append(txt)
        out.append(f"- {preset}: " + "; ".join(parts))
    return out
