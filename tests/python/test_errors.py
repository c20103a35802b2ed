"""Every error class, raised by real bad input where one exists, with node and op in the message."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import lockstep
from lockstep import _lockstep as native
from conftest import make_model


@pytest.mark.parametrize("code,cls", [
    ("invalid argument", lockstep.InvalidArgumentError), ("invalid model", lockstep.InvalidModelError),
    ("unsupported op", lockstep.UnsupportedOpError), ("unsupported opset", lockstep.UnsupportedOpError),
    ("unsupported attribute", lockstep.UnsupportedOpError), ("shape mismatch", lockstep.ShapeMismatchError),
    ("dtype mismatch", lockstep.DTypeMismatchError), ("missing input", lockstep.MissingInputError),
    ("i/o error", lockstep.IoError), ("limit exceeded", lockstep.LimitExceededError),
    ("out of memory", lockstep.OutOfMemoryError), ("device unavailable", lockstep.DeviceUnavailableError),
    ("divergence", lockstep.DivergenceError), ("internal error", lockstep.InternalError)])
def test_each_native_code_becomes_its_class(code, cls):
    with pytest.raises(cls) as info:
        native._raise_for_testing(code, "the reason", "node_7", "Conv")
    e = info.value
    assert isinstance(e, lockstep.Error)
    assert (e.code, e.node, e.op, e.message) == (code, "node_7", "Conv", "the reason")
    assert "node 'node_7' (Conv)" in str(e) and "the reason" in str(e)


def test_every_native_code_is_mapped():
    assert set(native.error_code_names()) <= set(lockstep._errors._BY_CODE)


def test_unsupported_op_names_node_and_op():
    data = make_model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                       helper.make_node("NoSuchOp", ["r"], ["y"], name="the_odd_one")],
                      [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])])
    with pytest.raises(lockstep.UnsupportedOpError) as info:
        lockstep.compile(data, backend="cpu")
    assert info.value.node == "the_odd_one" and "NoSuchOp" in str(info.value)


def test_wrong_shape_names_the_input(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    with pytest.raises(lockstep.ShapeMismatchError, match="'x'"):
        model.run(None, {"x": np.ones((2, 5), dtype=np.float32)})


def test_wrong_dtype_names_the_input(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    with pytest.raises(lockstep.DTypeMismatchError, match="'x'"):
        model.run(None, {"x": np.ones((2, 4), dtype=np.float64)})


def test_missing_and_unknown_inputs(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    with pytest.raises(lockstep.MissingInputError, match="'x'"):
        model.run(None, {})
    with pytest.raises(lockstep.InvalidArgumentError, match="'z'"):
        model.run(None, {"x": np.ones((1, 4), np.float32), "z": 1})


def test_malformed_model_and_missing_file(tmp_path):
    with pytest.raises(lockstep.InvalidModelError):
        lockstep.compile(b"\x08\x01this is not a model" * 10)
    with pytest.raises(lockstep.IoError):
        lockstep.compile(str(tmp_path / "absent.onnx"))


def test_bad_arguments(small_model):
    with pytest.raises(lockstep.InvalidArgumentError, match="unknown backend 'gpu'"):
        lockstep.compile(small_model, backend="gpu")
    with pytest.raises(lockstep.InvalidArgumentError, match="unknown option 'thread'"):
        lockstep.compile(small_model, backend="cpu", thread=2)


def test_out_of_range_id_names_the_gather_node():
    from onnx import numpy_helper
    table = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "table")
    data = make_model([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
                      [("ids", TensorProto.INT64, [2])], [("y", TensorProto.FLOAT, [2, 4])], [table])
    model = lockstep.compile(data, backend="cpu")
    with pytest.raises(lockstep.Error) as info:
        model.run(None, {"ids": np.array([0, 7], dtype=np.int64)})
    assert "embed" in str(info.value)


def test_memory_cap_is_a_limit_error(seed174):
    path, feeds, _ = seed174
    with pytest.raises(lockstep.LimitExceededError):
        lockstep.compile(path, backend="cpu", max_memory=1024)


def test_unavailable_cuda_is_device_unavailable(small_model):
    if lockstep.backends()["cuda"][0]:
        pytest.skip("SKIPPED: a GPU is present here")
    with pytest.raises(lockstep.DeviceUnavailableError):
        lockstep.compile(small_model, backend="cuda")
