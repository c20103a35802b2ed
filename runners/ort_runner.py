#!/usr/bin/env python3
"""ONNX Runtime (CPU) as a lockstep runner (docs/runner-protocol.md).

  ort_runner.py [--threads N] [--opt-level all|basic|disable] MODEL.onnx INPUT_DIR OUTPUT_DIR NAME [NAME ...]

Runs MODEL on INPUT_DIR/<stem>.npy (one per graph input) and writes each wanted tensor NAME,
which must be a graph output of MODEL (lockstep extracts the subgraph ending there), as
OUTPUT_DIR/<stem>.npy. Needs `pip install onnxruntime numpy`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402


def main(argv):
    opts, model, input_dir, output_dir, wanted = P.parse_args(argv, __doc__)
    try:
        import onnxruntime as ort
    except ImportError as e:
        P.fail("onnxruntime is not importable by %s (%s): pip install onnxruntime numpy" % (sys.executable, e))
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(opts.get("threads", "1"))
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    level = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
             "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
             "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
    so.graph_optimization_level = level[opts.get("opt-level", "all")]
    session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    missing = [w for w in wanted if w not in outputs]
    if missing:
        P.fail("wanted tensor(s) %s are not graph outputs of %s (outputs: %s)" % (missing, model, outputs))
    feeds = P.load_inputs(input_dir, [i.name for i in session.get_inputs()])
    values = session.run(wanted, feeds)
    P.write_outputs(output_dir, dict(zip(wanted, values)))


if __name__ == "__main__":
    main(sys.argv[1:])
