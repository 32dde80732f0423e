"""The public ``PrecisionDebugger``: msprobe's signature over the runtime's parts.

The constructor runs the lint gate (:mod:`.gate`: a config with errors
raises ``ConfigLintError`` before anything is patched or written), then
wires the parts: the checker (:mod:`.check`), the L1 interceptor
(:mod:`.l1`), the L0 Cell hooks (:mod:`.l0`), the optimizer watch, the
synchronous windows (:mod:`.execution`) and the sentinel
(:mod:`.sentinel`), and registers for interpreter exit and SIGTERM
(:mod:`.lifecycle`). ``start()``, ``stop()`` and ``step()`` open and close
the checked windows.

Example::

    from probe_runtime import PrecisionDebugger

    debugger = PrecisionDebugger(config_path="config.json")   # ConfigLintError on errors
    debugger.start()
    loss = train_step(batch)
    debugger.stop()
    debugger.step()
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any, Optional

from . import lifecycle
from .errors import UsageError
from .gate import admit
from .state import RunState, expand_ids, live_rank_source

LOGGER = logging.getLogger("probe_runtime")
CONFIG_VARIABLE = "PROBE_CONFIG"
CHECKS_VARIABLE = "PROBE_CHECKS"
#: the values of ``checks`` (and ``PROBE_CHECKS``)
CHECKS = ("exact", "sentinel")


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
    N checked step(s); dump_path: ...`` (at L0 followed by what that level
    does not see: an overflow that starts and ends inside one Cell).

    Level L1 intercepts API calls (``probe_runtime.l1``); level L0 hooks
    the sub-Cells of the model given to ``start(model)``
    (``probe_runtime.l0``). What is checked when: see
    ``probe_runtime.check.queue`` (calls are queued and resolved in
    batches; records are on disk before the resolving call returns;
    everything is resolved by ``stop()``/``step()``).

    Example::

        debugger = PrecisionDebugger(config_path="config.json")
        for batch in dataset:
            debugger.start()          # level L0: debugger.start(net)
            loss, grads = grad_fn(*batch)
            optimizer(grads)
            debugger.stop()
            debugger.step()
    """

    def __init__(self, config_path: Optional[str] = None, task: Optional[str] = None,
                 dump_path: Optional[str] = None, level: Optional[str] = None,
                 step: Optional[list] = None, *, checks: Optional[str] = None) -> None:
        if config_path is None:
            config_path = os.environ.get(CONFIG_VARIABLE) or None
        source = "checks" if checks is not None else CHECKS_VARIABLE
        checks = checks if checks is not None else (os.environ.get(CHECKS_VARIABLE) or "exact")
        if checks not in CHECKS:
            raise ValueError(f"{source} must be 'exact' or 'sentinel', not {checks!r}")
        overrides = {k: v for k, v in (("task", task), ("dump_path", dump_path), ("level", level),
                                        ("step", step)) if v is not None}
        rank = live_rank_source()
        config = admit(config_path, overrides, rank)
        self.config = config
        self.config_path = config_path
        self.task = config.get("task", "statistics")
        self.level = config.get("level", "L1")
        self.dump_path = os.path.abspath(config["dump_path"])
        section = config.get("overflow_check") or {}
        self.state = RunState(steps=expand_ids(config.get("step")), ranks=expand_ids(config.get("rank")),
                              rank=rank[0], overflow_nums=int(section.get("overflow_nums", 1)))
        self._build_parts()
        self.checks = checks
        #: sentinel checks run in the coming checked steps (until they find something)
        self.sentinel_armed = checks == "sentinel"
        self._sentinel_window = False  # a sentinel window is open (or closed and not judged yet)
        self._sentinel_findings = 0
        self._sentinel_empty_said = False
        self._started = False
        self._start_calls = 0
        self._checked_steps: set[int] = set()
        self._start_failed = False  # a start() said why it could not check (e.g. another debugger's window)
        self._exit_said = False
        lifecycle.register(self)

    def _build_parts(self) -> None:
        """Build the parts the windows use: the checker, the L1 interceptor,
        the L0 Cell hooks and their collective interceptor (L0 sees the
        collective calls of a distributed job too), the optimizer watch,
        the synchronous windows and the sentinel.

        Their modules are imported here, not at the top of this module:
        they need numpy and, once they run, MindSpore (the ``runtime``
        extra), so ``import probe_runtime`` stays light (its error classes
        and the gate import neither) and a config the gate refuses costs
        none of those imports.
        """
        from .check.queue import Checker
        from .execution import SyncWindows
        from .hooks.collectives import communication_ready
        from .hooks.frames import library_roots
        from .l0.cell_hooks import CellHooks
        from .l1.interceptor import ApiInterceptor
        from .l1.optimizer import OptimizerWatch
        from .sentinel import GradSentinel

        self.checker = Checker(self.state, dump_path=self.dump_path, task=self.task, level=self.level,
                               on_exhausted=self._unpatch, library_roots=library_roots(), carry_batch=True)
        self.interceptor = ApiInterceptor(self.checker)
        self.cells = CellHooks(self.checker)
        # L0 sees the collective calls too (only those): a Cell's inf/nan may come from another rank
        self.collectives = ApiInterceptor(self.checker, namespaces=("Collective",))
        self.collectives.wrappers.enclosing = self.cells.current_call
        self._distributed = communication_ready
        self.watch = OptimizerWatch(self.checker, on_update=self._parameters_may_change)
        self.sync = SyncWindows()
        self.sentinel = GradSentinel(self.checker.on_error, on_device=_device_target() not in ("CPU", None))

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
            self.cells.check_model(model)  # raises UsageError for a non-Cell
        self._start_calls += 1
        if self._started:
            return
        try:
            if not self.checker.begin():
                return
            if self.sentinel_armed:
                self.sentinel.install()  # raises when another debugger's sentinel is installed
                self._sentinel_window = True
                self._started = True
                self._checked_steps.add(self.state.step)
                return
            self.sync.enter()
            self.interceptor.synchronous = self.cells.synchronous = self.sync.active
            self.collectives.synchronous = self.checker.synchronous = self.sync.active
            if self.level == "L0":
                self.cells.install(model)
                if self._distributed():
                    self.collectives.install()
            else:
                self.interceptor.install()
            self.watch.install()
            self._started = True
            self._checked_steps.add(self.state.step)  # only a window that did start (not one refused)
        except Exception as err:
            self.checker.on_error("in start()", err)
            self._start_failed = True
            self._unpatch()

    def stop(self) -> None:
        """Stop checking, remove the patches and resolve every pending check
        (records are on disk when it returns)."""
        self._unpatch()
        self._started = False
        try:
            self.checker.end()
            self._resolve_sentinel()
        except Exception as err:  # pragma: no cover
            self.checker.on_error("in stop()", err)

    def step(self) -> None:
        """End the current step (resolving what is pending) and count one
        more; call indices start again at 0."""
        if self._started:
            self.stop()
        else:
            self.checker.flush(final=True)
        self.state.next_step()
        self.cells.new_step()

    def set_init_step(self, step: int) -> None:
        """Set the number of the current step (e.g. when resuming).

        Raises:
            ValueError: ``step`` is not an int >= 0.
        """
        self.state.set_step(step)

    def finish(self) -> None:
        """What interpreter exit and SIGTERM do (:mod:`.lifecycle`): remove
        every patch, resolve everything pending (records written), judge
        the sentinel's window and, when nothing was found, say so once.
        The debugger counts as stopped afterwards."""
        try:
            self._unpatch()
            self.checker.live = False
            self.checker.flush(final=True)
            self._resolve_sentinel()
            self._say_nothing_found()
        finally:
            self._started = False

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
        self.checker.records.note_sentinel(found)

    def _parameters_may_change(self) -> None:
        """An optimizer step or ``Parameter.set_data`` is about to run (the
        queue is resolved): Parameters are probed again at their next use,
        at L1 (first use in a call) and at L0 (the next call of each Cell)."""
        self.interceptor.forget_probes()
        self.collectives.forget_probes()
        self.cells.forget_probes()

    def _say_nothing_found(self) -> None:
        """At exit, after at least one start(): one line on stderr when no
        record was written (and detection was not turned off), so a run
        without overflow is told apart from a wrong dump_path."""
        if self._exit_said or not self._start_calls or self.state.found or self.checker.disabled \
                or self._sentinel_findings:
            return
        if self._start_failed and not self._checked_steps:  # it never checked; start() said why
            return
        self._exit_said = True
        message = (f"probe_runtime: no overflow found in {len(self._checked_steps)} checked step(s); "
                   f"dump_path: {self.dump_path}")
        if self.level == "L0":  # what L0 cannot see, so the all-clear is not read as more than it is
            message += (" (level L0 checks what the Cells take and return: an overflow that starts and ends inside "
                        "one Cell, its outputs finite, is not seen; level L1 names the call)")
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
            self.collectives.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing the collective patches: %s", err)
        try:
            self.watch.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing the optimizer hook: %s", err)
        try:
            self.sentinel.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing the sentinel's wrappers: %s", err)


def _device_target() -> Optional[str]:
    """``mindspore.get_context("device_target")``, or None when unknown."""
    try:
        import mindspore

        return str(mindspore.get_context("device_target"))
    except Exception:  # pragma: no cover
        return None
