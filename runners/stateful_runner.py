#!/usr/bin/env python3
"""A test runner with state that carries across compilations in one process, as the runtime of
apache/tvm#20157 seemed to have: ONNX Runtime, except that from the second request a process
serves on, node NAME's output is scaled (or made stale: the first request's value of it).

  stateful_runner.py --node NAME [--kind scale|stale] [--amount X] MODEL INPUT_DIR OUTPUT_DIR NAME...
  stateful_runner.py --node NAME [...] --serve

A fresh process (protocol v1) serves one request, so it is always right; `--serve` (v2) is wrong
from its second compile on. Needs onnx, numpy, onnxruntime."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402
import faulty_runner  # noqa: E402
import ort_runner  # noqa: E402

_requests = [0]


def run_one(opts, model, input_dir, output_dir, wanted):
    if "node" not in opts:
        P.fail("--node is required\n" + __doc__, 2)
    _requests[0] += 1
    if _requests[0] == 1:
        ort_runner.run_one({}, model, input_dir, output_dir, wanted)
        return
    with tempfile.TemporaryDirectory(prefix="stateful-runner-") as tmp:
        planted = os.path.join(tmp, "model.onnx")
        kind = opts.get("kind", "scale")
        # "stale" stands for a cached buffer from another compile: the value comes back as zeros.
        amount = 0.0 if kind == "stale" else float(opts.get("amount", "1.5"))
        if not faulty_runner.plant(model, planted, opts["node"], "scale", amount, 0):
            planted = model
        ort_runner.run_one({}, planted, input_dir, output_dir, wanted)


if __name__ == "__main__":
    P.main(sys.argv[1:], __doc__, run_one)
