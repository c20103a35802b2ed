#!/usr/bin/env python3
"""Per-kernel GPU profile of the VITS presets: exports each preset (bench_gpu.py's export), then
runs lockstep_bench with LOCKSTEP_CUDA_PROFILE=1 (graph replay with event nodes) under each
variant's environment, and its plain timing (wall clock incl. copies) beside it.
Usage: profile_gpu.py --bin DIR --tools DIR --work DIR --out FILE
Environment: PRESETS (seed,low,ljs), FRAMES (1024,128), VARIANTS ("default" and NAME=ENV=VAL[;ENV=VAL] items,
comma-separated; PRECISION=tf32|fp16|bf16 in an item sets lockstep's --precision)."""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(__file__))
from bench_gpu import export, lockstep  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sys.path.insert(0, a.tools)
    import vits_export
    os.makedirs(a.work, exist_ok=True)
    binary = os.path.join(a.bin, "lockstep_bench")
    variants = [("default", {})]
    for item in filter(None, os.environ.get("VARIANTS", "").split(",")):
        name, _, envs = item.partition("=")
        variants.append((name, dict(kv.split("=", 1) for kv in envs.split(";"))))
    with open(a.out, "w") as out:
        for frames in map(int, os.environ.get("FRAMES", "1024,128").split(",")):
            for name in os.environ.get("PRESETS", "seed,low,ljs").split(","):
                stem = export(name, frames, a.work, vits_export)
                for label, env in variants:
                    env = dict(env)
                    prec = env.pop("PRECISION", "fp32")  # a variant may set the --precision mode
                    timed, _ = lockstep(binary, stem, 30, env, precision=prec)
                    _, err = lockstep(binary, stem, 5, {**env, "LOCKSTEP_CUDA_PROFILE": "1"}, precision=prec)
                    head = (f"=== {name} T{frames} {label}: wall {timed.get('median_ms', float('nan')):.3f} ms, device "
                            f"{timed.get('device_median_ms', float('nan')):.3f} ms, rel L2 {timed.get('rel_l2', float('nan')):.2e}")
                    print(head, flush=True)
                    out.write(f"{head}\n{err}\n")
                    out.flush()


if __name__ == "__main__":
    main()
