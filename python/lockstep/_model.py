"""Loading, compiling and running models: ``lockstep.load``, ``lockstep.compile``."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

from . import _errors
from . import _lockstep as _native

ModelLike = Union[str, "os.PathLike[str]", bytes, "Model", Any]  # Any: an onnx.ModelProto


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output: ``shape`` holds ints, dim_param names (str) for symbolic dims, and
    None for dims unknown before a run."""

    name: str
    shape: tuple
    dtype: str

    @property
    def type(self) -> str:  # ONNX Runtime's spelling, e.g. "tensor(float)"
        return _ORT_TYPES.get(self.dtype, f"tensor({self.dtype})")


_ORT_TYPES = {"float32": "tensor(float)", "float64": "tensor(double)", "int64": "tensor(int64)",
              "int32": "tensor(int32)", "bool": "tensor(bool)"}


def _infos(described: list) -> list[ValueInfo]:
    return [ValueInfo(d["name"], tuple(d["shape"]), d["dtype"]) for d in described]


class Model:
    """An imported ONNX model (``lockstep.load``). ``path`` is the file it came from, or None."""

    def __init__(self, native: Any, source: str | None = None):
        self._native = native
        self._source = source
        self._temp_path: str | None = None

    @property
    def path(self) -> str | None:
        return self._native.path or None

    @property
    def inputs(self) -> list[ValueInfo]:
        return _infos(self._native.inputs())

    @property
    def outputs(self) -> list[ValueInfo]:
        return _infos(self._native.outputs())

    @property
    def nodes(self) -> list[tuple[str, str]]:
        """(ONNX node name, op) in the model's order."""
        return list(self._native.node_names())

    def node_outputs(self, node_name: str) -> list[str]:
        """The ONNX names of a node's output values."""
        return list(self._native.node_output_names(node_name))

    def with_outputs(self, names: Sequence[str]) -> "Model":
        """This model with the named values (ONNX tensor names) as more outputs after its own, computed
        by the same compiled model: an intermediate value without rewriting the file."""
        return Model(self._native.with_outputs(list(names)))

    def file(self) -> str:
        """A file holding the model, for runners and reducers: its own path, or a temporary copy
        written once (removed when the Model is collected)."""
        if self.path:
            return self.path
        if self._temp_path is None:
            fd, path = tempfile.mkstemp(prefix="lockstep_model_", suffix=".onnx")
            os.close(fd)
            self._native.save(path)
            self._temp_path = path
        return self._temp_path

    def draw_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Inputs drawn as the CLI draws them for ``--seed`` (uniform [-1, 1] floats, zero ints)."""
        arrays = self._native.draw_inputs(seed)
        return {info.name: a for info, a in zip(self.inputs, arrays)}

    def __del__(self):
        if getattr(self, "_temp_path", None):
            try:
                os.unlink(self._temp_path)
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"<lockstep.Model {self._source or self.path or '(bytes)'}: {len(self.nodes)} nodes>"


def load(model: ModelLike) -> Model:
    """A model from a path, ONNX bytes, an ``onnx.ModelProto``, or a Model (returned as is)."""
    if isinstance(model, Model):
        return model
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        return Model(_native.NativeModel.load(path), path)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return Model(_native.NativeModel.from_bytes(bytes(model), os.getcwd()))
    if hasattr(model, "SerializeToString"):
        return Model(_native.NativeModel.from_bytes(model.SerializeToString(), os.getcwd()))
    raise _errors.InvalidArgumentError(
        f"invalid argument: a model is a path, ONNX bytes or an onnx.ModelProto (given {type(model).__name__})",
        code="invalid argument")


def embedded_default() -> Model:
    """The embedded default of ``lockstep check``: the 174-node VITS flow of apache/tvm#20157."""
    return Model(_native.NativeModel.embedded_default(), "(embedded default)")


def _invalid(message: str) -> _errors.InvalidArgumentError:
    return _errors.InvalidArgumentError("invalid argument: " + message, code="invalid argument", message=message)


