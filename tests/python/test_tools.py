"""The tools as functions: results are truthy when the sides agree, and name what diverged.
Oracles: the float64 reference, ONNX Runtime, and faults planted by runners/faulty_runner.py."""
import json
import os

import numpy as np
import onnx
import pytest

import lockstep

ort = pytest.importorskip("onnxruntime")
from faulty_runner import plant  # noqa: E402  (runners/, an independent fault planter)


def ort_runner(model_path, feeds, wanted):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return dict(zip(wanted, sess.run(wanted, feeds)))


def faulty_ort_runner(node, tmp_path, kind="scale", amount=1.5):
    """ONNX Runtime with `node`'s output scaled, whenever the cut it is handed contains `node`."""
    def run(model_path, feeds, wanted):
        planted = str(tmp_path / "planted.onnx")
        return ort_runner(planted if plant(model_path, planted, node, kind, amount, 0) else model_path, feeds, wanted)
    return run


def mid_conv(path):
    convs = [n.name for n in onnx.load(path).graph.node if n.op_type == "Conv"]
    return convs[len(convs) // 2]


def test_compare_agrees_and_renders(seed174, tmp_path):
    path, feeds, _ = seed174
    r = lockstep.compare(path, ref="reference", test="cpu", feeds=feeds)
    assert r and r.worst_rel_l2 <= 1e-5
    assert "every output agrees" in str(r)
    data = json.loads(r.to_json())
    assert data["agrees"] and data["outputs"][0]["sha256_test"] == lockstep.sha256(lockstep.compile(path).run(None, feeds)[0])
    assert r.to_markdown().startswith("### lockstep compare")
    page = tmp_path / "compare.html"
    r.to_html(str(page))
    assert "<table>" in page.read_text()


def test_compare_catches_a_wrong_runner(seed174, tmp_path):
    path, feeds, _ = seed174
    r = lockstep.compare(path, ref="reference", test=faulty_ort_runner(mid_conv(path), tmp_path), feeds=feeds)
    assert not r and "DIFFERS" in str(r)


def test_bisect_finds_the_node_planted_in_a_python_runner(seed174, tmp_path):
    path, feeds, _ = seed174
    node = mid_conv(path)
    steps = []
    r = lockstep.bisect(path, ref="reference", test=faulty_ort_runner(node, tmp_path), feeds=feeds,
                        progress=steps.append)
    assert not r
    assert (r.node, r.op, r.verdict) == (node, "Conv", "local")
    assert r.metrics["rel_l2"] > 1e-3
    assert steps and r.probes and node in str(r)
    assert json.loads(r.to_json())["node"]["name"] == node


def test_bisect_of_a_correct_runner_agrees(seed174):
    path, feeds, _ = seed174
    r = lockstep.bisect(path, ref="reference", test=ort_runner, feeds=feeds)
    assert r and r.node is None


def test_bisect_of_lockstep_backends_has_every_boundary(seed174, tmp_path):
    path, feeds, _ = seed174
    r = lockstep.bisect(path, ref="reference", test="cpu", feeds=feeds)
    assert r and r.node is None and len(r.nodes) > 30
    assert all(n["verdict"] == "ok" for n in r.nodes)
    assert "<svg" in r.to_html(str(tmp_path / "b.html")) and "| #" in r.to_markdown()


def test_an_exception_in_a_runner_reaches_the_caller(seed174):
    path, feeds, _ = seed174

    def broken(model_path, feeds, wanted):
        raise KeyboardInterrupt  # as Ctrl-C inside a runner would

    with pytest.raises(KeyboardInterrupt):
        lockstep.bisect(path, ref="reference", test=broken, feeds=feeds)


def test_reduce_writes_a_reproducer(seed174, tmp_path):
    path, feeds, _ = seed174
    node = mid_conv(path)
    out = tmp_path / "repro"
    r = lockstep.reduce(path, ref="reference", test=faulty_ort_runner(node, tmp_path), out_dir=str(out), feeds=feeds)
    assert not r and r.bisect.node == node
    assert (out / "manifest.json").exists() and r.data["kept_nodes"] >= 1 and r.data["still_diverges"]


def test_extract_matches_onnx_runtime_on_the_cut(seed174, tmp_path):
    path, feeds, _ = seed174
    node = mid_conv(path)
    target = next(n.output[0] for n in onnx.load(path).graph.node if n.name == node)
    sub = tmp_path / "sub.onnx"
    r = lockstep.extract(path, [target], str(sub))
    assert r and r.outputs == [target] and r.nodes < len(onnx.load(path).graph.node)
    (mine,) = lockstep.compile(str(sub), backend="cpu").run(None, feeds)
    (theirs,) = ort_runner(str(sub), feeds, [target]).values()
    assert np.linalg.norm(mine - theirs) / np.linalg.norm(theirs) <= 1e-5


def test_determinism_of_the_cpu_backend(seed174):
    path, feeds, _ = seed174
    r = lockstep.determinism(path, backend="cpu", feeds=feeds, runs=2)
    assert r, r.summary
    modes = [run["mode"] for run in r.runs]
    assert "fresh#1" in modes and "A2" in modes  # fresh processes and the in-process sequence
    assert lockstep.cli_path() is not None
    # B and C: A's graph with other weights, each checked against its own fresh process (issue 43).
    by_mode = {run["mode"]: run for run in r.runs}
    assert by_mode["B"]["expect"] == "B" and by_mode["C"]["expect"] == "C"
    assert by_mode["B"]["sha256"] != by_mode["A1"]["sha256"] != by_mode["C"]["sha256"]
    assert by_mode["A from another path"]["sha256"] == by_mode["A1"]["sha256"]


def test_determinism_catches_a_runner_with_a_stale_second_answer(seed174):
    path, feeds, _ = seed174
    calls = []

    def stale(model_path, feeds, wanted):  # the report's second in-process compile: a stale answer
        calls.append(1)
        out = ort_runner(model_path, feeds, wanted)
        if len(calls) == 1:
            stale.first = out
        return stale.first if len(calls) == 2 else out

    r = lockstep.determinism(path, backend=stale, feeds=feeds)
    assert not r
    assert any("stale" in d for d in r.differences)
    assert lockstep.determinism(path, backend=ort_runner, feeds=feeds)


def test_bisect_passes_finds_nothing_on_a_correct_pipeline(seed174):
    path, feeds, _ = seed174
    r = lockstep.bisect_passes(path, backend="cpu", feeds=feeds)
    assert r and r.culprit is None and r.data["total_applications"] > 0


def test_check_on_a_model(seed174):
    path, feeds, _ = seed174
    steps = []
    r = lockstep.check(path, feeds, backends=["cpu"], runs=2, progress=steps.append)
    assert r, str(r)
    assert r.backends[0]["backend"] == "cpu" and any(p["where"].startswith("anchor") for p in r.backends[0]["points"])
    assert steps
    assert json.loads(r.to_json())["pass"]


def test_check_on_the_embedded_default():
    r = lockstep.check(backends=["cpu"], runs=1)
    assert r, str(r)


def test_in_process_bisect_of_a_stateful_runner(seed174):
    """runners/stateful_runner.py: right in a fresh process, wrong from its second compile in one."""
    import sys
    from conftest import REPO
    path, feeds, _ = seed174
    node = mid_conv(path)
    runner = f"{sys.executable} {os.path.join(REPO, 'runners', 'stateful_runner.py')} --node {node}"
    assert lockstep.bisect(path, ref="reference", test=runner, feeds=feeds)
    r = lockstep.bisect(path, ref="reference", test=runner, feeds=feeds, in_process=True)
    assert not r and r.node == node and r.data["in_process"] and r.data["warm_up_runs"] == 1
