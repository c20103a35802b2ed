#!/usr/bin/env python3
"""A test runner with a session cache keyed wrongly, as a serving runtime might have: ONNX Runtime,
except that a serving process (protocol v2) caches its compiled sessions under the graph's
structure (node names, op types, inputs and outputs) with the weights left out of the key. A second
model of the same structure and other weights is answered by the first one's session. With
--key path the cache is keyed by the model's file name instead (the same model under another path
compiles again: harmless, so determinism must PASS).

  stale_runner.py [--key structure|path] MODEL INPUT_DIR OUTPUT_DIR NAME...
  stale_runner.py [--key structure|path] --serve

A fresh process (protocol v1) serves one request and is always right. Needs onnx, onnxruntime."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402
import ort_runner  # noqa: E402

_sessions = {}


def cache_key(opts, model):
    if opts.get("key", "structure") == "path":
        return os.path.abspath(model)
    import onnx
    g = onnx.load(model, load_external_data=False).graph
    return tuple((n.name, n.op_type) for n in g.node) + tuple(i.name for i in g.input) + tuple(o.name for o in g.output)


def run_one(opts, model, input_dir, output_dir, wanted):
    key = cache_key(opts, model)
    if key not in _sessions:
        _sessions[key] = ort_runner.session(opts, model)
    sess = _sessions[key]
    feeds = P.load_inputs(input_dir, [i.name for i in sess.get_inputs()])
    P.write_outputs(output_dir, dict(zip(wanted, sess.run(wanted, feeds))))


if __name__ == "__main__":
    P.main(sys.argv[1:], __doc__, run_one)
