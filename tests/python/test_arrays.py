"""Zero-copy inputs and outputs, and DLPack hand-offs."""
import numpy as np
import pytest

import lockstep
from lockstep import _lockstep as native


def test_contiguous_input_is_shared_not_copied():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    back = native._roundtrip_for_testing(a)
    # The tensor lockstep sees, handed back as numpy, is the caller's memory: a copy would not share it.
    assert np.shares_memory(a, back)
    a[0, 0, 0] = 42.0
    assert back[0, 0, 0] == 42.0


def test_strided_or_foreign_dtype_input_is_copied_and_counted():
    before = native.conversion_stats()
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]  # not C-contiguous
    back = native._roundtrip_for_testing(a)
    after = native.conversion_stats()
    assert not np.shares_memory(a, back)
    np.testing.assert_array_equal(back, a)
    assert after["copied"] == before["copied"] + 1
    assert after["bytes_copied"] == before["bytes_copied"] + a.nbytes


def test_run_shares_its_inputs(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    x = np.ones((2, 4), dtype=np.float32)
    before = native.conversion_stats()
    model.run(None, {"x": x})
    after = native.conversion_stats()
    assert after["shared"] == before["shared"] + 1 and after["copied"] == before["copied"]


def test_unsupported_dtype_is_a_clear_error(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    with pytest.raises(lockstep.DTypeMismatchError, match="float16"):
        model.run(None, {"x": np.ones((1, 4), dtype=np.float16)})


def test_outputs_round_trip_through_dlpack(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    (y,) = model.run(None, {"x": np.ones((3, 4), dtype=np.float32)})
    back = np.from_dlpack(y)
    assert np.shares_memory(back, y)
    z = native._roundtrip_for_testing(back)  # and into lockstep again through DLPack/buffer
    assert np.shares_memory(z, y)


def test_dlpack_into_pytorch(small_model):
    torch = pytest.importorskip("torch", reason="SKIPPED: PyTorch is not installed here (the GPU machine has it)")
    model = lockstep.compile(small_model, backend="cpu")
    (y,) = model.run(None, {"x": np.ones((3, 4), dtype=np.float32)})
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.ctypes.data  # the same memory, no copy
    (y2,) = model.run(None, {"x": t.numpy()})
    assert y2.shape == (3, 4)


def test_device_outputs_need_a_device(small_model):
    model = lockstep.compile(small_model, backend="cpu")
    with pytest.raises(lockstep.InvalidArgumentError, match="no device outputs"):
        model.run(None, {"x": np.ones((1, 4), dtype=np.float32)}, device_outputs=True)
