#!/usr/bin/env python3
"""Apache TVM (Relax -> LLVM on the CPU) as a timed peer, with ort_run.py's command line:

  python3 tvm_run.py MODEL.onnx OUTDIR THREADS IN1.npy [IN2.npy ...] [--runs N] [--target T]

T is "llvm" (default, as the report) or a JSON target dict, e.g. '{"kind": "llvm", "mcpu": "znver4"}'.

The pipeline of the public report (apache/tvm issue #20157): relax.frontend.onnx.from_onnx ->
relax.build(target="llvm", opt_level 3) -> relax.VirtualMachine, untuned. Prints JSON with the
median of the timed runs and the compile time, and writes every output as OUTDIR/<name>.npy.
Needs the .venv-tvm of scripts/test.sh (apache-tvm==0.25.0.post1, apache-tvm-ffi==0.1.12)."""
import json, os, statistics, sys, time


def main(argv):
    runs, target = 5, "llvm"
    for flag in ("--runs", "--target"):
        if flag in argv:
            i = argv.index(flag)
            if flag == "--runs": runs = int(argv[i + 1])
            else: target = argv[i + 1]
            del argv[i:i + 2]
    model_path, outdir, threads, *input_paths = argv
    os.environ["TVM_NUM_THREADS"] = str(int(threads))  # read when TVM's thread pool starts
    import numpy as np, onnx, tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    model = onnx.load(model_path)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    feeds = [np.load(p) for p in input_paths]
    t0 = time.perf_counter()
    mod = from_onnx(model, shape_dict={i.name: list(f.shape) for i, f in zip(inputs, feeds)},
                    dtype_dict={i.name: str(f.dtype) for i, f in zip(inputs, feeds)}, keep_params_in_input=False)
    with tvm.transform.PassContext(opt_level=3):
        exe = relax.build(mod, target=tvm.target.Target(json.loads(target) if target.startswith("{") else target))
    vm = relax.VirtualMachine(exe, tvm.cpu())
    compile_ms = (time.perf_counter() - t0) * 1e3
    wrap = tvm.runtime.tensor if hasattr(tvm.runtime, "tensor") else tvm.nd.array
    args = [wrap(f) for f in feeds]
    result = vm["main"](*args)  # warm-up
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); result = vm["main"](*args)
        values = list(result) if isinstance(result, (list, tuple)) or hasattr(result, "__len__") and not hasattr(result, "shape") else [result]
        arrays = [v.numpy() for v in values]  # the copy back ends the timed region, as ORT's run() does
        ts.append((time.perf_counter() - t) * 1e3)
    os.makedirs(outdir, exist_ok=True)
    outs = [o.name for o in model.graph.output]
    for name, a in zip(outs, arrays):
        np.save(os.path.join(outdir, name.replace("/", "_") + ".npy"), a)
    print(json.dumps({"median_ms": statistics.median(ts), "compile_ms": compile_ms, "threads": int(threads),
                      "target": target, "tvm": tvm.__version__}))


if __name__ == "__main__":
    main(sys.argv[1:])
