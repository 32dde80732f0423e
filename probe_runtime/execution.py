"""Synchronous execution inside checked windows (CPU backend).

In PyNative mode MindSpore runs operators through an asynchronous pipeline
by default: Python queues work and returns before it is done. Every
backward entry the tool needs (``mindspore.ops.HookBackward`` at L1, the
Cell and Parameter hooks at L0) is a Python operator, and running one makes
MindSpore drain that pipeline first, so a checked step stalls once per
hooked call. Measured on the benchmark machine (2 CPU cores, MindSpore 2.10,
``benchmarks/runtime_bench.py``): about 1.6-1.8 ms per hook with the
asynchronous pipeline against about 50 us with synchronous execution
(``pynative_synchronize``), and on that backend the plain step itself ran
2-5 times faster synchronously (MLP 9 ms against 22 ms, transformer block
19 ms against 98 ms).

So on the CPU backend each checked window (``start()`` to ``stop()``) runs
synchronously, and the setting the process had is put back at ``stop()``
(and when detection stops for good, and at exit); steps outside the
``step``/``rank`` filter and after ``overflow_nums`` are never touched.
Results are the same either way: only when work runs changes, not what it
computes. Other backends (Ascend, GPU) are left alone: there the pipeline
is what keeps the device busy, and this was not measured there.

``PROBE_SYNC`` overrides the choice: ``1`` switches on every backend, ``0``
never switches; unset or ``auto``: CPU only. A process that is synchronous
of its own accord (any backend) is left as it is and its windows count as
synchronous (Parameters are then checked on the host).

Limits: the setting is put back at ``stop()`` even if the user changed it
inside the window (a ``set_context(pynative_synchronize=True)`` made between
``start()`` and ``stop()`` does not last); and in a synchronous window an
error of the user's own code is raised at the call that made it, where the
asynchronous pipeline would raise it at a later call.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Optional

LOGGER = logging.getLogger("probe_runtime")
ENV = "PROBE_SYNC"


def _context() -> Any:
    """MindSpore's context object and the ``pynative_synchronize`` key, or
    None. The private setter is used because the public
    ``set_context(pynative_synchronize=...)`` logs a deprecation warning on
    every call since MindSpore 2.5 and ``mindspore.runtime.launch_blocking()``
    cannot be undone."""
    try:
        from mindspore import context as ms_context
        from mindspore._c_expression import ms_ctx_param

        return ms_context._context(), ms_ctx_param.pynative_synchronize
    except Exception:  # pragma: no cover - other MindSpore layouts
        return None


class SyncWindows:
    """Switches ``pynative_synchronize`` on for each checked window.

    Args:
        mode: ``"auto"`` (CPU backend only), ``"1"`` (always) or ``"0"``
            (never); default: the ``PROBE_SYNC`` environment variable, else
            ``"auto"``.

    Never raises: when the setting cannot be read or written the windows
    simply run as the process was set up (logged once).
    """

    def __init__(self, mode: Optional[str] = None) -> None:
        mode = (mode if mode is not None else os.environ.get(ENV, "auto")).strip().lower()
        self.enabled = False  # windows are switched to synchronous
        self._handle = None
        self._previous: Optional[bool] = None  # the process's setting, during a window
        try:
            import mindspore

            if mindspore.get_context("mode") != mindspore.PYNATIVE_MODE:
                return
            on_cpu = mindspore.get_context("device_target") == "CPU"
        except Exception:  # pragma: no cover
            return
        self._handle = _context()
        if self._handle is None or mode in ("0", "off", "false", "no"):
            return
        self.enabled = mode in ("1", "on", "true", "yes") or on_cpu

    @property
    def active(self) -> bool:
        """True while a window runs synchronously: switched by this object,
        or because the process itself was set so (on any backend)."""
        return bool(self._previous) or (self._previous is not None and self.enabled)

    def enter(self) -> None:
        """Start a checked window: synchronous from now on (if enabled and
        not already so); records the process's own setting first, so an
        interrupt between the two leaves something :meth:`leave` can undo."""
        if self._handle is None or self._previous is not None:
            return
        try:
            ctx, key = self._handle
            previous = bool(ctx.get_param(key))
            self._previous = previous
            if self.enabled and not previous:
                ctx.set_param(key, True)
        except Exception as err:  # pragma: no cover - defensive
            self.enabled = False
            self._handle = None
            self._previous = None
            LOGGER.warning("probe_runtime: cannot switch to synchronous execution (%s); checking goes on "
                           "asynchronously", err)

    def leave(self) -> None:
        """End the window: put back the process's own setting. The record of
        that setting is cleared only once it is back, so a
        ``KeyboardInterrupt`` landing here leaves the next call (``stop()``
        again, or the exit handler) able to finish the job."""
        previous = self._previous
        if previous is None:
            return
        if not previous and self.enabled:
            try:
                ctx, key = self._handle  # type: ignore[misc]
                ctx.set_param(key, False)
            except Exception as err:  # pragma: no cover - defensive
                LOGGER.warning("probe_runtime: cannot restore asynchronous execution: %s", err)
        self._previous = None
