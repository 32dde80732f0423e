"""The re-entrancy guard: only the outermost intercepted call is handed on.

Every L1 wrapper, L0 Cell hook and sentinel wrapper reads :data:`GUARD`
first. While its ``depth`` is above 0 on this thread, a call is either made
inside an intercepted call (``ops.exp`` running the ``Exp`` primitive,
``__rmul__`` calling ``mul``) or is the tool's own device work (a cast, a
copy, ``asnumpy``), and it is not handed on. While the outermost call runs
its original, ``GUARD.nested`` is the list that the calls made inside it
append themselves to (the L1 wrappers: what the outer call may have masked);
it is None otherwise, and inside a :class:`tool_section`.

Example::

    with tool_section():
        values = tensor.asnumpy()     # the tool's own read: not intercepted
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional


class ToolGuard(threading.local):
    """Per thread: how many intercepted calls (or tool sections) are running,
    and the nested calls of the outermost one (``nested``: a list, or None
    when nothing collects them)."""

    depth = 0
    nested: Optional[list] = None


#: the guard every wrapper reads (``GUARD.depth``: one attribute read on the hot path)
GUARD = ToolGuard()


def inside_tool() -> bool:
    """True while an intercepted call (or the tool itself) is running on
    this thread: calls made now are not handed on."""
    return GUARD.depth > 0


class tool_section:
    """Context manager: calls made inside are not intercepted, nor collected
    as nested calls (used by the tool's own device work: casts, copies,
    ``asnumpy``)."""

    def __enter__(self) -> None:
        GUARD.depth += 1
        self._nested, GUARD.nested = GUARD.nested, None

    def __exit__(self, *exc: Any) -> None:
        GUARD.depth -= 1
        GUARD.nested = self._nested


class keep_training:
    """The never-break-training policy, named: a fault inside the tool in
    the ``with`` block is reported (to ``report``, else logged as an error on
    the ``probe_runtime`` logger) and swallowed, so the training script goes on. ``KeyboardInterrupt``
    and ``SystemExit`` are never swallowed.

    Args:
        what: what the block does, for the message ("removing the Cell hooks").
        report: called with ``(what, exception)`` (a checker's ``on_error``:
            logged once, counted, detection off after too many).

    Example::

        with keep_training("removing the optimizer hook"):
            watch.uninstall()
    """

    def __init__(self, what: str, report: "Optional[Callable[[str, BaseException], None]]" = None) -> None:
        self.what = what
        self.report = report

    def __enter__(self) -> "keep_training":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if value is None or not isinstance(value, Exception):
            return False
        report = self.report
        try:
            if report is not None:
                report(self.what, value)
            else:
                import logging

                logging.getLogger("probe_runtime").error("probe_runtime: error %s: %s: %s; training goes on",
                                                         self.what, type(value).__name__, value)
        except Exception:  # pragma: no cover - a reporter that fails must not break training either
            pass
        return True


def mutation_wrapper(sink: Any, original: Callable, read: bool = False) -> Callable:
    """Wrapper of a Tensor method that changes the tensor in place, or
    hands out memory it can be changed through, without being a
    computation to check (``set_data``, ``__setitem__`` at L0,
    ``asnumpy``: on CPU its array shares the tensor's memory, MindSpore's
    docs of ``Tensor.asnumpy``). Before it runs, ``sink.before_mutation``
    resolves the pending checks that may see that memory, so they judge
    the values the calls made, not what the write left; no entry is made.
    ``read``: the method hands the values to the host (``asnumpy``):
    ``sink.read_on_host`` is told then. Inside the tool (``GUARD.depth``)
    or outside a window (``sink.live`` false) the original runs alone. A
    fault in the sink goes to ``sink.on_error`` and the original still
    runs."""

    def wrapper(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if not GUARD.depth and sink.live:
            GUARD.depth += 1
            try:
                sink.before_mutation([tensor])  # judged first: a maker of its -inf is deferred by now
                if read:
                    sink.read_on_host([tensor])
            except Exception as err:
                sink.on_error("before_mutation", err)
            finally:
                GUARD.depth -= 1
        return original(tensor, *args, **kwargs)

    for name in ("__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, name, getattr(original, name))
        except (AttributeError, TypeError):
            pass
    wrapper.__probe_original__ = original  # type: ignore[attr-defined]
    return wrapper


_JIT_CONTEXT: Any = None


def jit_tracing() -> bool:
    """True while MindSpore traces code under ``mindspore.jit`` (left alone).
    The module moved to ``mindspore.graph`` in 2.9; the old name still works
    there but warns on import, so the new one is tried first. Looked up
    once (an import statement per call cost about 1 us of the 1.1 us)."""
    global _JIT_CONTEXT
    try:
        if _JIT_CONTEXT is None:
            try:
                from mindspore.graph.jit_context import jit_context
            except ImportError:
                from mindspore.common.jit_context import jit_context
            _JIT_CONTEXT = jit_context
        return _JIT_CONTEXT() is not None
    except Exception:  # pragma: no cover - older MindSpore
        return False
