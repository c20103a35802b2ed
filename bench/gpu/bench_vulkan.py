#!/usr/bin/env python3
"""lockstep's Vulkan backend beside its CUDA backend on the GPU machine (issue 25): the VITS presets
at FRAMES frames (bench_gpu.py's export: same weights, inputs and float64 oracle), each timed by
lockstep_bench on `cuda` (strict fp32), `vulkan` (the direct conv) and `vulkan` with the
shared-memory conv (LOCKSTEP_VULKAN_CONV_TILED=1), in one run. Prints JSON rows, then a table.
Usage: bench_vulkan.py --bin DIR (lockstep_bench) --tools DIR (vits_export.py) --work DIR
Environment: PRESETS (seed,low,ljs), FRAMES (1024), RUNS (20)."""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import export, lockstep, log  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.tools)
    import vits_export
    frames = int(os.environ.get("FRAMES", "1024"))
    runs = int(os.environ.get("RUNS", "20"))
    binary = os.path.join(a.bin, "lockstep_bench")
    os.makedirs(a.work, exist_ok=True)
    sides = (("cuda", "cuda", {}), ("vulkan", "vulkan", {}),
             ("vulkan tiled", "vulkan", {"LOCKSTEP_VULKAN_CONV_TILED": "1"}))
    table = []
    for name in os.environ.get("PRESETS", "seed,low,ljs").split(","):
        stem = export(name, frames, a.work, vits_export)
        row = {}
        for label, backend, env in sides:
            row[label], _ = lockstep(binary, stem, runs, env, timeout=300, backend=backend, warmup=3)
            log(json.dumps(dict(preset=name, side=label, **row[label])))
        table.append((name, row))
    log("")
    log(f"lockstep vulkan beside lockstep cuda, batch 1, {frames} frames, median of {runs} runs "
        "(host wall clock incl. copies)")
    log("| preset | cuda ms | vulkan ms | vulkan/cuda | vulkan tiled ms | tiled/cuda | rel L2 cuda / vulkan / tiled |")
    log("|---|---|---|---|---|---|---|")
    for name, row in table:
        ms = {k: v.get("median_ms") for k, v in row.items()}
        err = " / ".join(f"{v['rel_l2']:.2e}" if "rel_l2" in v else v.get("error", "?")[:60] for v in row.values())
        ratio = lambda k: f"{ms[k] / ms['cuda']:.2f}x" if ms[k] and ms["cuda"] else "-"
        fmt = lambda k: f"{ms[k]:.2f}" if ms[k] else "-"
        log(f"| {name} | {fmt('cuda')} | {fmt('vulkan')} | {ratio('vulkan')} | {fmt('vulkan tiled')} | "
            f"{ratio('vulkan tiled')} | {err} |")


if __name__ == "__main__":
    main()
