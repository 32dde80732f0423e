"""MindSpore's private functions the L2 check needs, behind one door.

The kernel-level (L2) check turns MindSpore's synchronous dump on for
one run of a compiled step and off again. MindSpore has no public switch
for that: the dump writes the iterations its config names, and
``mindspore._c_expression._set_init_iter(n)`` sets the number of the next
iteration. With ``"iteration": "1"`` in the dump config, ``set_iteration(0)``
keeps the dump off and ``set_iteration(1)`` writes the next run
(measured on MindSpore 2.7.0 and 2.10.0, CPU; mindstudio-probe 8.1.2 to 26.0
call the same function). ``_dump_start``/``_dump_stop`` have no effect on
the CPU backend and are not used.

Everything private is imported here and nowhere else, so a MindSpore
release that renames it fails in one place, with one message.

The other private name used is the class every call of a
``mindspore.jit`` function goes through, ``_JitExecutor``
(``mindspore.common.api``; :func:`jit_executor`): the L1/L0 check of
``@jit`` regions wraps its ``__call__``; and, since a
``jit(capture_mode="trace")`` call does not go through it, the
``_jit_trace_begin`` and ``_jit_trace_end`` of MindSpore's ``jit_trace``
module (:func:`jit_trace_module`), which it wraps too.

Example::

    switch = dump_switch()        # L2Unavailable when this MindSpore lacks it
    switch.off(); ...; switch.on(); step(); switch.off()
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from ..errors import Unavailable

LOGGER = logging.getLogger("probe_runtime")
#: the releases the L2 check was tested on (CPU backend)
TESTED_RELEASES = ("2.7.0", "2.10.0")
#: the private function the dump switch needs, in ``mindspore._c_expression``
INIT_ITER = "_set_init_iter"
#: the dump config's ``iteration`` value the switch works with
DUMPED_ITERATION = "1"


class L2Unavailable(Unavailable):
    """Level L2 (or the check inside ``mindspore.jit`` regions) cannot run
    in this process: this MindSpore lacks a private function it needs, the
    temporary folder's path has a ``.``, or the process is a rank of a
    distributed job on the CPU backend (a ``ValueError``); the message
    names why and what to do instead. Left uncaught, the message alone is
    printed, without a traceback (:class:`~probe_runtime.errors.Unavailable`)."""


def _release() -> str:
    import mindspore

    return str(getattr(mindspore, "__version__", "unknown"))


def _major_minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


class DumpSwitch:
    """Turns MindSpore's synchronous dump on for the next run of a
    compiled graph and off again.

    Args:
        set_iteration: ``_set_init_iter`` (or a stand-in in tests).
    """

    def __init__(self, set_iteration: Callable[[int], Any]) -> None:
        self._set = set_iteration
        self.is_on = False

    def off(self) -> None:
        """Runs from now on are not dumped."""
        self._set(0)
        self.is_on = False

    def on(self) -> None:
        """The next runs are dumped (until :meth:`off`)."""
        self._set(int(DUMPED_ITERATION))
        self.is_on = True


def dump_switch() -> DumpSwitch:
    """The :class:`DumpSwitch` of this MindSpore.

    Logs one warning when the release is older or newer than
    :data:`TESTED_RELEASES` (the function may behave differently).

    Raises:
        L2Unavailable: ``mindspore._c_expression._set_init_iter`` cannot be
            imported from this release.
    """
    release = _release()
    try:
        from mindspore import _c_expression
        set_iteration = getattr(_c_expression, INIT_ITER)
    except (ImportError, AttributeError) as err:
        raise L2Unavailable(f"level L2 needs mindspore._c_expression.{INIT_ITER}, which MindSpore {release} does "
                            f"not have ({type(err).__name__}); the L2 check was tested on MindSpore "
                            f"{' and '.join(TESTED_RELEASES)}: use one of them, or level L1/L0 in PyNative "
                            "mode") from None
    low, high = (_major_minor(v) for v in (TESTED_RELEASES[0], TESTED_RELEASES[-1]))
    if not low <= _major_minor(release) <= high:
        LOGGER.warning("probe_runtime: level L2 was tested on MindSpore %s, not %s: its dump switch may behave "
                       "differently", " and ".join(TESTED_RELEASES), release)
    return DumpSwitch(set_iteration)


def jit_executor() -> Any:
    """The class each call of a ``mindspore.jit`` function runs through
    (``mindspore.common.api._JitExecutor``; its ``fn`` is the function).

    Raises:
        L2Unavailable: this MindSpore has no such class.
    """
    try:
        from mindspore.common import api

        return getattr(api, "_JitExecutor")
    except (ImportError, AttributeError) as err:
        raise L2Unavailable(f"checking inside mindspore.jit regions needs mindspore.common.api._JitExecutor, which "
                            f"MindSpore {_release()} does not have ({type(err).__name__})") from None


def jit_trace_module() -> Any:
    """The module of ``mindspore.jit(capture_mode="trace")``
    (``mindspore.graph.jit_trace`` in 2.10, ``mindspore.common.jit_trace``
    in 2.7), whose private ``_jit_trace_begin`` and ``_jit_trace_end`` every
    call of a traced function makes (looked up in the module at each call:
    the L1/L0 check of ``@jit`` regions wraps them); None when this
    MindSpore has neither, or they lack those functions."""
    import importlib

    for name in ("mindspore.graph.jit_trace", "mindspore.common.jit_trace"):
        try:
            module = importlib.import_module(name)
        except Exception:
            continue
        if callable(getattr(module, "_jit_trace_begin", None)) and callable(getattr(module, "_jit_trace_end", None)):
            return module
    return None
