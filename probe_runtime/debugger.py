"""The public ``PrecisionDebugger`` and its lint gate.

The constructor is the gate: it lints the config with the same engine as
``probe lint``, in the live context of this process, and raises
:class:`ConfigLintError` listing every error before anything is patched or
written. Warnings are logged once on the ``probe_runtime`` logger and do not
block.

Live context (each fact says where it came from):

* framework ``mindspore`` (this runtime only runs MindSpore);
* mode from ``mindspore.get_context("mode")`` (0 graph, 1 PyNative);
* jit_level from ``mindspore.get_context("jit_config")["jit_level"]`` when set;
* MindSpore version from ``mindspore.__version__``;
* device from ``mindspore.get_context("device_target")``;
* world size from ``mindspore.communication`` when initialised, else the
  launcher's environment (``RANK_SIZE``, ``WORLD_SIZE``, ``MS_WORKER_NUM``),
  else 1: a live process that no launcher started and that has not
  initialised communication is single-card;
* installed mindstudio-probe version (package metadata);
* rank_dir: the rank folder this process writes (``rank``, or ``rank<R>``
  with the writer's rank: communication, else ``RANK_ID``/``RANK``), so
  PL407 refuses a dump_path whose ``step*/<rank_dir>`` holds an earlier
  run's dump (other ranks' folders do not block this one);
* filesystem checks (PL406-PL408) always on; ``runtime`` on, so PL205
  refuses tasks other than overflow_check and L2 without an Ascend device.

Interrupts: every patch is removed and every pending check resolved (its
records written) before the process exits:

* Ctrl-C (SIGINT): Python's own handler raises ``KeyboardInterrupt``; an
  unhandled one ends the interpreter through ``atexit``, where the debugger
  unpatches and flushes (a batch interrupted half-way is put back in the
  queue first, so nothing judged is lost);
* SIGTERM: Python's default action kills the process without ``atexit``,
  so the first ``PrecisionDebugger`` built in the main thread installs a
  SIGTERM handler. It unpatches and flushes every debugger (if the signal
  lands inside a write, after that batch is finished), then hands the
  signal on: to the handler that was installed before (a callable), or, for
  the default action, by restoring it and sending SIGTERM again, so the
  process still ends "killed by SIGTERM" (exit status 143 in a shell,
  ``-15`` from ``subprocess``). A SIGTERM that was ignored (``SIG_IGN``)
  stays ignored. A handler the script installs after building the
  debugger replaces this one; it then runs first and, if it exits with
  ``sys.exit``, ``atexit`` still unpatches and flushes.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Optional

from msprobe_lint.lint.context import Context, Fact, build_context, environment_facts, normalise
from msprobe_lint.lint.diagnostic import Diagnostic, Severity
from msprobe_lint.lint.engine import lint_file

from .cells import UsageError
from .state import RunState, expand_ids, live_rank_source, rank_dir_name

LOGGER = logging.getLogger("probe_runtime")
CONFIG_VARIABLE = "PROBE_CONFIG"
CHECKS_VARIABLE = "PROBE_CHECKS"
ARGUMENTS_PATH = "<PrecisionDebugger arguments>"


class ConfigLintError(ValueError):
    """The config does not pass the lint in this live environment.

    Attributes:
        diagnostics: every error diagnostic (``msprobe_lint.Diagnostic``).
    The message lists them, one per line, as
    ``path:line:col: CODE severity: message`` with the hint after it.
    Left uncaught, it prints that message alone, without a traceback
    (probe_runtime sets ``sys.excepthook`` for this class only).
    """

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__("probe_runtime refuses to start; the config has errors:\n"
                         + "\n".join(format_diagnostic(d) for d in self.diagnostics))


def _excepthook(kind: type, value: BaseException, tb: Any, _previous: Any = sys.excepthook) -> None:
    """An uncaught ConfigLintError is the gate saying no: its message alone
    (the config's errors), no traceback; the exit status stays 1. Any
    other exception goes to the hook that was there before."""
    if issubclass(kind, ConfigLintError):
        print(value, file=sys.stderr, flush=True)
        return
    _previous(kind, value, tb)


sys.excepthook = _excepthook


def format_diagnostic(d: Diagnostic) -> str:
    """``path:line:col: CODE severity: message (hint: ...)``."""
    text = f"{d.path}:{d.line}:{d.column}: {d.code} {d.severity.value}: {d.message}"
    return text + (f" (hint: {d.hint})" if d.hint else "")


def live_facts() -> dict[str, Fact]:
    """Context facts read from the running MindSpore (see module doc).

    Values that cannot be read are left out (unknown), never guessed.
    """
    facts: dict[str, Fact] = {"framework": Fact("mindspore", "probe_runtime")}
    try:
        import mindspore as ms
    except Exception:  # pragma: no cover - the runtime extra is missing
        return facts
    readers = {
        "mode": lambda: ms.get_context("mode"),
        "device": lambda: ms.get_context("device_target"),
        "mindspore_version": lambda: ms.__version__,
    }
    sources = {"mode": "mindspore.get_context('mode')", "device": "mindspore.get_context('device_target')",
               "mindspore_version": "mindspore.__version__"}
    for name, read in readers.items():
        try:
            facts[name] = normalise(name, read(), sources[name])
        except Exception:
            pass
    try:
        jit = (ms.get_context("jit_config") or {}).get("jit_level")
        if jit:
            facts["jit_level"] = normalise("jit_level", jit, "mindspore.get_context('jit_config')")
    except Exception:
        pass
    try:
        from mindspore.communication.management import GlobalComm, get_group_size

        if GlobalComm.INITED:
            facts["world_size"] = normalise("world_size", get_group_size(), "mindspore.communication")
    except Exception:
        pass
    return facts


def lint_live(config_path: Optional[str], overrides: dict[str, Any],
              rank: Optional[tuple[Optional[int], str]] = None, extra: tuple = ()) -> list[Diagnostic]:
    """Lint ``config_path`` (or, when None, just ``overrides``) in the live
    context; returns every diagnostic.

    ``rank``: (this process's rank, where it came from), as
    :func:`probe_runtime.state.live_rank_source` gives it (read when None).
    It gives the fact ``rank_dir``, the rank folder this process writes
    (``rank`` or ``rank<R>``): PL407 refuses a dump_path whose
    ``step*/<rank_dir>`` already holds an earlier run's dump. ``extra``:
    findings (``msprobe_lint.diagnostic.Finding``) made outside the rules,
    graded and placed with the rest.
    """
    number, source = rank if rank is not None else live_rank_source()
    single = {"world_size": Fact(1, "single process (no launcher environment, communication not initialised)"),
              "rank_dir": Fact(rank_dir_name(number), source)}
    context: Context = build_context([live_facts(), environment_facts(), single], check_fs=True,
                                     cwd=Path.cwd(), runtime=True)
    if config_path is None:
        result = lint_file(ARGUMENTS_PATH, context, overrides=overrides, raw=b"{}", extra_findings=extra)
    else:
        result = lint_file(config_path, context, overrides=overrides, extra_findings=extra)
    return result.diagnostics


class PrecisionDebugger:
    """msprobe-compatible overflow detector for MindSpore PyNative (L0, L1).

    Args:
        config_path: msprobe config.json; None falls back to the
            ``PROBE_CONFIG`` environment variable, then to no file (the
            keyword arguments alone).
        task, dump_path, level, step: override the file's values
            (``step``: list of ints >= 0 or ``"a-b"`` strings).
        checks: ``"exact"`` (the default: every call of every checked step,
            forward and backward) or ``"sentinel"`` (only what gradient
            computations return, read once per step, until something is
            not finite; exact checks from the next ``start()`` on: see
            ``probe_runtime.sentinel``). None falls back to the
            ``PROBE_CHECKS`` environment variable, then ``"exact"``. Not an
            msprobe argument.

    Raises:
        ValueError: ``checks`` (or ``PROBE_CHECKS``) is neither ``"exact"``
            nor ``"sentinel"``.
        ConfigLintError: the lint found errors in this live context (bad
            config, a task other than overflow_check, L2 without Ascend, a
            graph-mode process, a dump_path that is relative, a soft link or
            not writable, or holding an earlier run's dump of this rank ...).
            Nothing has been patched or written then.

    Once the gate passes, dump_path is created (0o750, never through a
    soft link), as msprobe does, so a run without overflow leaves it empty
    and ``probe report`` says nothing was found. At interpreter exit, when
    ``start()`` was called and nothing was recorded, one line goes to
    stderr (and the logger, at INFO): ``probe_runtime: no overflow found in
    N checked step(s); dump_path: ...``.

    Level L1 intercepts API calls (``probe_runtime.interception``); level L0
    hooks the sub-Cells of the model given to ``start(model)``
    (``probe_runtime.cells``). What is checked when: see
    ``probe_runtime.monitor`` (calls are queued and resolved in batches;
    records are on disk before the resolving call returns; everything is
    resolved by ``stop()``/``step()``).
    """

    def __init__(self, config_path: Optional[str] = None, task: Optional[str] = None,
                 dump_path: Optional[str] = None, level: Optional[str] = None,
                 step: Optional[list] = None, *, checks: Optional[str] = None) -> None:
        if config_path is None:
            config_path = os.environ.get(CONFIG_VARIABLE) or None
        from .sentinel import CHECKS

        source = "checks" if checks is not None else CHECKS_VARIABLE
        checks = checks if checks is not None else (os.environ.get(CHECKS_VARIABLE) or "exact")
        if checks not in CHECKS:
            raise ValueError(f"{source} must be 'exact' or 'sentinel', not {checks!r}")
        overrides = {k: v for k, v in (("task", task), ("dump_path", dump_path), ("level", level),
                                        ("step", step)) if v is not None}
        rank = live_rank_source()
        diagnostics = lint_live(config_path, overrides, rank)
        errors = [d for d in diagnostics if d.severity is Severity.ERROR]
        if not errors:
            errors = self._dump_path_errors(config_path, overrides, rank)
        if errors:
            raise ConfigLintError(errors)
        for d in diagnostics:
            if d.severity is Severity.WARNING:
                LOGGER.warning("probe_runtime: %s", format_diagnostic(d))
        config: dict = {}
        if config_path is not None:
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        config.update(overrides)
        self.config = config
        self.config_path = config_path
        self.task = config.get("task", "statistics")
        self.level = config.get("level", "L1")
        self.dump_path = os.path.abspath(config["dump_path"])
        section = config.get("overflow_check") or {}
        self.state = RunState(steps=expand_ids(config.get("step")), ranks=expand_ids(config.get("rank")),
                              rank=rank[0], overflow_nums=int(section.get("overflow_nums", 1)))
        from .interception import ApiInterceptor, OptimizerWatch
        from .monitor import Monitor, default_library_roots

        self.monitor = Monitor(self.state, dump_path=self.dump_path, task=self.task, level=self.level,
                               on_exhausted=self._unpatch, library_roots=default_library_roots(),
                               carry_batch=True)
        from .cells import CellHooks

        from .execution import SyncWindows

        self.interceptor = ApiInterceptor(self.monitor)
        self.cells = CellHooks(self.monitor)
        self.watch = OptimizerWatch(self.monitor, on_update=self._parameters_may_change)
        self.sync = SyncWindows()
        from .sentinel import GradSentinel

        self.checks = checks
        #: sentinel checks run in the coming checked steps (until they find something)
        self.sentinel_armed = checks == "sentinel"
        self.sentinel = GradSentinel(self.monitor.on_error, on_device=_device_target() not in ("CPU", None))
        self._sentinel_window = False  # a sentinel window is open (or closed and not judged yet)
        self._sentinel_findings = 0
        self._sentinel_empty_said = False
        self._started = False
        self._start_calls = 0
        self._checked_steps: set[int] = set()
        self._start_failed = False  # a start() said why it could not check (e.g. another debugger's window)
        self._exit_said = False
        ref = weakref.ref(self)
        atexit.register(_at_exit, ref)
        _DEBUGGERS.add(self)
        _install_sigterm_handler()

    # -- public API (msprobe's) ---------------------------------------------------
    def start(self, model: Any = None) -> None:
        """Start checking the calls that follow.

        Args:
            model: level L0: the network whose sub-Cells are hooked (a
                ``mindspore.nn.Cell`` or a list/tuple of Cells; the Cells
                passed in are not recorded themselves, only what is inside).
                Level L1 accepts and ignores it (msprobe's signature).

        Does nothing when the current step or this rank is not selected or
        ``overflow_nums`` is reached. Never raises because of the tool.

        Raises:
            UsageError: level L0 without a model, or a model that is not a
                Cell (a ``ValueError``; the message says to call
                ``debugger.start(model)``). Raised even in steps that are
                not checked, so the mistake shows at the first step.
        """
        if self.level == "L0":
            if model is None:
                raise UsageError("level L0 checks the Cells of a model: call debugger.start(model) with the network "
                                 "(a mindspore.nn.Cell or a list/tuple of Cells), not debugger.start()")
            self.cells._models(model)  # raises UsageError for a non-Cell
        self._start_calls += 1
        if self._started:
            return
        try:
            if not self.monitor.begin():
                return
            if self.sentinel_armed:
                self.sentinel.install()  # raises when another debugger's sentinel is installed
                self._sentinel_window = True
                self._started = True
                self._checked_steps.add(self.state.step)
                return
            self.sync.enter()
            self.interceptor.synchronous = self.cells.synchronous = self.sync.active
            self.monitor.synchronous = self.sync.active
            if self.level == "L0":
                self.cells.install(model)
            else:
                self.interceptor.install()
            self.watch.install()
            self._started = True
            self._checked_steps.add(self.state.step)  # only a window that did start (not one refused)
        except Exception as err:
            self.monitor.on_error("in start()", err)
            self._start_failed = True
            self._unpatch()

    def stop(self) -> None:
        """Stop checking, remove the patches and resolve every pending check
        (records are on disk when it returns)."""
        self._unpatch()
        self._started = False
        try:
            self.monitor.end()
            self._resolve_sentinel()
        except Exception as err:  # pragma: no cover
            self.monitor.on_error("in stop()", err)

    def step(self) -> None:
        """End the current step (resolving what is pending) and count one
        more; call indices start again at 0."""
        if self._started:
            self.stop()
        else:
            self.monitor.flush(final=True)
        self.state.next_step()
        self.cells.new_step()

    def set_init_step(self, step: int) -> None:
        """Set the number of the current step (e.g. when resuming).

        Raises:
            ValueError: ``step`` is not an int >= 0.
        """
        self.state.set_step(step)

    # -- internals ------------------------------------------------------------------
    def _resolve_sentinel(self) -> None:
        """Judge what the sentinel held in the window that just closed; on
        inf/nan write its record and switch to exact checks for good."""
        if not self.sentinel_armed or not self._sentinel_window:
            return
        self._sentinel_window = False
        computations = self.sentinel.computations
        found = self.sentinel.resolve()
        if found is None:
            if not computations and not self._sentinel_empty_said:
                self._sentinel_empty_said = True
                LOGGER.warning("probe_runtime: sentinel checks saw no gradient computation in step %s: they judge "
                               "only what mindspore.grad / value_and_grad compute in PyNative, so forward-only code "
                               "and a training step compiled with mindspore.jit are not checked (use exact checks "
                               "for forward-only code: checks='exact' or PROBE_CHECKS=exact)", self.state.step)
            return
        self.sentinel_armed = False
        self._sentinel_findings += 1
        self.monitor.note_sentinel(found)

    def _parameters_may_change(self) -> None:
        """An optimizer step or ``Parameter.set_data`` is about to run (the
        queue is resolved): Parameters are probed again at their next use,
        at L1 (first use in a call) and at L0 (the next call of each Cell)."""
        self.interceptor.forget_probes()
        self.cells.forget_probes()

    @staticmethod
    def _dump_path_errors(config_path: Optional[str], overrides: dict, rank: tuple) -> list[Diagnostic]:
        """Create dump_path (0o750, never through a soft link) as msprobe
        does when its debugger is built, so a run without overflow leaves
        an empty dump_path (``probe report`` then says nothing was found).
        When that fails (a folder the lint could not judge, such as one
        under /proc for root, whom every permission check lets through),
        the error diagnostics to refuse with: PL407 at dump_path. Else []."""
        from msprobe_lint.lint.diagnostic import Finding

        from .writer import ensure_dir

        config: dict = {}
        if config_path is not None:
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        config.update(overrides)
        path = os.path.abspath(config["dump_path"])
        try:
            ensure_dir(path)
            return []
        except OSError as err:
            finding = Finding("PL407", f"dump_path {path} cannot be created: {err.strerror or err}",
                              pointer="/dump_path", hint="choose a folder you can write")
        return [d for d in lint_live(config_path, overrides, rank, extra=(finding,)) if d.severity is Severity.ERROR]

    def _say_nothing_found(self) -> None:
        """At exit, after at least one start(): one line on stderr when no
        record was written (and detection was not turned off), so a run
        without overflow is told apart from a wrong dump_path."""
        if self._exit_said or not self._start_calls or self.state.found or self.monitor.disabled \
                or self._sentinel_findings:
            return
        if self._start_failed and not self._checked_steps:  # it never checked; start() said why
            return
        self._exit_said = True
        message = (f"probe_runtime: no overflow found in {len(self._checked_steps)} checked step(s); "
                   f"dump_path: {self.dump_path}")
        LOGGER.info(message)
        try:
            print(message, file=sys.stderr, flush=True)
        except Exception:  # pragma: no cover - stderr closed at exit
            pass

    def _unpatch(self) -> None:
        try:
            self.sync.leave()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error restoring the execution mode: %s", err)
        try:
            self.interceptor.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing patches: %s", err)
        try:
            self.cells.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing Cell hooks: %s", err)
        try:
            self.watch.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing the optimizer hook: %s", err)
        try:
            self.sentinel.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing the sentinel's wrappers: %s", err)


_DEBUGGERS: "weakref.WeakSet[PrecisionDebugger]" = weakref.WeakSet()
_PREVIOUS_SIGTERM: Any = None
_SIGTERM_INSTALLED = False


def _device_target() -> Optional[str]:
    """``mindspore.get_context("device_target")``, or None when unknown."""
    try:
        import mindspore

        return str(mindspore.get_context("device_target"))
    except Exception:  # pragma: no cover
        return None


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


def _on_sigterm(signum: int, frame: Any) -> None:
    """Unpatch and flush every debugger, then hand the signal on (see the
    module doc)."""
    debuggers = list(_DEBUGGERS)
    for debugger in debuggers:
        if debugger.monitor._flushing:  # the signal landed inside a batch: finish it first
            debugger.monitor.deferred = lambda: _on_sigterm(signum, frame)
            return
    for debugger in debuggers:
        _at_exit(weakref.ref(debugger))
        debugger._started = False
    previous = _PREVIOUS_SIGTERM
    if callable(previous) and previous is not _on_sigterm:
        previous(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _at_exit(ref: "weakref.ref[PrecisionDebugger]") -> None:
    debugger = ref()
    if debugger is None:
        return
    try:
        debugger._unpatch()
        debugger.monitor.live = False
        debugger.monitor.flush(final=True)
        debugger._resolve_sentinel()
        debugger._say_nothing_found()
    except Exception:  # pragma: no cover
        pass
