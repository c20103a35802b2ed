#!/usr/bin/env python3
"""What the Python layer adds to a run (issue 23: <= 20 us): CompiledModel.run from Python against
the same compiled model's C++ run loop (time_native_runs), on small models, ONNX Runtime's Python
run beside it. Prints a markdown table for bench/RESULTS.md.

  .venv/bin/python3 bench/python_overhead.py [--repeats 20000]
"""
import argparse
import platform
import time

import numpy as np
from onnx import TensorProto, helper

import lockstep


def tiny_model(n):
    """y = tanh(x + x) on [1, n] float32."""
    nodes = [helper.make_node("Add", ["x", "x"], ["s"], name="add"), helper.make_node("Tanh", ["s"], ["y"], name="tanh")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def per_call(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(5):  # best of 5 batches: the least disturbed by the other core's load
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20000)
    args = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}, lockstep "
          f"{lockstep.__version__}, threads 1")
    print("| model | C++ run (us) | Python run (us) | overhead (us) | __call__ (us) | ONNX Runtime run (us) |")
    print("|---|---|---|---|---|---|")
    for n in (16, 4096):
        data = tiny_model(n)
        model = lockstep.compile(data, backend="cpu", threads=1)
        x = np.linspace(-1, 1, n, dtype=np.float32).reshape(1, n)
        feeds = {"x": x}
        native = min(model._native.time_native_runs([x], args.repeats) for _ in range(5))
        py = per_call(lambda: model.run(None, feeds), args.repeats)
        call = per_call(lambda: model(x=x), args.repeats)
        ort_us = "-"
        if ort is not None:
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
            ort_us = f"{per_call(lambda: sess.run(None, feeds), args.repeats) * 1e6:.1f}"
        print(f"| Add+Tanh [1,{n}] | {native * 1e6:.1f} | {py * 1e6:.1f} | {(py - native) * 1e6:.1f} | "
              f"{call * 1e6:.1f} | {ort_us} |")


if __name__ == "__main__":
    main()
