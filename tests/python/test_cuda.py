"""The CUDA backend through Python (runs on the GPU machine: bench/gpu/run_python.sh; skips
visibly elsewhere). Oracles: the shared model's float64 output and lockstep's reference."""
import numpy as np
import pytest

import lockstep
from conftest import rel_l2

if not lockstep.backends()["cuda"][0]:
    pytest.skip("SKIPPED: no usable GPU here (" + lockstep.backends()["cuda"][1] + "); CUDA tests run on the GPU machine",
                allow_module_level=True)


def test_cuda_matches_float64_oracle(seed174):
    path, feeds, ref64 = seed174
    (out,) = lockstep.compile(path, backend="cuda").run(None, feeds)
    assert rel_l2(out, ref64) <= 1e-5


def test_session_on_the_cuda_provider(seed174):
    path, feeds, ref64 = seed174
    sess = lockstep.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers()[0] == "CUDAExecutionProvider"
    assert rel_l2(sess.run(None, feeds)[0], ref64) <= 1e-5


def test_cuda_output_into_pytorch_on_the_gpu(seed174):
    torch = pytest.importorskip("torch", reason="SKIPPED: PyTorch is not installed here")
    path, feeds, ref64 = seed174
    (out,) = lockstep.compile(path, backend="cuda").run(None, feeds)
    t = torch.from_dlpack(out)
    assert t.data_ptr() == out.ctypes.data  # host output handed over without a copy
    on_gpu = t.cuda()
    # Inputs that went through PyTorch on the GPU and back, into a second compile.
    again = {k: torch.from_numpy(v).cuda().cpu().numpy() for k, v in feeds.items()}
    back = lockstep.compile(path, backend="cuda").run(None, again)[0]
    assert torch.equal(on_gpu.cpu(), torch.from_numpy(back))  # same bits on a second compile


def test_compare_bisect_and_determinism_on_cuda(seed174):
    path, feeds, _ = seed174
    assert lockstep.compare(path, ref="reference", test="cuda", feeds=feeds)
    assert lockstep.bisect(path, ref="reference", test="cuda", feeds=feeds)
    r = lockstep.determinism(path, backend="cuda", feeds=feeds, runs=2)
    assert r, r.summary


def test_check_on_cuda(seed174):
    path, feeds, _ = seed174
    r = lockstep.check(path, feeds, backends=["cpu", "cuda"], runs=2)
    assert r, str(r)


def test_device_outputs_go_to_pytorch_without_a_host_round_trip(seed174):
    torch = pytest.importorskip("torch", reason="SKIPPED: PyTorch is not installed here")
    path, feeds, ref64 = seed174
    model = lockstep.compile(path, backend="cuda")
    (on_device,) = model.run(None, feeds, device_outputs=True)
    t = torch.from_dlpack(on_device)
    assert t.is_cuda and tuple(t.shape) == ref64.shape
    (host,) = model.run(None, feeds)
    assert torch.equal(t.cpu(), torch.from_numpy(host))  # the same bits as the host outputs
    assert rel_l2(t.double().cpu().numpy(), ref64) <= 1e-5
    del model  # the buffer outlives the executable
    assert torch.isfinite(t).all()
