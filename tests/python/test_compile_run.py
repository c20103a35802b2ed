"""lockstep.compile / run / __call__ against the shared models' float64 oracles."""
import numpy as np
import onnx
import pytest

import lockstep
from conftest import rel_l2

AGREE = 1e-5  # the project's agreement bar (DESIGN.md): relative L2 against float64


def test_cpu_matches_float64_oracle(seed174):
    path, feeds, ref64 = seed174
    model = lockstep.compile(path, backend="cpu")
    (out,) = model.run(None, feeds)
    assert out.dtype == np.float32 and out.shape == ref64.shape
    assert rel_l2(out, ref64) <= AGREE


def test_reference_matches_float64_oracle(seed174):
    path, feeds, ref64 = seed174
    (out,) = lockstep.compile(path, backend="reference").run(None, feeds)
    assert rel_l2(out, ref64) <= 1e-9


def test_run_follows_onnxruntime_conventions(seed174):
    path, feeds, ref64 = seed174
    model = lockstep.compile(path, backend="cpu", threads=1)
    name = model.outputs[0].name
    by_name = model.run([name], feeds)
    in_order = model.run(None, [feeds[i.name] for i in model.inputs])
    as_dict = model(**feeds)
    assert list(as_dict) == [name]
    np.testing.assert_array_equal(by_name[0], in_order[0])
    np.testing.assert_array_equal(as_dict[name], in_order[0])
    with pytest.raises(lockstep.InvalidArgumentError, match="no graph output named 'nope'"):
        model.run(["nope"], feeds)


def test_inputs_and_outputs_describe_symbolic_dims(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    (x,) = model.inputs
    assert (x.name, x.shape, x.dtype, x.type) == ("x", ("N", 4), "float32", "tensor(float)")
    for n in (1, 3):
        xs = np.linspace(-2, 2, n * 4, dtype=np.float32).reshape(n, 4)
        (y,) = model.run(None, {"x": xs})
        expected = np.tanh(xs.astype(np.float64) * np.linspace(-1, 1, 4) + 0.25)
        assert rel_l2(y, expected) <= AGREE


def test_model_from_bytes_and_modelproto(seed174):
    path, feeds, ref64 = seed174
    with open(path, "rb") as f:
        data = f.read()
    for source in (data, onnx.load(path)):
        (out,) = lockstep.compile(source, backend="cpu").run(None, feeds)
        assert rel_l2(out, ref64) <= AGREE


def test_backends_lists_every_backend():
    found = lockstep.backends()
    assert set(found) == {"reference", "cpu", "cuda", "vulkan"}
    assert found["cpu"][0] and found["reference"][0]


def test_f64_accumulate_is_an_option(seed174):
    # Every conv of the shared model in float64 (its node names all start with "/"): still within
    # the bar of the float64 oracle, and not the float32 run's bits; an empty list is float32.
    path, feeds, ref64 = seed174
    (f64,) = lockstep.compile(path, backend="cpu", f64_accumulate=["/"]).run(None, feeds)
    (f32,) = lockstep.compile(path, backend="cpu", f64_accumulate=[]).run(None, feeds)
    (default,) = lockstep.compile(path, backend="cpu").run(None, feeds)
    assert rel_l2(f64, ref64) <= AGREE
    assert rel_l2(f64, ref64) < rel_l2(f32, ref64)
    np.testing.assert_array_equal(f32, default)  # no voice: float32 unless asked
