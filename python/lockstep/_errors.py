"""lockstep's errors as Python exceptions: one base class, one subclass per kind of failure.

Every error carries ``code`` (lockstep's code name, e.g. ``"unsupported op"``), ``node`` (the ONNX
node name, ``""`` when there is none), ``op`` and ``message``; ``str(e)`` reads like the CLI's
``error: ...`` line ("unsupported op at node 'n3' (Foo): ...").
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every error lockstep raises."""

    code: str = "error"

    def __init__(self, text: str, code: str | None = None, node: str = "", op: str = "", message: str | None = None):
        super().__init__(text)
        if code is not None:
            self.code = code
        self.node = node
        self.op = op
        self.message = text if message is None else message


class InvalidArgumentError(Error, ValueError):
    """A bad argument to a lockstep function (an unknown backend, option or name)."""


class InvalidModelError(Error):
    """A malformed model: bad protobuf, dangling names, cycles, bad tensor data."""


class UnsupportedOpError(Error):
    """An op, opset or attribute lockstep (or the chosen backend) does not implement."""


class ShapeMismatchError(Error, ValueError):
    """A wrong input shape, or shapes that do not broadcast."""


class DTypeMismatchError(Error, TypeError):
    """An input of the wrong dtype."""


class MissingInputError(Error, ValueError):
    """A graph input that was not fed."""


class IoError(Error, OSError):
    """A file that could not be read or written, or a runner that failed."""


class LimitExceededError(Error):
    """A model or a size over a configured cap (memory, nodes, model bytes)."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation that failed."""


class DeviceUnavailableError(Error):
    """No usable GPU or driver for the chosen backend."""


class DivergenceError(Error):
    """A comparison found outputs that disagree beyond tolerance."""


class InternalError(Error):
    """A lockstep bug: please report it with the model."""


_BY_CODE: dict[str, type[Error]] = {
    "invalid argument": InvalidArgumentError,
    "invalid model": InvalidModelError,
    "unsupported op": UnsupportedOpError,
    "unsupported opset": UnsupportedOpError,
    "unsupported attribute": UnsupportedOpError,
    "shape mismatch": ShapeMismatchError,
    "dtype mismatch": DTypeMismatchError,
    "missing input": MissingInputError,
    "i/o error": IoError,
    "limit exceeded": LimitExceededError,
    "out of memory": OutOfMemoryError,
    "device unavailable": DeviceUnavailableError,
    "divergence": DivergenceError,
    "internal error": InternalError,
}


def _from_native(code: str, text: str, node: str, op: str, message: str) -> Error:
    """Called by the extension's exception translator for every lockstep::Error."""
    cls = _BY_CODE.get(code, Error)
    return cls(text, code=code, node=node, op=op, message=message)


__all__ = [name for name, value in globals().items() if isinstance(value, type) and issubclass(value, Error)]
