"""Synchronous execution inside checked windows (CPU backend).

Every backward hook the tool needs is a Python operator, and with
MindSpore's asynchronous PyNative pipeline each one drains the pipeline
first. So on the CPU backend :class:`SyncWindows` switches
``pynative_synchronize`` on at ``start()`` and puts the process's own
setting back at ``stop()`` (and when detection stops for good, and at
exit). Only when work runs changes, never what it computes; other backends
are left alone, and steps that are not checked are never touched.
``PROBE_SYNC`` overrides the choice: ``1`` switches on every backend,
``0`` never switches; unset or ``auto``: CPU only. A process that is
synchronous of its own accord is left as it is. The measurements behind
this, and its limits: ``docs/runtime-design.md``.

Example::

    windows = SyncWindows()      # reads PROBE_SYNC and the backend
    windows.enter()              # start(): synchronous from now on (CPU)
    ...
    windows.leave()              # stop(): the process's own setting again
"""
from __future__ import annotations

import logging
import os
from typing import Optional

from .hooks.backward import synchronize_setting

LOGGER = logging.getLogger("probe_runtime")
ENV = "PROBE_SYNC"
#: the values of PROBE_SYNC: never, always, the CPU backend only ("" = unset)
OFF = ("0", "off", "false", "no")
ON = ("1", "on", "true", "yes")
AUTO = ("auto", "")


def check_sync_mode(value: Optional[str] = None) -> str:
    """``value`` (default: the ``PROBE_SYNC`` environment variable)
    normalised (stripped, lower case), once it is one of :data:`OFF`,
    :data:`ON`, :data:`AUTO`.

    Raises:
        ValueError: any other value (``PROBE_SYNC=maybe``), as a bad
            ``PROBE_CHECKS`` is refused.
    """
    raw = value if value is not None else os.environ.get(ENV, "auto")
    mode = raw.strip().lower()
    if mode not in OFF + ON + AUTO:
        raise ValueError(f"{ENV} must be '0', '1' or 'auto' (or off/on, false/true, no/yes), not {raw!r}")
    return mode


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
        self._handle = synchronize_setting()
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
