#!/usr/bin/env python3
"""A load test of `python -m lockstep.piper.http_server` (issue 46): N concurrent clients send R
requests of mixed lengths with bad requests mixed in; every good response's audio is compared with
the same text's audio from a single request made first, every bad one must be its 4xx. Prints
p50/p99 latency, throughput and the server's resident memory after warm-up and at the end.

  .venv/bin/python bench/http_load.py [--voice .cache/voices/en_US-joe-medium.onnx] [--clients 16]
      [--requests 400] [--threads 1] [--max-concurrent 2]

tests/python/test_http_server.py runs it (fewer requests unless LOCKSTEP_HTTP_LOAD_REQUESTS says).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

TEXTS = [
    "Yes.",
    "The train leaves at nine.",
    "Please close the door behind you when you leave the room.",
    "It rained all morning. By noon the streets were dry again, and the market opened late.",
    "Numbers like 42 and dates like March 3rd are read aloud. So are abbreviations, e.g. Dr. Smith.",
    "A longer request: the committee reviewed every proposal in turn, asked each team about costs and "
    "schedules, and agreed to meet again next week. Until then, nothing changes.",
]
# (body, expected status, the field the error must name)
BAD = [
    (b"not json", 400, None),
    (b"[1, 2]", 400, None),
    (b"{}", 400, "text"),
    (b'{"text": "   "}', 400, "text"),
    (b'{"text": 7}', 400, "text"),
    (b'{"text": "Hi.", "voice": "no-such-voice"}', 404, "voice"),
    (b'{"text": "Hi.", "speaker": "nobody"}', 400, "speaker"),
    (b'{"text": "Hi.", "speaker_id": 9}', 400, "speaker_id"),
    (b'{"text": "Hi.", "length_scale": NaN}', 400, "length_scale"),
    (b'{"text": "Hi.", "noise_scale": -1}', 400, "noise_scale"),
    (b'{"text": "Hi.", "noise_w_scale": "loud"}', 400, "noise_w_scale"),
    (b'{"text": "Hi.", "format": "mp3"}', 400, "format"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(voice: str, *extra: str, port: int | None = None, python: str = sys.executable):
    """The server on 127.0.0.1 in a child process; returns (process, base URL) once it answers."""
    port = port or free_port()
    proc = subprocess.Popen([python, "-m", "lockstep.piper.http_server", "-m", voice, "--host", "127.0.0.1",
                             "--port", str(port), *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"http_server exited {proc.returncode}:\n{proc.stdout.read().decode()[-3000:]}")
        try:
            urllib.request.urlopen(url + "/info", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("http_server did not answer in 180 s")


def post(url: str, body: bytes, timeout: float = 300) -> tuple[int, bytes, dict]:
    req = urllib.request.Request(url + "/synthesize", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def run_load(url: str, pid: int, clients: int, requests: int, seed: int = 1) -> dict:
    """Sends `requests` requests from `clients` threads (about one in six bad); returns the figures and
    the failures (an empty list when every response was right)."""
    singles = {t: post(url, json.dumps({"text": t}).encode())[1] for t in TEXTS}  # one at a time, first
    rng = random.Random(seed)
    plan = [("bad", rng.randrange(len(BAD))) if rng.random() < 1 / 6 else ("good", rng.randrange(len(TEXTS)))
            for _ in range(requests)]
    warm = min(len(plan), max(clients, requests // 8))
    failures, latencies, lock = [], [], threading.Lock()
    rss = {}

    def one(k: int):
        kind, i = plan[k]
        body = json.dumps({"text": TEXTS[i]}).encode() if kind == "good" else BAD[i][0]
        t0 = time.perf_counter()
        status, data, _ = post(url, body)
        dt = time.perf_counter() - t0
        with lock:
            if kind == "good":
                latencies.append(dt)
                if status != 200 or data != singles[TEXTS[i]]:
                    failures.append(f"request {k} ({TEXTS[i][:30]!r}): status {status}, audio "
                                    f"{'differs from the single request' if status == 200 else data[:200]!r}")
            else:
                want_status, want_field = BAD[i][1], BAD[i][2]
                field = json.loads(data).get("field") if data.startswith(b"{") else "(not JSON)"
                if status != want_status or field != want_field:
                    failures.append(f"bad request {BAD[i][0][:40]!r}: {status} field {field!r}, "
                                    f"expected {want_status} field {want_field!r}")

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(warm)))
        rss["after warm-up"] = rss_kib(pid)
        list(pool.map(one, range(warm, len(plan))))
    wall = time.perf_counter() - start
    rss["end"] = rss_kib(pid)
    latencies.sort()
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")
    return {"requests": len(plan), "good": len(latencies), "bad": len(plan) - len(latencies), "clients": clients,
            "wall_s": wall, "throughput_rps": len(plan) / wall, "p50_s": pct(0.50), "p99_s": pct(0.99),
            "rss_kib_after_warmup": rss["after warm-up"], "rss_kib_end": rss["end"], "failures": failures}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-concurrent", type=int, default=2)
    args = ap.parse_args()
    proc, url = start_server(args.voice, "--noise-scale", "0", "--noise-w-scale", "0", "--threads", str(args.threads),
                             "--max-concurrent", str(args.max_concurrent), "--max-queue", "64")
    try:
        r = run_load(url, proc.pid, args.clients, args.requests)
    finally:
        proc.terminate()
        proc.wait()
    print(json.dumps({k: v for k, v in r.items() if k != "failures"}, indent=1))
    for f in r["failures"][:20]:
        print("FAIL", f)
    return 1 if r["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
