#!/usr/bin/env python3
"""Apache TVM (Relax, LLVM CPU target) as a lockstep runner (docs/runner-protocol.md).

  tvm_runner.py [--target llvm] [--opt-level N] MODEL.onnx INPUT_DIR OUTPUT_DIR NAME [NAME ...]

The pipeline of apache/tvm issue #20157 on the CPU: relax.frontend.onnx.from_onnx ->
relax.build(target) -> relax.VirtualMachine. Each wanted NAME must be a graph output of MODEL
(lockstep extracts the subgraph ending there); each is written as OUTPUT_DIR/<stem>.npy.
Tested with `pip install apache-tvm==0.25.0.post1 apache-tvm-ffi==0.1.12 onnx numpy` on Python 3.11
(newer apache-tvm-ffi releases do not load that wheel's libtvm_runtime.so)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402


def to_numpy(x):
    return x.numpy() if hasattr(x, "numpy") else x.asnumpy()


def main(argv):
    opts, model_path, input_dir, output_dir, wanted = P.parse_args(argv, __doc__)
    try:
        import numpy as np
        import onnx
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
    except ImportError as e:
        P.fail("TVM is not importable by %s (%s): pip install apache-tvm==0.25.0.post1 apache-tvm-ffi==0.1.12 onnx"
               % (sys.executable, e))
    model = onnx.load(model_path)
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    outputs = [o.name for o in graph.output]
    missing = [w for w in wanted if w not in outputs]
    if missing:
        P.fail("wanted tensor(s) %s are not graph outputs of %s (outputs: %s)" % (missing, model_path, outputs))
    feeds = P.load_inputs(input_dir, [i.name for i in inputs])
    shape_dict = {name: list(v.shape) for name, v in feeds.items()}
    dtype_dict = {name: str(v.dtype) for name, v in feeds.items()}
    mod = from_onnx(model, shape_dict=shape_dict, dtype_dict=dtype_dict, keep_params_in_input=False)
    target = tvm.target.Target(opts.get("target", "llvm"))
    with tvm.transform.PassContext(opt_level=int(opts.get("opt-level", "3"))):
        executable = relax.build(mod, target=target)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    args = [tvm.runtime.tensor(feeds[i.name]) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(feeds[i.name])
            for i in inputs]
    result = vm["main"](*args)
    values = list(result) if len(outputs) > 1 or isinstance(result, (list, tuple)) else [result]
    if len(values) != len(outputs):
        P.fail("TVM returned %d values for %d graph outputs" % (len(values), len(outputs)))
    by_name = {name: np.asarray(to_numpy(v)) for name, v in zip(outputs, values)}
    P.write_outputs(output_dir, {w: by_name[w] for w in wanted})


if __name__ == "__main__":
    main(sys.argv[1:])
