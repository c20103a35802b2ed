#!/usr/bin/env python3
"""A test wrapper: plants a numeric fault in one ONNX node's output, then runs another runner.

  faulty_runner.py --node NAME [--kind scale|offset|nan] [--amount X] [--output K]
                   --inner "python3 ort_runner.py" | --inner ort  MODEL INPUT_DIR OUTPUT_DIR NAME [NAME ...]

lockstep hands runners extracted subgraphs, so the fault is planted by editing the model it
receives: when node NAME is in it, its output K is renamed and a Mul (scale), Add (offset) or
Add of a NaN-at-element-0 tensor (nan) recreates the original name. A model without NAME runs
unchanged. `--inner ort` runs ort_runner in this process (one Python start-up instead of
two, which halves the cost of the acceptance sweeps). Needs `pip install onnx numpy` plus whatever the inner runner needs."""
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _protocol as P  # noqa: E402


def plant(model_path, out_path, node_name, kind, amount, output_index):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(model_path)
    g = model.graph
    nodes = [n for n in g.node if n.name == node_name]
    if not nodes:
        return False
    node = nodes[0]
    if output_index >= len(node.output) or not node.output[output_index]:
        P.fail("node %s has no output %d" % (node_name, output_index))
    target = node.output[output_index]
    inner = target + "__before_fault"
    node.output[output_index] = inner
    dtype = np.float32
    for vi in list(g.value_info) + list(g.output):
        if vi.name == target and vi.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE:
            dtype = np.float64
    const = target + "__fault"
    if kind == "scale":
        op, value = "Mul", np.array(amount, dtype=dtype)
    elif kind == "offset":
        op, value = "Add", np.array(amount, dtype=dtype)
    elif kind == "nan":
        op, value = "Add", np.array(np.nan, dtype=dtype)  # every element NaN: unmissable
    else:
        P.fail("unknown fault kind '%s' (scale, offset, nan)" % kind)
    g.initializer.append(numpy_helper.from_array(value, const))
    fault = helper.make_node(op, [inner, const], [target], name=node_name + "__fault")
    # Insert right after the faulty node to keep the topological order.
    index = list(g.node).index(node)
    g.node.insert(index + 1, fault)
    onnx.save(model, out_path)
    return True


def main(argv):
    opts, model, input_dir, output_dir, wanted = P.parse_args(argv, __doc__)
    if "node" not in opts or "inner" not in opts:
        P.fail("--node and --inner are required\n" + __doc__, 2)
    with tempfile.TemporaryDirectory(prefix="faulty-runner-") as tmp:
        planted = os.path.join(tmp, "model.onnx")
        if not plant(model, planted, opts["node"], opts.get("kind", "scale"), float(opts.get("amount", "2.0")),
                     int(opts.get("output", "0"))):
            planted = model
        if opts["inner"] == "ort":
            import ort_runner
            ort_runner.main([planted, input_dir, output_dir] + wanted)
            return
        cmd = shlex.split(opts["inner"]) + [planted, input_dir, output_dir] + wanted
        sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main(sys.argv[1:])
