"""The tool's own operators at their inputs' precision, never at a Cell's
mixed precision.

A Cell given a precision (``cell.to_float(mindspore.float16)``, and the
Cells ``mindspore.amp.auto_mixed_precision`` marks) sets it on MindSpore's
PyNative executor for the length of its call: every operator that runs
then, the tool's own included, first casts its floating inputs to that
type. So the ``HookBackward`` the hooks pass a call's tensors through
handed a float32 tensor back as float16: a to_float(float16) Cell that
returns ``out.astype(float32)`` returned float16 under the tool (a fresh
user's finding: the next float32 layer failed on mismatched types), and a
float32 value over 65504 became inf in the tool's hands. A float32 sum
launched as a Parameter's finiteness probe summed in float16 and read a
finite Parameter as inf.

:func:`outside_mixed_precision` runs an operator with the executor's
precision set to "none" (``MixedPrecisionType.NOTSET`` pushed, then popped:
the executor keeps a stack, as ``Cell._call_pre_process`` and
``_call_post_process`` use it; MindSpore 2.7.0 and 2.10.0). Pushing costs
about 0.85 us a pair on this CPU, so the callers run their operator as
usual and again outside mixed precision only when its result's dtype
shows a cast (:func:`cast_by_mixed_precision`, about 0.13 us a tensor).

Example::

    out = hook(x)
    if cast_by_mixed_precision((x,), (out,)):
        out = outside_mixed_precision(hook, x)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

_EXECUTOR: Any = None


def cast_by_mixed_precision(sources: Sequence[Any], results: Sequence[Any]) -> bool:
    """Whether an operator meant to keep its inputs' dtype changed one:
    ``results[i]`` has another dtype than ``sources[i]`` (tensors; the
    same length)."""
    return any(getattr(r, "dtype", None) is not getattr(s, "dtype", None) for s, r in zip(sources, results))


def outside_mixed_precision(run: Callable[..., Any], *args: Any) -> Any:
    """``run(*args)`` with MindSpore's mixed precision off, as outside every
    Cell given a precision; the precision in force before is back
    afterwards, also when ``run`` raises (which propagates)."""
    global _EXECUTOR
    if _EXECUTOR is None:
        from mindspore._c_expression import MixedPrecisionType

        # the package attribute, not ``mindspore.common.api`` by name: MindSpore >= 2.9 warns on that
        # import and the attribute is then ``mindspore.graph.api``
        from mindspore.common import api

        _EXECUTOR = (api._pynative_executor.set_mixed_precision_type, MixedPrecisionType.NOTSET)
    set_type, none = _EXECUTOR
    set_type(none)
    try:
        return run(*args)
    finally:
        set_type(none, False)
