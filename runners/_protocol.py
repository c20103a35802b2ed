"""Shared helpers of the runner protocol (docs/runner-protocol.md): v1 (one process per call) and
v2 (`--serve`: one process, requests as JSON lines on stdin, replies on stdout)."""
import json
import os
import re
import sys

import numpy as np

_UNSAFE = re.compile(rb"[^A-Za-z0-9._-]")


def file_stem(name):
    """The protocol's file name of a tensor (without .npy): every byte outside [A-Za-z0-9._-]
    of its UTF-8 form becomes '_'."""
    return _UNSAFE.sub(b"_", name.encode("utf-8")).decode("ascii")


def parse_args(argv, usage):
    """MODEL INPUT_DIR OUTPUT_DIR NAME [NAME ...] with options (--opt VALUE) anywhere before."""
    opts, rest = {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and i + 1 < len(argv) and not rest:
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        rest.append(a)
        i += 1
    if len(rest) < 4:
        fail(usage)
    return opts, rest[0], rest[1], rest[2], rest[3:]


def load_inputs(input_dir, names):
    """{name: array} for each graph input name, from INPUT_DIR/<stem>.npy."""
    feeds = {}
    for name in names:
        path = os.path.join(input_dir, file_stem(name) + ".npy")
        if not os.path.exists(path):
            fail("no input file %s for graph input '%s'" % (path, name))
        feeds[name] = np.load(path, allow_pickle=False)
    return feeds


def write_outputs(output_dir, values):
    os.makedirs(output_dir, exist_ok=True)
    for name, value in values.items():
        path = os.path.join(output_dir, file_stem(name) + ".npy")
        tmp = path + ".tmp.npy"
        np.save(tmp, np.ascontiguousarray(value))
        os.replace(tmp, path)


def fail(message, code=1):
    if _serving:
        raise RequestFailed(message)
    sys.stderr.write("runner: %s\n" % message)
    sys.exit(code)


def main(argv, usage, run_one):
    """A runner's entry point for both protocol versions. `run_one(opts, model, input_dir,
    output_dir, wanted)` runs one request; a failure inside it calls fail() (v1: exit) or raises
    (v2: an error reply; the process serves on)."""
    opts, rest = {}, []
    i = 0
    while i < len(argv):  # options first, as parse_args takes them
        a = argv[i]
        if a.startswith("--") and a != "--serve" and i + 1 < len(argv) and not rest:
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        rest.append(a)
        i += 1
    if rest == ["--serve"]:
        serve(opts, run_one)
        return
    _, model, input_dir, output_dir, wanted = parse_args(argv, usage)
    run_one(opts, model, input_dir, output_dir, wanted)


class RequestFailed(Exception):
    """Raised by fail() while serving: the request fails, the runner goes on."""


_serving = False


def serve(opts, run_one):
    """Protocol v2: announce the version, then answer one JSON request per stdin line until EOF."""
    global _serving
    _serving = True
    out = sys.stdout
    sys.stdout = sys.stderr  # anything the runtime prints goes to the log, not into the replies
    out.write(json.dumps({"lockstep_runner": 2}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            run_one(opts, req["model"], req["inputs"], req["outputs"], list(req["wanted"]))
            reply = {"ok": True}
        except (RequestFailed, Exception) as e:  # noqa: B014  (a bad request must not end the runner)
            reply = {"ok": False, "error": str(e) or type(e).__name__}
        out.write(json.dumps(reply) + "\n")
        out.flush()
