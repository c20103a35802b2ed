#!/usr/bin/env python3
"""Apache TVM (Relax) as a lockstep runner (docs/runner-protocol.md), on any of its targets.

  tvm_runner.py [--target llvm|cuda|metal|vulkan|opencl|rocm|JSON] [--opt-level N]
                MODEL.onnx INPUT_DIR OUTPUT_DIR NAME [NAME ...]
  tvm_runner.py [options] --serve          # protocol v2: one process, many compiles

The pipeline of apache/tvm issue #20157: relax.frontend.onnx.from_onnx -> relax.build(target) ->
relax.VirtualMachine on the target's device. GPU targets get TVM's own default GPU schedules
(the "zero" pipeline, then dlight's ApplyDefaultSchedule with the GPU rules, as TVM's Relax
tutorials do): without them TVM refuses to build for a GPU. A target is a kind name or a JSON
target dict ('{"kind": "cuda", "arch": "sm_90"}'), which TVM 0.25 takes as tvm.target.Target(dict).
Each wanted NAME must be a graph output of MODEL; each is written as OUTPUT_DIR/<stem>.npy.
Tested with `pip install apache-tvm==0.25.0.post1 apache-tvm-ffi==0.1.12 onnx numpy` on Python 3.11
(newer apache-tvm-ffi releases do not load that wheel's libtvm_runtime.so)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402

GPU_KINDS = ("cuda", "metal", "vulkan", "opencl", "rocm")


def to_numpy(x):
    return x.numpy() if hasattr(x, "numpy") else x.asnumpy()


def target_of(tvm, spec):
    """(tvm.target.Target, its device) for a kind name or a JSON target dict. TVM 0.25 wants GPU
    targets as dicts: a bare GPU kind becomes {"kind": KIND} (cuda: with the device's sm_XY arch)."""
    if spec.lstrip().startswith("{"):
        desc = json.loads(spec)
    elif spec in GPU_KINDS:
        desc = {"kind": spec}
    else:
        desc = spec
    kind = desc["kind"] if isinstance(desc, dict) else spec.split()[0]
    device = tvm.cpu(0) if kind in ("llvm", "c") else tvm.device(kind, 0)
    if kind in GPU_KINDS and not device.exist:
        P.fail("target %s: no %s device here" % (spec, kind))
    if kind == "cuda" and isinstance(desc, dict) and "arch" not in desc:
        desc["arch"] = "sm_" + device.compute_version.replace(".", "")
    return tvm.target.Target(desc), device


def build(tvm, relax, mod, target, opt_level):
    if target.kind.name in GPU_KINDS:
        try:  # TVM 0.25 keeps dlight under s_tir; older releases had tvm.dlight
            from tvm.s_tir import dlight as dl
        except ImportError:
            from tvm import dlight as dl
        mod = relax.get_pipeline("zero")(mod)
        with target:
            mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                          dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    with tvm.transform.PassContext(opt_level=opt_level):
        return tvm.compile(mod, target=target) if hasattr(tvm, "compile") else relax.build(mod, target=target)


def run_one(opts, model_path, input_dir, output_dir, wanted):
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
    target, device = target_of(tvm, opts.get("target", "llvm"))
    executable = build(tvm, relax, mod, target, int(opts.get("opt-level", "3")))
    vm = relax.VirtualMachine(executable, device)
    make = tvm.runtime.tensor if hasattr(tvm.runtime, "tensor") else tvm.nd.array
    args = [make(feeds[i.name], device) for i in inputs]
    result = vm["main"](*args)
    values = list(result) if len(outputs) > 1 or isinstance(result, (list, tuple)) else [result]
    if len(values) != len(outputs):
        P.fail("TVM returned %d values for %d graph outputs" % (len(values), len(outputs)))
    by_name = {name: np.asarray(to_numpy(v)) for name, v in zip(outputs, values)}
    P.write_outputs(output_dir, {w: by_name[w] for w in wanted})


def main(argv):
    P.main(argv, __doc__, run_one)


if __name__ == "__main__":
    main(sys.argv[1:])
