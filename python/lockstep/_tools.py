"""The diagnosis tools as functions: compare, check, bisect, reduce, extract, determinism,
bisect_passes. A side (``ref``, ``test``, ``backend``) is a lockstep backend name ("reference",
"cpu", "cuda"), a runner command line (docs/runner-protocol.md), or a Python callable
``f(model_path, feeds, wanted) -> {name: array}`` run in this process."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import _errors
from . import _lockstep as _native
from ._model import Model, ModelLike, compile, load, ordered_feeds
from ._results import Result, write_atomic

Side = Any  # str (backend name or command line) or a callable runner
Feeds = Any  # dict name -> array, list in input order, or None (drawn from seed)
_BACKENDS = ("reference", "cpu", "cuda", "vulkan")


# ---- progress ---------------------------------------------------------------------------------

def _progress(progress: Any, total: int | None = None) -> Callable[[str], None] | None:
    """progress=True: a tqdm bar (a stderr line per step without tqdm); a callable receives each
    step's description; None/False: silent."""
    if progress is None or progress is False:
        return None
    if callable(progress):
        return progress
    try:
        from tqdm import tqdm  # type: ignore
    except ImportError:
        return lambda line: print(f"lockstep: {line}", file=sys.stderr)
    bar = tqdm(total=total, desc="lockstep", leave=False)

    def step(line: str) -> None:
        bar.set_postfix_str(line[:60])
        bar.update(1)
    return step


def _step(callback: Callable[[str], None] | None, line: str) -> None:
    if callback is not None:
        callback(line)


# ---- sides ------------------------------------------------------------------------------------

def _is_backend(side: Side) -> bool:
    return isinstance(side, str) and side in _BACKENDS


def _side_name(side: Side) -> str:
    if isinstance(side, str):
        return side
    return "python:" + getattr(side, "__qualname__", repr(side))


def _run_side(side: Side, model: Model, arrays: list, *, seed: int, options: dict) -> list[np.ndarray]:
    """Every graph output of ``model`` computed by one side, in graph order."""
    if _is_backend(side):
        return compile(model, side, **options).run(None, arrays, seed=seed)
    names = [o.name for o in model.outputs]
    feeds = {i.name: a for i, a in zip(model.inputs, arrays)}
    out = _native.run_runner(side, model.file(), feeds, names, int(options.get("threads", 0)))
    return [out[n] for n in names]


def _metrics(test: np.ndarray, ref: np.ndarray) -> tuple[dict, bool]:
    text, agrees = _native.metrics(test, ref)
    return json.loads(text), agrees


def sha256(array: np.ndarray) -> str:
    """The SHA-256 lockstep prints for a tensor (of its raw bytes, as ``lockstep run`` writes them)."""
    return _native.sha256(array)


# ---- compare ----------------------------------------------------------------------------------

class CompareResult(Result):
    """Every output of ``test`` against ``ref``: metrics, SHA-256s and a verdict per output."""

    def __init__(self, model: str, ref: str, test: str, outputs: list[dict]):
        self.title = f"lockstep compare: {test} against {ref}"
        self.outputs = outputs
        self.ok = all(o["agree"] for o in outputs)
        bar, cos = _native.agreement_bar()
        self.headers = ["output", "shape", "cosine", "max_abs_delta", "rms_ratio", "rel_l2", "verdict"]
        self.rows = [[o["name"], o["shape_test"], o["cosine"], o["max_abs_delta"], o["rms_ratio"], o["rel_l2"],
                      "ok" if o["agree"] else "DIFFERS"] for o in outputs]
        worst = max((o["rel_l2"] for o in outputs if isinstance(o["rel_l2"], float)), default=0.0)
        self.summary = (f"{'every output agrees' if self.ok else 'outputs differ'} (rel_l2 <= {bar:g} and cosine >= "
                        f"{cos}; worst rel_l2 {worst:.3g})")
        self.data = {"model": model, "ref": ref, "test": test, "agrees": self.ok, "outputs": outputs,
                     "thresholds": {"rel_l2_max": bar, "cosine_min": cos}}

    @property
    def worst_rel_l2(self) -> float:
        return max((o["rel_l2"] for o in self.outputs if isinstance(o["rel_l2"], float)), default=0.0)


