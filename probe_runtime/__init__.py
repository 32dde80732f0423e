"""probe_runtime: guarded overflow detector for MindSpore PyNative.

``PrecisionDebugger`` (msprobe's signature) lints its config in the live
environment, refuses to start with ``ConfigLintError`` on errors, then finds
the APIs (level L1) or the Cells (level L0, ``start(model)``) whose inputs,
outputs or gradients hold inf/nan and writes msprobe-compatible dumps plus
``overflow.json``. ``OverflowCheckCallback`` runs it around each step of
``mindspore.train.Model.train`` (imported on first use: it needs MindSpore).
"""
from .debugger import PrecisionDebugger
from .errors import ConfigLintError, RuntimeMissing, UsageError

__all__ = ["PrecisionDebugger", "ConfigLintError", "RuntimeMissing", "UsageError", "OverflowCheckCallback",
           "MsprobeStep"]


def __getattr__(name: str):
    if name in ("OverflowCheckCallback", "MsprobeStep"):
        from . import callback

        return getattr(callback, name)
    raise AttributeError(f"module 'probe_runtime' has no attribute {name!r}")