def ordered_feeds(model: Model, feeds: Mapping[str, Any] | Sequence[Any] | None, seed: int = 0) -> list:
    """Feeds in graph-input order: from a dict by name, a list in order, or drawn from ``seed``."""
    infos = model.inputs
    if feeds is None:
        if model._source == "(embedded default)":  # the report's inputs, as the CLI feeds them
            return list(_native.NativeModel.embedded_default_inputs())
        drawn = model.draw_inputs(seed)
        return [drawn[i.name] for i in infos]
    if isinstance(feeds, Mapping):
        names = {i.name for i in infos}
        unknown = [k for k in feeds if k not in names]
        if unknown:
            raise _invalid(f"no graph input named {unknown[0]!r} (inputs: {', '.join(i.name for i in infos)})")
        missing = [i.name for i in infos if i.name not in feeds]
        if missing:
            raise _errors.MissingInputError(f"missing input: input {missing[0]!r} was not fed", code="missing input",
                                            message=f"input {missing[0]!r} was not fed")
        return [feeds[i.name] for i in infos]
    feeds = list(feeds)
    if len(feeds) != len(infos):
        raise _invalid(f"{len(feeds)} inputs given, the model has {len(infos)}")
    return feeds


class CompiledModel:
    """A model compiled for one backend. ``run`` follows ONNX Runtime's ``InferenceSession.run``:
    ``run(output_names or None, {input name: array}) -> [arrays]``; calling it with keyword feeds
    returns ``{output name: array}``. Runs release the GIL; one run at a time per compiled model."""

    def __init__(self, model: Model, backend: str, options: dict):
        self.model = model
        self.backend = backend
        self.options = dict(options)
        self._native = _native.compile(model._native, backend, options)
        self.inputs = model.inputs
        self.outputs = model.outputs
        self._output_index = {o.name: i for i, o in enumerate(self.outputs)}
        self._input_names = [i.name for i in self.inputs]

    def run(self, output_names: Iterable[str] | None, feeds: Mapping[str, Any] | Sequence[Any], *,
            seed: int = 0, device_outputs: bool = False) -> list:
        """Outputs named by ``output_names`` (all, in graph order, when None). ``seed`` seeds the
        model's random ops (RandomNormalLike, ...): the same seed gives the same bits everywhere.
        ``device_outputs=True`` (cuda, fixed shapes): the outputs stay in GPU memory, as arrays
        that ``torch.from_dlpack`` / ``cupy.from_dlpack`` take without a copy."""
        names = self._input_names
        if isinstance(feeds, dict) and len(feeds) == len(names):  # the common case, without the checks' cost
            try:
                arrays = [feeds[n] for n in names]
            except KeyError:
                arrays = ordered_feeds(self.model, feeds)
        else:
            arrays = ordered_feeds(self.model, feeds)
        if device_outputs:
            outputs = self._native.run_device(arrays, seed)
            if outputs is None:
                raise _invalid(f"device_outputs: the {self.backend} executable has no device outputs (cuda with "
                               "fixed shapes has them)")
        else:
            outputs = self._native.run(arrays, seed)
        if output_names is None:
            return outputs
        picked = []
        for name in output_names:
            if name not in self._output_index:
                raise _invalid(f"no graph output named {name!r} (outputs: {', '.join(self._output_index)})")
            picked.append(outputs[self._output_index[name]])
        return picked

    def __call__(self, *, seed: int = 0, **feeds: Any) -> dict[str, np.ndarray]:
        outputs = self.run(None, feeds, seed=seed)
        return {o.name: a for o, a in zip(self.outputs, outputs)}

    def kernel_implementations(self) -> list[str]:
        """What computes each node of the compiled graph (``lockstep info --kernels``)."""
        return list(self._native.kernel_implementations())

    @property
    def last_device_ms(self) -> float | None:
        """Device time of the last run's kernels (cuda), None where the backend does not measure it."""
        return self._native.last_device_ms

    def __repr__(self) -> str:
        return f"<lockstep.CompiledModel {self.backend}: {len(self.inputs)} inputs, {len(self.outputs)} outputs>"


_OPTION_NAMES = ("threads", "input_shapes", "opt_bisect_limit", "print_after_all", "fuse", "observe", "safe",
                 "max_memory", "precision")


def compile(model: ModelLike, backend: str = "cpu", **options: Any) -> CompiledModel:
    """Compiles ``model`` (path, bytes, onnx.ModelProto or Model) for ``backend`` ("cpu", "cuda" or
    "reference"). Options: threads, input_shapes ({name: shape}), fuse, observe ([node names]),
    max_memory (bytes), precision ("fp32" strict, "tf32"/"fp16"/"bf16" on cuda), safe,
    opt_bisect_limit, print_after_all."""
    return CompiledModel(load(model), backend, options)


def backends() -> dict[str, tuple[bool, str]]:
    """{name: (available here, why not)} for every backend."""
    return {name: (ok, why) for name, ok, why in _native.backends()}