def compare(model: ModelLike, ref: Side = "reference", test: Side = "cpu", feeds: Feeds = None, *, seed: int = 0,
            **options: Any) -> CompareResult:
    """Runs both sides on the same inputs and compares every output (``lockstep compare``)."""
    m = load(model)
    arrays = ordered_feeds(m, feeds, seed)
    ref_out = _run_side(ref, m, arrays, seed=seed, options=options)
    test_out = _run_side(test, m, arrays, seed=seed, options=options)
    rows = []
    for info, r, t in zip(m.outputs, ref_out, test_out):
        met, agree = _metrics(t, r)
        rows.append({"name": info.name, "shape_ref": list(r.shape), "shape_test": list(t.shape), **met,
                     "sha256_ref": sha256(r), "sha256_test": sha256(t), "agree": agree})
    return CompareResult(repr(m), _side_name(ref), _side_name(test), rows)


# ---- bisect -----------------------------------------------------------------------------------

class BisectResult(Result):
    """The first divergent node: ``node``, ``op``, ``metrics``, ``verdict`` ("local" — made there — or
    "inherited" — carried in), or ``node is None`` when the sides agree. ``nodes`` has every
    kernel boundary's row for lockstep backends; ``probes`` the runner calls for runners."""

    def __init__(self, data: dict, text: str, markdown: str | None = None, page: str | None = None):
        self.data = data
        self._text, self._markdown, self._page = text, markdown, page
        self.title = f"lockstep bisect: {data.get('test')} against {data.get('ref')}"
        if "nodes" in data:  # lockstep backends: every kernel boundary
            self.ok = bool(data["agrees"])
            first = data.get("first_divergent")
            self.nodes = data["nodes"]
            self.probes: list = []
            self.node = first["onnx_name"] if first else None
            self.op = first["op"] if first else None
            row = next((n for n in self.nodes if first and n["index"] == first["index"]), None)
            self.metrics = row
            self.verdict = first["verdict"] if first else None
            self.summary = data.get("summary", "")
        else:  # runners: binary search over cut points
            self.ok = not data["diverged"]
            node = data.get("node")
            self.nodes = []
            self.probes = data.get("probes", [])
            self.node = node["name"] if node else None
            self.op = node["op"] if node else None
            self.metrics = node["metrics"] if node else None
            self.verdict = data.get("local", {}).get("verdict") if node else None
            self.summary = (f"first divergent node: {self.node} ({self.op}), {self.verdict or 'not checked'}"
                            if node else "every output agrees")
        self.local = self.verdict == "local"
        self.headers = ["phase", "cut", "tensors", "bad", "worst tensor"] if self.probes else []
        self.rows = [[p["phase"], p["cut"], p["tensors"], p["bad"], p["worst_tensor"]] for p in self.probes]

    def __str__(self) -> str:
        return self._text.rstrip("\n")

    def to_markdown(self) -> str:
        return self._markdown if self._markdown is not None else super().to_markdown()

    def _html_page(self) -> str:
        return self._page if self._page is not None else super()._html_page()


def bisect(model: ModelLike, ref: Side = "reference", test: Side = "cpu", feeds: Feeds = None, *, seed: int = 0,
           local: str = "first", safety: float | None = None, floor: float | None = None, cap: float = 1e-4,
           calibrate: bool = True, work_dir: str = "", progress: Any = None, in_process: bool = False,
           **options: Any) -> BisectResult:
    """The first node where ``test`` departs from ``ref`` (``lockstep bisect``). Lockstep backends are
    compared at every kernel boundary of one compiled graph; runners (commands, callables) by
    running subgraphs cut from the model, O(log N) calls. ``in_process=True``: a runner command is
    ONE process (protocol v2, docs/runner-protocol.md) that first runs the whole model, so every
    subgraph is a later compile there (``lockstep bisect --in-process``)."""
    m = load(model)
    arrays = ordered_feeds(m, feeds, seed)
    if _is_backend(ref) and _is_backend(test):
        data, text, md, page = _native.bisect_backends(m._native, arrays, test, ref, options, local,
                                                       8.0 if safety is None else safety,
                                                       1e-6 if floor is None else floor, seed, repr(m))
        return BisectResult(json.loads(data), text, md, page)
    shapes = options.get("input_shapes")
    data, text = _native.bisect_runners(m.file(), arrays, ref, test, int(options.get("threads", 0)), shapes, calibrate,
                                        100.0 if safety is None else safety, 1e-5 if floor is None else floor, cap,
                                        True, work_dir, _progress(progress), in_process)
    return BisectResult(json.loads(data), text)


