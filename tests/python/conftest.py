"""Fixtures of the Python package's tests: the shared PyTorch-exported models with float64 oracles
(../shared/models beside the repo, or LOCKSTEP_MODELS_DIR) and small ONNX graphs built with onnx."""
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.environ.get("LOCKSTEP_MODELS_DIR", os.path.join(REPO, "..", "shared", "models"))
sys.path.insert(0, os.path.join(REPO, "runners"))  # faulty_runner.plant: an independent fault planter


def rel_l2(test, ref):
    test = np.asarray(test, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(test - ref) / np.linalg.norm(ref))


@pytest.fixture(scope="session")
def seed174():
    """(path, {z_p, y_mask}, float64 oracle) of the report's 174-node flow."""
    stem = os.path.join(MODELS, "vits_seed_174")
    if not os.path.exists(stem + ".onnx"):
        pytest.skip(f"SKIPPED: shared models not found at {MODELS} (set LOCKSTEP_MODELS_DIR)")
    feeds = {"z_p": np.load(stem + ".z_p.npy"), "y_mask": np.load(stem + ".y_mask.npy")}
    return stem + ".onnx", feeds, np.load(stem + ".ref64.npy")


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    """Bytes of an ONNX model built with onnx.helper (inputs/outputs: (name, elem type, shape))."""
    from onnx import TensorProto, helper
    to_vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    graph = helper.make_graph(nodes, "test", [to_vi(*i) for i in inputs], [to_vi(*o) for o in outputs],
                              list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.fixture(scope="session")
def small_model():
    """y = tanh(x * w + b) with symbolic batch 'N': [N, 4] float32."""
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4), "w")
    b = numpy_helper.from_array(np.full((1, 4), 0.25, dtype=np.float32), "b")
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
             helper.make_node("Add", ["xw", "b"], ["xwb"], name="add"),
             helper.make_node("Tanh", ["xwb"], ["y"], name="tanh")]
    return make_model(nodes, [("x", TensorProto.FLOAT, ["N", 4])], [("y", TensorProto.FLOAT, ["N", 4])], [w, b])
