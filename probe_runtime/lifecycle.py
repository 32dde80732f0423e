"""What every ``PrecisionDebugger`` gets from the process it runs in.

* interpreter exit (``atexit``): every patch is removed, every pending
  check resolved (its records written) and, when nothing was found, one
  line says so (:func:`at_exit`);
* SIGTERM: Python's default action kills the process without ``atexit``,
  so the first debugger built in the main thread installs a handler that
  does the same for every debugger, then hands the signal on (to the
  handler installed before, or, for the default action, by sending it
  again so the process still ends "killed by SIGTERM");
* an uncaught :class:`~probe_runtime.errors.ConfigLintError` (or
  :class:`~probe_runtime.errors.RuntimeMissing`, or
  :class:`~probe_runtime.errors.Unavailable`) prints its message alone,
  without a traceback, and an uncaught
  :class:`~probe_runtime.errors.UsageError` its message after the user's
  ``file:line`` that made the call (``sys.excepthook``, set on import).

Ctrl-C needs nothing here: Python raises ``KeyboardInterrupt`` and an
unhandled one ends the interpreter through ``atexit``. The details:
``docs/runtime-design.md``.

Example::

    register(debugger)       # in PrecisionDebugger.__init__
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from typing import Any, Optional

from .errors import ConfigLintError, RuntimeMissing, Unavailable, UsageError

_DEBUGGERS: "weakref.WeakSet[Any]" = weakref.WeakSet()
_PREVIOUS_SIGTERM: Any = None
_SIGTERM_INSTALLED = False


def _excepthook(kind: type, value: BaseException, tb: Any, _previous: Any = sys.excepthook) -> None:
    """An uncaught ConfigLintError is the gate saying no: its message alone
    (the config's errors), no traceback; the exit status stays 1 (so for
    RuntimeMissing and Unavailable: what cannot run here, and why). Any
    other exception goes to the hook that was there before.

    When that hook is another library's (``mindspore.communication.init()``
    installs one that tells the cluster this worker failed, then prints),
    it still runs, given no traceback: the one line it prints is the
    message after the class name.

    An uncaught UsageError (``start()`` without a model at L0, a
    classmethod before any debugger) is a mistake in the user's own call:
    its message, after the ``file:line`` of that call (the innermost frame
    of the traceback outside this package), no traceback."""
    if issubclass(kind, (ConfigLintError, RuntimeMissing, UsageError)):
        if _previous is sys.__excepthook__ or getattr(_previous, "_probe_runtime", False):
            where = _calling_line(tb) if issubclass(kind, UsageError) and not issubclass(kind, Unavailable) else None
            print(f"{where}: {value}" if where else value, file=sys.stderr, flush=True)
        else:
            _previous(kind, value.with_traceback(None), None)  # Python prints the exception's own traceback
        return
    _previous(kind, value, tb)


def _calling_line(tb: Any) -> Optional[str]:
    """``file:line`` of the innermost frame of traceback ``tb`` that is not
    this package's (the user's call that raised), or None. Imported here:
    the window policy imports this module and must stay free of the hooks."""
    from .hooks.frames import TOOL_ROOT

    where = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(TOOL_ROOT):
            where = f"{code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


_excepthook._probe_runtime = True  # type: ignore[attr-defined]
sys.excepthook = _excepthook


def install_excepthook() -> None:
    """Put :func:`_excepthook` back in front when another hook replaced it
    since import (``mindspore.communication.init()`` does, in every rank
    of an ``msrun`` job: the gate's refusal was then a traceback in each
    worker's log); the replacing hook is kept behind it."""
    current = sys.excepthook
    if getattr(current, "_probe_runtime", False):
        return

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        _excepthook(kind, value, tb, current)

    hook._probe_runtime = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def register(debugger: Any) -> None:
    """Finish ``debugger`` at interpreter exit and on SIGTERM (it is held
    weakly: a debugger that was collected is skipped). ``debugger`` has
    ``finish()`` and ``checker`` (``flushing``, ``deferred``)."""
    atexit.register(at_exit, weakref.ref(debugger))
    _DEBUGGERS.add(debugger)
    _install_sigterm_handler()


def at_exit(ref: "weakref.ref[Any]") -> None:
    """Finish the debugger ``ref`` points to, if it is still alive: remove
    its patches, resolve what is pending, say when nothing was found.
    Never raises."""
    debugger = ref()
    if debugger is None:
        return
    try:
        debugger.finish()
    except Exception:  # pragma: no cover
        pass


def _install_sigterm_handler() -> None:
    """Install :func:`_on_sigterm` once (main thread only; an ignored
    SIGTERM, or one set outside Python, is left alone)."""
    global _PREVIOUS_SIGTERM, _SIGTERM_INSTALLED
    if _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN or previous is None:
            return
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - no signals here
        return
    _PREVIOUS_SIGTERM = previous
    _SIGTERM_INSTALLED = True


def _on_sigterm(signum: int, frame: Optional[Any]) -> None:
    """Finish every debugger (after the batch in progress, if the signal
    landed inside one), then hand the signal on."""
    debuggers = list(_DEBUGGERS)
    for debugger in debuggers:
        if debugger.checker.flushing:  # the signal landed inside a batch: finish it first
            debugger.checker.deferred = lambda: _on_sigterm(signum, frame)
            return
    for debugger in debuggers:
        at_exit(weakref.ref(debugger))
    previous = _PREVIOUS_SIGTERM
    if callable(previous) and previous is not _on_sigterm:
        previous(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