# ---- reduce -----------------------------------------------------------------------------------

class ReduceResult(Result):
    """A minimal reproducer in ``out_dir`` (model, inputs, manifest with SHA-256s and commands);
    truthy when the sides agree (nothing written)."""

    def __init__(self, data: dict, text: str):
        self.data = data
        self._text = text
        self.ok = not data["diverged"]
        self.out_dir = data["out_dir"] if data["diverged"] else None
        self.files = data["files"]
        self.bisect = BisectResult(data["bisect"], "")
        self.title = "lockstep reduce"
        self.summary = (f"{data['kept_nodes']} node(s) kept in {self.out_dir}; still diverges: "
                        f"{data['still_diverges']}" if data["diverged"] else "the sides agree: nothing to reduce")
        self.headers = ["file"]
        self.rows = [[f] for f in self.files]

    def __str__(self) -> str:
        return self._text.rstrip("\n")


def reduce(model: ModelLike, ref: Side = "reference", test: Side = "cpu", out_dir: str = "repro", feeds: Feeds = None,
           *, seed: int = 0, synthetic_weights: str | None = None, progress: Any = None,
           **options: Any) -> ReduceResult:
    """Bisects, then writes the first divergent node alone as a reproducer (``lockstep reduce``).
    ``synthetic_weights="0.1,0"`` re-checks it with seeded random weights (shareable)."""
    m = load(model)
    arrays = ordered_feeds(m, feeds, seed)
    data, text = _native.reduce(m.file(), arrays, ref, test, os.fspath(out_dir), int(options.get("threads", 0)),
                                options.get("input_shapes"), synthetic_weights, _progress(progress))
    return ReduceResult(json.loads(data), text)


# ---- extract ----------------------------------------------------------------------------------

class ExtractResult(Result):
    """The subgraph written by ``extract``: ``path``, kept ``nodes``, its ``inputs``/``outputs``."""

    def __init__(self, path: str, nodes: int, source_nodes: int, inputs: list, outputs: list):
        self.path, self.nodes, self.inputs, self.outputs = path, nodes, inputs, outputs
        self.ok = True
        self.title = "lockstep extract"
        self.summary = f"extracted {nodes} of {source_nodes} nodes -> {path}"
        self.headers = ["role", "tensor"]
        self.rows = [["input", n] for n in inputs] + [["output", n] for n in outputs]
        self.data = {"out": path, "nodes": nodes, "source_nodes": source_nodes, "inputs": inputs, "outputs": outputs}


def extract(model: ModelLike, outputs: Sequence[str], out_path: str, inputs: Sequence[str] = (),
            input_shapes: Mapping[str, Sequence[int]] | None = None) -> ExtractResult:
    """The nodes computing ``outputs`` (tensor or node names) from ``inputs`` (default: the model's
    inputs) as an ONNX file, like ``onnx.utils.extract_model`` (``lockstep extract``)."""
    m = load(model)
    shapes = {k: list(v) for k, v in input_shapes.items()} if input_shapes else None
    nodes, source, ins, outs = _native.extract(m.file(), list(outputs), list(inputs), shapes, os.fspath(out_path))
    return ExtractResult(os.fspath(out_path), nodes, source, list(ins), list(outs))


# ---- determinism ------------------------------------------------------------------------------

class DeterminismResult(Result):
    """SHA-256 of every output per run; truthy when every run of the model gave the same bits (and,
    for runners, the answer the reference gives for those inputs)."""

    def __init__(self, backend: str, output_names: list[str], runs: list[dict], differences: list[str],
                 note: str = ""):
        self.backend, self.output_names, self.runs, self.differences = backend, output_names, runs, differences
        self.ok = not differences
        self.title = f"lockstep determinism: {backend}"
        self.headers = ["run", "output", "sha256", "status"]
        self.rows = []
        for r in runs:
            if r.get("error"):
                self.rows.append([r["mode"], "-", "-", "FAILED: " + r["error"][:80]])
                continue
            for name, h in zip(output_names, r["sha256"]):
                bad = any(d.startswith(f"output {name}: SHA-256 of {r['mode']} differs") for d in differences)
                status = "other graph (not compared)" if not r.get("compared", True) else ("DIFFERS" if bad else "")
                self.rows.append([r["mode"], name, h, status])
        self.summary = ("every output bit-identical across " + ", ".join(r["mode"] for r in runs if r.get("compared", True))
                        if self.ok else f"{len(differences)} difference(s): " + "; ".join(differences))
        if note:
            self.summary += f" ({note})"
        self.data = {"backend": backend, "outputs": output_names, "runs": runs, "identical": self.ok,
                     "differences": differences, "note": note}


