#!/usr/bin/env python3
"""Issue 47's corpus acceptance on this machine: one 2,000-clip corpus (wake-word phrases times a grid
of length, noise and noise_w scales) made by ``python -m lockstep.corpus`` with 1 worker, 2 workers,
batches of 1, 8 and 32, on a 2-node Ray cluster on this machine (``ray.cluster_utils.Cluster``), and
once with a worker SIGKILLed mid-run; every manifest's SHA-256s must be the same. Prints a table:
clips/s, peak resident memory per worker, hashes equal to the first run.

  .venv/bin/python bench/corpus_acceptance.py [--voice V] [--out /tmp/corpus-acceptance] [--phrases 25]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PHRASES = ["hey jarvis", "okay lockstep", "alexa", "hey computer", "wake up", "good morning", "lights on",
           "lights off", "stop the music", "next song", "volume up", "volume down", "what time is it",
           "set an alarm", "call home", "open the door", "close the blinds", "start the timer", "pause",
           "resume", "hey mycroft", "hello there", "are you listening", "cancel that", "thank you"]
GRID = ["--length-scales", "0.8,0.9,1,1.1,1.2", "--noise-scales", "0.333,0.5,0.667,0.8", "--noise-w-scales", "0.4,0.6,0.8,1"]


def corpus(rows, out, *extra, kill_after=None):
    cmd = [sys.executable, "-m", "lockstep.corpus", rows, "-o", out, "--voice", ARGS.voice, "--no-progress",
           "--json", *GRID, *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = []
    if kill_after:
        def killer():
            import psutil
            while proc.poll() is None:
                wav = os.path.join(out, "wav")
                if os.path.isdir(wav) and len(os.listdir(wav)) >= kill_after:
                    for p in psutil.process_iter(["cmdline"]):
                        if "ray::VoiceWorker" in " ".join(p.info["cmdline"] or []):
                            p.kill()
                            killed.append(p.pid)
                            return
                time.sleep(0.1)
        threading.Thread(target=killer, daemon=True).start()
    stdout, stderr = proc.communicate()
    if proc.returncode:
        sys.exit(f"corpus_acceptance: {' '.join(cmd)} failed:\n{stderr[-3000:]}")
    summary = json.loads(stdout.strip().splitlines()[-1])
    m = pq.read_table(os.path.join(out, "manifest.parquet")).to_pylist()
    return summary, {r["id"]: r["sha256"] for r in m}, m, time.perf_counter() - start, killed


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--out", default="/tmp/corpus-acceptance")
    ap.add_argument("--phrases", type=int, default=len(PHRASES))
    ARGS = ap.parse_args()
    shutil.rmtree(ARGS.out, ignore_errors=True)
    os.makedirs(ARGS.out)
    rows = os.path.join(ARGS.out, "rows.jsonl")
    with open(rows, "w") as f:
        for i, text in enumerate(PHRASES[:ARGS.phrases]):
            f.write(json.dumps({"id": f"p{i:02d}", "text": text}) + "\n")
    runs = [("1 worker x 2 threads, batches of 8", ["--workers", "1", "--threads", "2", "--batch-size", "8"], None),
            ("2 workers x 1 thread, batches of 8", ["--workers", "2", "--batch-size", "8"], None),
            ("2 workers, batches of 1", ["--workers", "2", "--batch-size", "1"], None),
            ("2 workers, batches of 32", ["--workers", "2", "--batch-size", "32"], None),
            ("2 workers, a worker SIGKILLed after 300 clips", ["--workers", "2", "--batch-size", "8"], 300),
            ("2-node cluster (ray.cluster_utils), 1 worker a node", None, None)]
    table, first = [], None
    for k, (what, extra, kill) in enumerate(runs):
        out = os.path.join(ARGS.out, f"run{k}")
        cluster = None
        if extra is None:
            from ray.cluster_utils import Cluster
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            cluster.add_node(num_cpus=1)
            extra = ["--address", cluster.address, "--workers", "2", "--batch-size", "8"]
        try:
            summary, hashes, m, wall, killed = corpus(rows, out, *extra, kill_after=kill)
        finally:
            if cluster is not None:
                cluster.shutdown()
        first = first or hashes
        workers = {}
        for r in m:
            if r["worker"]:
                workers[r["worker"]] = max(workers.get(r["worker"], 0), r["worker_peak_rss_mb"])
        ok = sum(r["status"] == "ok" for r in m)
        row = dict(what=what, clips=ok, ids=len(m), unique=len({r["id"] for r in m}), seconds=summary["seconds"],
                   clips_per_s=summary["clips_per_s"], wall=wall, same=hashes == first, killed=killed,
                   workers=len(workers), peak_rss_mb=sorted(round(v) for v in workers.values()))
        print(json.dumps(row), flush=True)
        table.append(row)
    print("\n| run | clips | ids once | SHA-256s = run 1 | clips/s | workers (peak RSS MB each) |")
    print("|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r['what']}{' (killed pid ' + str(r['killed'][0]) + ')' if r['killed'] else ''} | {r['clips']} | "
              f"{r['unique'] == r['ids']} | {r['same']} | {r['clips_per_s']} | {r['workers']} ({', '.join(map(str, r['peak_rss_mb']))}) |")
    if not all(r["same"] and r["unique"] == r["ids"] for r in table):
        sys.exit("corpus_acceptance: the runs differ")


if __name__ == "__main__":
    main()
