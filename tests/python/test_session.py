"""lockstep.InferenceSession runs an ONNX Runtime script unchanged but for the import."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lockstep

# An ordinary ONNX Runtime script (as in ONNX Runtime's Python examples): session options,
# providers, get_inputs/get_outputs, run with None and with names.
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    {import_line}

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
    feeds = {{}}
    for i in sess.get_inputs():
        assert i.type == "tensor(float)", i.type
        feeds[i.name] = np.load(sys.argv[1][:-len(".onnx")] + "." + i.name + ".npy")
    names = [o.name for o in sess.get_outputs()]
    outs = sess.run(None, feeds)
    again = sess.run(names, feeds)
    assert np.array_equal(outs[0], again[0])
    print(sess.get_providers()[0])
    np.save(sys.argv[2], outs[0])
""")


def run_script(import_line, model, out, tmp_path):
    script = tmp_path / ("script_%d.py" % len(import_line))
    script.write_text(SCRIPT.format(import_line=import_line))
    proc = subprocess.run([sys.executable, str(script), model, str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), np.load(out)


def test_onnxruntime_script_runs_unchanged(seed174, tmp_path):
    pytest.importorskip("onnxruntime")
    path, _, ref64 = seed174
    ort_provider, ort_out = run_script("import onnxruntime as ort", path, tmp_path / "ort.npy", tmp_path)
    ls_provider, ls_out = run_script("import lockstep as ort", path, tmp_path / "ls.npy", tmp_path)
    assert ort_provider == ls_provider == "CPUExecutionProvider"
    rel = np.linalg.norm(ls_out.astype(np.float64) - ort_out) / np.linalg.norm(ort_out)
    assert rel <= 1e-5  # both are float32 runtimes ~1e-6 from the oracle
    assert np.linalg.norm(ls_out - ref64) / np.linalg.norm(ref64) <= 1e-5


def test_session_metadata_and_provider_fallback(small_model):
    with pytest.warns(RuntimeWarning) if not lockstep.backends()["cuda"][0] else _nothing():
        sess = lockstep.InferenceSession(small_model, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    (i,) = sess.get_inputs()
    assert (i.name, i.shape, i.type) == ("x", ["N", 4], "tensor(float)")
    assert sess.get_outputs()[0].name == "y"
    assert "CPUExecutionProvider" in lockstep.get_available_providers()
    with pytest.raises(lockstep.InvalidArgumentError, match="unknown provider"):
        lockstep.InferenceSession(small_model, providers=["MadeUpExecutionProvider"])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