def cli_path() -> str | None:
    """The ``lockstep`` CLI installed with the package (its hidden worker runs fresh processes)."""
    for candidate in (os.path.join(sysconfig.get_path("scripts"), "lockstep"),
                      os.path.join(os.path.dirname(sys.executable), "lockstep"), shutil.which("lockstep")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _worker_hashes(exe: str, model_file: str, npz: str, out_dir: str, backend: str, options: dict,
                   n_outputs: int) -> list[str]:
    """One fresh process of the CLI's hidden worker: the model on the inputs in ``npz``, SHA-256 per output."""
    os.makedirs(out_dir)
    anchors = os.path.join(out_dir, "anchors.txt")
    open(anchors, "w").close()
    cmd = [exe, "__worker", model_file, "--backend", backend, "--inputs-npz", npz, "--anchors", anchors, "--out",
           out_dir, "--threads", str(int(options.get("threads", 0)))]  # run seed 0, as in-process
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(f"worker exited with {proc.returncode}: " + (lines[-1] if lines else ""))
    return [sha256(np.load(os.path.join(out_dir, f"output_{i}.npy"))) for i in range(n_outputs)]


def _fresh_runs(m: Model, npz: str, scratch: str, backend: str, runs: int, options: dict,
                step: Callable[[str], None] | None) -> list[dict]:
    """``runs`` fresh processes of the CLI's hidden worker, each compiling and running the model."""
    exe = cli_path()
    if exe is None:
        return []  # DeterminismResult notes it: only the in-process sequence ran
    out = []
    for f in range(1, runs + 1):
        _step(step, f"fresh process {f}/{runs}")
        run: dict = {"mode": f"fresh#{f}", "compared": True, "sha256": []}
        try:
            run["sha256"] = _worker_hashes(exe, m.file(), npz, os.path.join(scratch, f"run{f}"), backend, options,
                                           len(m.outputs))
        except RuntimeError as e:
            run["error"] = str(e)
        out.append(run)
    return out


def _differences(runs: list[dict], names: list[str]) -> list[str]:
    """Every compared run against the first successful one (a failed run is a difference)."""
    diffs = []
    base = next((r for r in runs if r.get("compared", True) and not r.get("error")), None)
    for r in runs:
        if not r.get("compared", True):
            continue
        if r.get("error"):
            diffs.append(f"run {r['mode']} failed: {r['error']}")
            continue
        if base is None or r is base:
            continue
        for name, a, b in zip(names, base["sha256"], r["sha256"]):
            if a != b:
                diffs.append(f"output {name}: SHA-256 of {r['mode']} differs from {base['mode']}")
    return diffs


def _churn_feeds(m: Model, arrays: list, seed: int) -> list:
    """Other inputs of the same shapes (for runners, whose in-process state is under test)."""
    other = m.draw_inputs(seed + 1)
    return [other[i.name] if np.asarray(a).dtype.kind == "f" else a for i, a in zip(m.inputs, arrays)]


def determinism(model: ModelLike, backend: Side = "cpu", feeds: Feeds = None, *, runs: int = 3, seed: int = 0,
                fresh: bool = True, progress: Any = None, **options: Any) -> DeterminismResult:
    """Same bits on every run (``lockstep determinism``). A lockstep backend: ``runs`` fresh processes
    and the in-process sequence A1, A1 again, [A1 at length B,] B, C (A's graph with other weights),
    A2, A from another path, A1 after A2, each step checked against a fresh process of its own model
    and inputs (the CLI's verdict, so both agree). A Python callable or command:
    calls A, B, A, B in this process (B: other inputs), each checked against the float64 reference
    of its inputs too, so that a runner answering from a stale cache is caught."""
    if runs < 1:
        raise _errors.InvalidArgumentError("invalid argument: runs must be at least 1", code="invalid argument")
    m = load(model)
    arrays = ordered_feeds(m, feeds, seed)
    names = [o.name for o in m.outputs]
    step = _progress(progress, runs + 4)
    if _is_backend(backend):
        with tempfile.TemporaryDirectory(prefix="lockstep_determinism_") as scratch:
            npz = os.path.join(scratch, "inputs.npz")
            np.savez(npz, **{i.name: np.asarray(a) for i, a in zip(m.inputs, arrays)})
            out = _fresh_runs(m, npz, scratch, backend, runs, options, step) if fresh else []
            note = "" if out or not fresh else "no fresh processes: the lockstep CLI is not installed beside the package"
            _step(step, "in-process A1, A1 again, B, C, A2, A from another path, A1 after A2")
            seq = json.loads(_native.determinism_in_process(m._native, arrays, backend, options, scratch, m.file()))
            out += seq["runs"]
            # Each model the sequence ran besides A, once in a fresh process: its bits are what the
            # in-process step must give (a stale compiled model gives another's).
            fresh_bits: dict[str, list[str]] = {}
            exe = cli_path() if fresh else None
            others = [(o["expect"], o["path"], npz) for o in seq["others"]]
            if seq["length_npz"]:
                others.append(("A at length B", m.file(), seq["length_npz"]))
            for k, (key, path, feeds_npz) in enumerate(others if exe else []):
                try:
                    fresh_bits[key] = _worker_hashes(exe, path, feeds_npz, os.path.join(scratch, f"fresh_{k}"),
                                                     backend, options, len(m.outputs))
                except RuntimeError as e:
                    note = (note + "; " if note else "") + f"no fresh run of {key}: {e}"
        verdict = json.loads(_native.determinism_differences(json.dumps(out), json.dumps(fresh_bits), names))
        if verdict["notes"]:
            note = (note + "; " if note else "") + "; ".join(verdict["notes"])
        return DeterminismResult(backend, names, out, verdict["differences"], note)
    # A runner: the answers of repeated in-process calls, and whether each is right for its inputs.
    other = _churn_feeds(m, arrays, seed)
    expected = {"A": _run_side("reference", m, arrays, seed=seed, options=options),
                "B": _run_side("reference", m, other, seed=seed, options=options)}
    out, wrong = [], []
    for k, label in enumerate(["A", "B", "A", "B"] * max(1, runs // 2)):
        mode = f"{label}{k // 2 + 1}"
        _step(step, f"call {k + 1}: inputs {label}")
        run: dict = {"mode": mode, "compared": True, "sha256": []}
        try:
            got = _run_side(backend, m, arrays if label == "A" else other, seed=seed, options=options)
            run["sha256"] = [sha256(g) for g in got]
            for name, g, e in zip(names, got, expected[label]):
                met, agrees = _metrics(g, e)
                if not agrees:
                    wrong.append(f"output {name}: call {mode} does not match the reference for its inputs "
                                 f"(rel_l2 {met['rel_l2']}): a stale or wrong answer")
        except _errors.Error as e:
            run["error"] = str(e)
        out.append(run)
    # The A calls against the first A, the B calls against the first B.
    diffs = (_differences([r for r in out if r["mode"].startswith("A")], names) +
             _differences([r for r in out if r["mode"].startswith("B")], names))
    return DeterminismResult(_side_name(backend), names, out, diffs + wrong)


# ---- bisect_passes ----------------------------------------------------------------------------

class BisectPassesResult(Result):
    """The first pass application after which ``backend`` moves beyond tolerance (``culprit``,
    ``culprit_line``, ``ir_before``/``ir_after``); truthy when no application moves it."""

    def __init__(self, data: dict):
        self.data = data
        self.ok = not data["found"] and not data["baseline_diverges"]
        self.culprit = data["culprit"] or None
        self.culprit_line = data["culprit_line"] or None
        self.ir_before, self.ir_after = data["ir_before"], data["ir_after"]
        self.title = f"lockstep bisect-passes: {data['backend']}"
        self.headers = ["limit", "error", "within tolerance"]
        self.rows = [[p["limit"], p["error"], p["within"]] for p in data["probes"]]
        if data["baseline_diverges"]:
            self.summary = "the backend is beyond tolerance with no pass applied: not a pass's doing"
        elif self.culprit:
            self.summary = f"application #{self.culprit} moves the output: {self.culprit_line}"
        else:
            self.summary = f"none of the {data['total_applications']} pass applications moves the output beyond tolerance"


def bisect_passes(model: ModelLike, backend: str = "cpu", feeds: Feeds = None, *, seed: int = 0,
                  safety: float = 8.0, **options: Any) -> BisectPassesResult:
    """Binary search over the pass pipeline (``lockstep bisect-passes``)."""
    m = load(model)
    arrays = ordered_feeds(m, feeds, seed)
    return BisectPassesResult(json.loads(_native.bisect_passes(m._native, arrays, backend, options, safety)))


# ---- check ------------------------------------------------------------------------------------

class CheckResult(Result):
    """Every backend against the float64 reference at anchor nodes and the outputs, and same bits
    across fresh processes and the in-process A/B/A sequence (``lockstep check``)."""

    def __init__(self, model: str, rows: list[dict], determinism: dict[str, DeterminismResult], skipped: dict):
        self.backends = rows
        self.determinism = determinism
        self.skipped = skipped
        self.ok = all(r["agrees"] for r in rows) and all(determinism.values()) and bool(rows)
        self.title = "lockstep check"
        self.headers = ["backend", "where", "cosine", "rel_l2", "max_abs_delta", "verdict"]
        self.rows = [[r["backend"], w["where"], w.get("cosine"), w.get("rel_l2"), w.get("max_abs_delta"), w["verdict"]]
                     for r in rows for w in r["points"]]
        fails = [r["backend"] for r in rows if not r["agrees"]] + [b for b, d in determinism.items() if not d]
        self.summary = ("PASS: " + ", ".join(r["backend"] for r in rows) + " agree with the float64 reference and repeat "
                        "bit for bit" if self.ok else "FAIL: " + ", ".join(dict.fromkeys(fails)) if fails else
                        "FAIL: no backend could run")
        if skipped:
            self.summary += " (skipped: " + "; ".join(f"{b}: {why}" for b, why in skipped.items()) + ")"
        self.data = {"model": model, "backends": rows, "pass": self.ok, "skipped": skipped,
                     "determinism": {b: d.to_dict() for b, d in determinism.items()}}


def check(model: ModelLike | None = None, feeds: Feeds = None, *, backends: Sequence[str] | None = None,
          seed: int = 0, runs: int = 3, progress: Any = None, **options: Any) -> CheckResult:
    """The main job (``lockstep check``) on any model, or on the embedded default when None."""
    from ._model import backends as available_backends, embedded_default
    m = embedded_default() if model is None else load(model)
    arrays = ordered_feeds(m, feeds, seed)
    present = available_backends()
    wanted = list(backends) if backends else [b for b in ("cpu", "cuda")]
    skipped = {b: present.get(b, (False, "unknown backend"))[1] for b in wanted if not present.get(b, (False, ""))[0]}
    wanted = [b for b in wanted if b not in skipped]
    step = _progress(progress, 1 + len(wanted) * 2)
    anchors = [name for _, name in _native.choose_anchors(m._native, model is None)]
    _step(step, "float64 reference at the anchors and outputs")
    ref = _native.capture_reference(m._native, arrays, anchors, options, seed)
    rows, det = [], {}
    for b in wanted:
        _step(step, f"{b} at the anchors and outputs")
        got = _native.capture_backend(m._native, arrays, b, anchors, options, seed)
        points, agrees = [], True
        for name, status, t, r in zip(anchors, got["status"], got["anchors"], ref["anchors"]):
            if t is None or r is None:
                points.append({"where": f"anchor {name}", "verdict": status})
                continue
            met, _ = _metrics(t, r)
            ok = met["cosine"] >= _native.agreement_bar()[1] if isinstance(met["cosine"], float) else False
            agrees &= ok
            points.append({"where": f"anchor {name}", **met, "verdict": "ok" if ok else "DIFFERS"})
        for info, t, r in zip(m.outputs, got["outputs"], ref["outputs"]):
            met, ok = _metrics(t, r)
            agrees &= ok
            points.append({"where": f"output {info.name}", **met, "verdict": "ok" if ok else "DIFFERS"})
        rows.append({"backend": b, "agrees": agrees, "points": points})
        _step(step, f"{b}: {runs} fresh processes and the in-process sequence")
        det[b] = determinism(m, b, arrays, runs=runs, seed=seed, **options)
    return CheckResult(repr(m), rows, det, skipped)
