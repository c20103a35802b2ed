"""lockstep: an ONNX compiler and runtime whose backends agree with a float64 reference to float32
rounding and give the same bits on every run, and the tools that find where two runtimes part ways.

    import lockstep
    model = lockstep.compile("model.onnx", backend="cpu")
    (out,) = model.run(None, {"x": x})
    print(lockstep.bisect("model.onnx", ref="reference", test=my_runtime))

The package is a thin layer over lockstep's C++ library (the extension ``lockstep._lockstep``);
docs/python.md is its guide.
"""

from ._errors import *  # noqa: F401,F403  (the exception classes)
from ._errors import Error
from ._model import CompiledModel, Model, ValueInfo, backends, compile, embedded_default, load
from ._results import Result
from ._session import (GraphOptimizationLevel, InferenceSession, NodeArg, RunOptions, SessionOptions,
                       get_all_providers, get_available_providers, get_device)
from ._tools import (BisectPassesResult, BisectResult, CheckResult, CompareResult, DeterminismResult, ExtractResult,
                     ReduceResult, bisect, bisect_passes, check, cli_path, compare, determinism, extract, reduce,
                     sha256)

__version__ = "0.13.0"
