#!/usr/bin/env python3
"""lockstep CPU against its CPU peers, side by side in one run, same inputs, same threads.

  python3 bench/run_cpu.py [--threads N] [--rounds R] [--runs K] [--peers ort,tvm] [--default]
                           [--build DIR] [--models DIR] [--only STEMS]

Peers: ONNX Runtime CPU through ../shared/tools/ort_run.py, and Apache TVM 0.25 Relax -> LLVM
(untuned, as the public report used it) through bench/tvm_run.py in the --tvm-python venv.
Rounds alternate lockstep and ONNX Runtime (each round a fresh process of each) so machine noise
hits both; TVM, two orders of magnitude slower untuned, runs once per model with --tvm-runs runs.
The table reports the median over rounds of each process's median, the ratio peer/lockstep (> 1
means lockstep is faster) and the relative L2 error of every output against the float64 oracle:
the shared model's .ref64.npy, or for the embedded default (--default) the output of lockstep's
float64 reference interpreter."""
import argparse, json, os, statistics, subprocess, sys, tempfile
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rel_l2(out, ref):
    out = out.astype(np.float64).ravel(); ref = ref.astype(np.float64).ravel()
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def run_json(cmd, env=None):
    r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(r.stdout.strip().splitlines()[-1])


def peer_run(cmd, ref):
    """Runs a peer script (ort_run.py's command line) in a temp dir: (median ms, JSON, rel L2)."""
    with tempfile.TemporaryDirectory() as out:
        j = run_json(cmd[:3] + [out] + cmd[3:])
        out_file = os.path.join(out, sorted(os.listdir(out))[0])
        return j["median_ms"], j, rel_l2(np.load(out_file), ref)


def default_case(build, work):
    """Writes the embedded default graph and its float64 reference output into work."""
    lockstep = os.path.join(build, "lockstep")
    subprocess.run([lockstep, "default", "-o", work], check=True, capture_output=True)
    inputs = [os.path.join(work, "z_p.npy"), os.path.join(work, "y_mask.npy")]
    ref_dir = os.path.join(work, "ref")
    subprocess.run([lockstep, "run", os.path.join(work, "seed_flow.onnx"), "--backend", "reference",
                    "--inputs", *inputs, "-o", ref_dir], check=True, capture_output=True)
    ref = os.path.join(work, "default.ref64.npy")
    np.save(ref, np.load(os.path.join(ref_dir, sorted(os.listdir(ref_dir))[0])).astype(np.float64))
    return ("default (embedded, 174 nodes)", os.path.join(work, "seed_flow.onnx"), inputs, ref)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--peers", default="ort", help="comma-separated: ort, tvm")
    ap.add_argument("--default", action="store_true", help="also the embedded default graph")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--only", default="", help="comma-separated model stems")
    ap.add_argument("--ort-run", default=os.path.join(ROOT, "..", "shared", "tools", "ort_run.py"),
                    help="the shared ONNX Runtime runner (ort_run.py)")
    ap.add_argument("--tvm-python", default=os.path.join(ROOT, ".venv-tvm", "bin", "python3"))
    ap.add_argument("--tvm-runs", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=ENV=VALUE[,ENV=VALUE]: lockstep again with these environment settings, interleaved in "
                         "every round (A/B of a knob such as LOCKSTEP_CPU_WINOGRAD)")
    args = ap.parse_args()
    variants = []
    for v in args.variant:
        name, _, settings = v.partition("=")
        variants.append((name, dict(kv.split("=", 1) for kv in settings.split(",") if kv)))
    peers = [p for p in args.peers.split(",") if p]
    stems = sorted(f[:-5] for f in os.listdir(args.models) if f.endswith(".onnx"))
    if args.only: stems = [s for s in stems if s in args.only.split(",")]
    cases = []
    work = tempfile.mkdtemp(prefix="lockstep-bench-")
    if args.default: cases.append(default_case(args.build, work))
    for stem in stems:
        base = os.path.join(args.models, stem)
        cases.append((stem, base + ".onnx", [base + ".z_p.npy", base + ".y_mask.npy"], base + ".ref64.npy"))
    bench = os.path.join(args.build, "lockstep_bench")
    rows = []
    for name, model, inputs, ref_path in cases:
        ref = np.load(ref_path)
        row = {"model": name, "threads": args.threads, "lockstep_ms": [], "ort_ms": []}
        row.update({f"{v}_ms": [] for v, _ in variants})
        cmd = [bench, model, "--backend", "cpu", "--threads", str(args.threads), "--runs", str(args.runs),
               "--inputs", *inputs, "--ref", ref_path]
        for _ in range(args.rounds):
            j = run_json(cmd)
            row["lockstep_ms"].append(j["median_ms"]); row["lockstep_rel_l2"] = j["rel_l2"]
            row["lockstep_compile_ms"] = j["compile_ms"]
            for v, env in variants:
                jv = run_json(cmd, env=dict(os.environ, **env))
                row[f"{v}_ms"].append(jv["median_ms"]); row[f"{v}_rel_l2"] = jv["rel_l2"]
            if "ort" in peers:
                ms, _, err = peer_run([sys.executable, args.ort_run, model, str(args.threads), *inputs,
                                       "--runs", str(args.runs)], ref)
                row["ort_ms"].append(ms); row["ort_rel_l2"] = err
        if "tvm" in peers:
            ms, j, err = peer_run([args.tvm_python, os.path.join(HERE, "tvm_run.py"), model, str(args.threads), *inputs,
                                   "--runs", str(args.tvm_runs)], ref)
            row.update(tvm_ms=ms, tvm_rel_l2=err, tvm_compile_ms=j["compile_ms"])
        row["lockstep_ms"] = statistics.median(row["lockstep_ms"])
        for v, _ in variants: row[f"{v}_ms"] = statistics.median(row[f"{v}_ms"])
        row["ort_ms"] = statistics.median(row["ort_ms"]) if row["ort_ms"] else None
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    head = ["model", "threads", "lockstep CPU ms"]
    if "ort" in peers: head += ["ORT CPU ms", "ORT/lockstep"]
    if "tvm" in peers: head += ["TVM ms", "TVM/lockstep"]
    head += ["lockstep rel L2"] + (["ORT rel L2"] if "ort" in peers else []) + (["TVM rel L2"] if "tvm" in peers else [])
    head += ["lockstep compile ms"] + (["TVM compile ms"] if "tvm" in peers else [])
    for v, _ in variants: head += [f"lockstep {v} ms"] + (["ORT/" + v] if "ort" in peers else []) + [f"{v} rel L2"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["model"], str(r["threads"]), f"{r['lockstep_ms']:.2f}"]
        if "ort" in peers: cells += [f"{r['ort_ms']:.2f}", f"{r['ort_ms'] / r['lockstep_ms']:.2f}x"]
        if "tvm" in peers: cells += [f"{r['tvm_ms']:.1f}", f"{r['tvm_ms'] / r['lockstep_ms']:.0f}x"]
        cells += [f"{r['lockstep_rel_l2']:.2e}"] + ([f"{r['ort_rel_l2']:.2e}"] if "ort" in peers else [])
        cells += [f"{r['tvm_rel_l2']:.2e}"] if "tvm" in peers else []
        cells += [f"{r['lockstep_compile_ms']:.0f}"] + ([f"{r['tvm_compile_ms']:.0f}"] if "tvm" in peers else [])
        for v, _ in variants:
            cells += [f"{r[v + '_ms']:.2f}"] + ([f"{r['ort_ms'] / r[v + '_ms']:.2f}x"] if "ort" in peers else [])
            cells += [f"{r[v + '_rel_l2']:.2e}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
