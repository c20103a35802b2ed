"""``lockstep.InferenceSession``: the common subset of ONNX Runtime's Python API over lockstep, so that
a script switches with one import (``import lockstep as ort``, or ``from lockstep import
InferenceSession``)."""

from __future__ import annotations

import enum
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from . import _errors
from ._model import CompiledModel, ModelLike, ValueInfo, backends, load

# ONNX Runtime's provider names and the lockstep backend each maps to; the first available
# provider in the caller's list wins, as in ONNX Runtime.
_PROVIDERS = {
    "CUDAExecutionProvider": "cuda",
    "TensorrtExecutionProvider": "cuda",
    "CPUExecutionProvider": "cpu",
    "LockstepReferenceExecutionProvider": "reference",
}


class GraphOptimizationLevel(enum.IntEnum):
    """Accepted for compatibility; lockstep always runs its own pass pipeline (every pass is
    checked to preserve the float64 reference result)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """ONNX Runtime's SessionOptions: ``intra_op_num_threads`` sets lockstep's CPU threads; the other
    fields are accepted and have no effect."""

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_profiling = False
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self.optimized_model_filepath = ""
        self._config: dict[str, str] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        return self._config[key]


class RunOptions:
    """ONNX Runtime's RunOptions; ``seed`` (lockstep's) seeds the model's random ops."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.seed = 0


class NodeArg:
    """A graph input or output as ONNX Runtime describes it: name, shape, type ("tensor(float)")."""

    def __init__(self, info: ValueInfo):
        self.name = info.name
        self.shape = list(info.shape)
        self.type = info.type

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    def __init__(self, graph_name: str):
        self.graph_name = graph_name
        self.producer_name = ""
        self.domain = ""
        self.description = ""
        self.version = 0
        self.custom_metadata_map: dict[str, str] = {}


def get_available_providers() -> list[str]:
    """The provider names whose lockstep backend can run here."""
    available = backends()
    return [p for p, b in _PROVIDERS.items() if available.get(b, (False, ""))[0]]


def get_all_providers() -> list[str]:
    return list(_PROVIDERS)


def get_device() -> str:
    return "GPU" if backends().get("cuda", (False, ""))[0] else "CPU"


def _provider_name(provider: Any) -> str:
    return provider[0] if isinstance(provider, (tuple, list)) else provider


class InferenceSession:
    """``InferenceSession(path_or_bytes, sess_options=None, providers=None)`` with ``get_inputs``,
    ``get_outputs``, ``run``, ``get_providers``: ONNX Runtime's semantics, lockstep's backends."""

    def __init__(self, path_or_bytes: ModelLike, sess_options: SessionOptions | None = None,
                 providers: Sequence[Any] | None = None, provider_options: Sequence[dict] | None = None,
                 **kwargs: Any):
        self._sess_options = sess_options or SessionOptions()
        wanted = [_provider_name(p) for p in (providers or ["CPUExecutionProvider"])]
        available = backends()
        chosen = None
        for name in wanted:
            if name not in _PROVIDERS:
                raise _errors.InvalidArgumentError(
                    f"invalid argument: unknown provider {name!r} (lockstep knows: {', '.join(_PROVIDERS)})",
                    code="invalid argument")
            if available.get(_PROVIDERS[name], (False, ""))[0]:
                chosen = name
                break
            warnings.warn(f"lockstep: {name} is not available here ({available[_PROVIDERS[name]][1]}); trying the next "
                          "provider", RuntimeWarning, stacklevel=2)
        if chosen is None:
            chosen = "CPUExecutionProvider"
        self._provider = chosen
        options: dict[str, Any] = {}
        if self._sess_options.intra_op_num_threads:
            options["threads"] = int(self._sess_options.intra_op_num_threads)
        self._model = load(path_or_bytes)
        self._compiled = CompiledModel(self._model, _PROVIDERS[chosen], options)

    def get_inputs(self) -> list[NodeArg]:
        return [NodeArg(i) for i in self._compiled.inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [NodeArg(o) for o in self._compiled.outputs]

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []

    def get_providers(self) -> list[str]:
        return [self._provider] + (["CPUExecutionProvider"] if self._provider != "CPUExecutionProvider" else [])

    def get_provider_options(self) -> dict[str, dict]:
        return {p: {} for p in self.get_providers()}

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._model._native.name)

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = None) -> list[np.ndarray]:
        seed = getattr(run_options, "seed", 0) if run_options is not None else 0
        return self._compiled.run(output_names or None, input_feed, seed=seed)

    @property
    def compiled(self) -> CompiledModel:
        """The lockstep CompiledModel behind this session."""
        return self._compiled
