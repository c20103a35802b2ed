#!/usr/bin/env python3
"""ONNX Runtime as a lockstep runner (docs/runner-protocol.md), on any of its execution providers.

  ort_runner.py [--provider cpu|cuda|tensorrt|coreml|dml|openvino|NAME] [--threads N]
                [--opt-level all|basic|disable] MODEL.onnx INPUT_DIR OUTPUT_DIR NAME [NAME ...]
  ort_runner.py [options] --serve          # protocol v2: one process, many requests

Runs MODEL on INPUT_DIR/<stem>.npy (one per graph input) and writes each wanted tensor NAME,
which must be a graph output of MODEL (lockstep extracts the subgraph ending there), as
OUTPUT_DIR/<stem>.npy. The provider must really run the session: ONNX Runtime's silent fallback
to the CPU is an error here. Needs `pip install onnxruntime numpy` (onnxruntime-gpu for cuda)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "tensorrt": "TensorrtExecutionProvider",
             "coreml": "CoreMLExecutionProvider", "dml": "DmlExecutionProvider",
             "openvino": "OpenVINOExecutionProvider", "rocm": "ROCMExecutionProvider"}


def session(opts, model):
    try:
        import onnxruntime as ort
    except ImportError as e:
        P.fail("onnxruntime is not importable by %s (%s): pip install onnxruntime numpy" % (sys.executable, e))
    provider = PROVIDERS.get(opts.get("provider", "cpu"), opts.get("provider", "cpu"))
    if provider not in ort.get_available_providers():
        P.fail("provider %s is not available in this onnxruntime (available: %s)"
               % (provider, ", ".join(ort.get_available_providers())))
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(opts.get("threads", "1"))
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    level = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
             "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
             "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
    so.graph_optimization_level = level[opts.get("opt-level", "all")]
    providers = [provider] + (["CPUExecutionProvider"] if provider != "CPUExecutionProvider" else [])
    sess = ort.InferenceSession(model, so, providers=providers)
    if sess.get_providers()[0] != provider:
        P.fail("onnxruntime fell back to %s: %s did not load" % (sess.get_providers()[0], provider))
    return sess


def run_one(opts, model, input_dir, output_dir, wanted):
    sess = session(opts, model)
    outputs = [o.name for o in sess.get_outputs()]
    missing = [w for w in wanted if w not in outputs]
    if missing:
        P.fail("wanted tensor(s) %s are not graph outputs of %s (outputs: %s)" % (missing, model, outputs))
    feeds = P.load_inputs(input_dir, [i.name for i in sess.get_inputs()])
    P.write_outputs(output_dir, dict(zip(wanted, sess.run(wanted, feeds))))


def main(argv):
    P.main(argv, __doc__, run_one)


if __name__ == "__main__":
    main(sys.argv[1:])
