"""probe_runtime: guarded overflow detector for MindSpore PyNative.

``PrecisionDebugger`` (msprobe's signature) lints its config in the live
environment, refuses to start with ``ConfigLintError`` on errors, then finds
the APIs whose inputs or outputs hold inf/nan (level L1) and writes
msprobe-compatible dumps plus ``overflow.json``.
"""
from .debugger import ConfigLintError, PrecisionDebugger

__all__ = ["PrecisionDebugger", "ConfigLintError"]
