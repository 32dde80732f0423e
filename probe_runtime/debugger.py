"""The public ``PrecisionDebugger``: msprobe's signature over the runtime's parts.

The constructor runs the lint gate (:mod:`.gate`: a config with errors
raises ``ConfigLintError`` before anything is patched or written), then
wires the parts: the checker (:mod:`.check`), the L1 interceptor
(:mod:`.l1`), the L0 Cell hooks (:mod:`.l0`), the optimizer watch, the
synchronous windows (:mod:`.execution`), the gradient watch
(:mod:`.grad_watch`) and the replay (:mod:`.replay`), and registers for
interpreter exit and SIGTERM (:mod:`.lifecycle`). ``start()``, ``stop()``
and ``step()`` open and close the checked windows; each window is
*exact* (every call checked), *watched* (auto checks: only the gradient
computations, a replay under exact checks when one returns inf/nan) or a
*sentinel* window (``docs/checks.md``).

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
from .errors import RuntimeMissing, UsageError
from .gate import admit, claim_dump_path
from .state import RunState, expand_ids, live_rank_source

LOGGER = logging.getLogger("probe_runtime")
CONFIG_VARIABLE = "PROBE_CONFIG"
CHECKS_VARIABLE = "PROBE_CHECKS"
#: the values of ``checks`` (and ``PROBE_CHECKS``)
CHECKS = ("exact", "sentinel", "auto")
#: ``checks`` when neither the argument nor ``PROBE_CHECKS`` gives one
DEFAULT_CHECKS = "auto"


def _outside_filter(unchecked: set, steps: Optional[frozenset]) -> str:
    """What the all-clear adds about the steps that ran (start() was
    called) outside the config's step filter: how many, which; "" when
    none did (or there is no step filter)."""
    outside = sorted(step for step in unchecked if steps is not None and step not in steps)
    if not outside:
        return ""
    ranges: list[str] = []
    for step in outside:
        if ranges and ranges[-1].split("-")[-1] == str(step - 1):
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{step}"
        else:
            ranges.append(str(step))
    shown = ", ".join(ranges[:6]) + (", ..." if len(ranges) > 6 else "")
    return (f"; {len(outside)} step(s) ran outside the config's step filter and were not checked "
            f"(step {shown}): an overflow there is not seen")


def require_runtime() -> None:
    """Import numpy and MindSpore, what the debugger runs on (the
    ``runtime`` extra).

    Raises:
        RuntimeMissing: one of them cannot be imported (an ``ImportError``
            saying ``install the runtime extra: pip install
            'msprobe-lint[runtime]'``).
    """
    for module in ("numpy", "mindspore"):
        try:
            __import__(module)
        except ImportError as err:
            raise RuntimeMissing(module, str(err) or type(err).__name__) from None


class PrecisionDebugger:
    """msprobe-compatible overflow detector for MindSpore PyNative (L0, L1).

    Args:
        config_path: msprobe config.json; None falls back to the
            ``PROBE_CONFIG`` environment variable, then to no file (the
            keyword arguments alone).
        task, dump_path, level, step: override the file's values
            (``step``: list of ints >= 0 or ``"a-b"`` strings).
        checks: ``"exact"`` (every call of every checked step, forward and
            backward), ``"auto"`` (the first window and windows after one
            without gradients run exact checks; the others watch only the
            gradient computations and, when one returns inf/nan, run it
            again at once under exact checks: ``probe_runtime.replay``) or
            ``"sentinel"`` (only what gradient computations return, until
            something is not finite; exact checks from the next ``start()``
            on). None falls back to the ``PROBE_CHECKS`` environment
            variable, then :data:`DEFAULT_CHECKS`, except in a job of
            several ranks (MindSpore's communication initialised when the
            first window starts), where it is ``"exact"``: a replay never
            issues a collective, so under auto checks a rank that received
            inf/nan through one would not have that call named (choose
            ``"auto"`` explicitly to have it there). Not an msprobe argument.
            What each one sees and costs: ``docs/checks.md``.

    Raises:
        RuntimeMissing: numpy or MindSpore cannot be imported (an
            ``ImportError``: install the runtime extra, ``pip install
            'msprobe-lint[runtime]'``).
        ValueError: ``checks`` (or ``PROBE_CHECKS``) is not one of
            :data:`CHECKS`, or ``PROBE_SYNC`` is not ``0``, ``1`` or
            ``auto`` (``probe_runtime.execution.check_sync_mode``).
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
        require_runtime()  # RuntimeMissing without numpy or MindSpore, before anything else
        if config_path is None:
            config_path = os.environ.get(CONFIG_VARIABLE) or None
        source = "checks" if checks is not None else CHECKS_VARIABLE
        self._checks_defaulted = checks is None and not os.environ.get(CHECKS_VARIABLE)
        checks = checks if checks is not None else (os.environ.get(CHECKS_VARIABLE) or DEFAULT_CHECKS)
        if checks not in CHECKS:
            raise ValueError(f"{source} must be 'exact', 'auto' or 'sentinel', not {checks!r}")
        from .execution import check_sync_mode

        check_sync_mode()  # ValueError for PROBE_SYNC=maybe, as for PROBE_CHECKS=foo
        overrides = {k: v for k, v in (("task", task), ("dump_path", dump_path), ("level", level),
                                        ("step", step)) if v is not None}
        rank = live_rank_source()
        config = admit(config_path, overrides, rank)
        self._writer_claim = claim_dump_path(config_path, overrides, rank, config)  # one writer per rank folder
        self.config = config
        self.config_path = config_path
        self.task = config.get("task", "statistics")
        self.level = config.get("level", "L1")
        self.dump_path = os.path.abspath(config["dump_path"])
        section = config.get("overflow_check") or {}
        self.state = RunState(steps=expand_ids(config.get("step")), ranks=expand_ids(config.get("rank")),
                              rank=rank[0], overflow_nums=int(section.get("overflow_nums", 1)))
        self.checks = checks
        self._build_parts()
        #: sentinel checks run in the coming checked steps (until they find something)
        self.sentinel_armed = checks == "sentinel"
        #: the open window's kind ("exact", "watched", "sentinel"), until it is judged; None between windows
        self.window: Optional[str] = None
        self._watch_next = False  # auto: the next window watches the gradient computations only
        self._exact_next = False  # auto: a finding asks for exact checks in the next window
        self._notes = 0  # records that name no call (sentinel, outside, update) written
        self._sentinel_empty_said = False
        self._watched_empty_said = False  # a watched window without gradients was said
        self._model: Any = None  # what the open window's start() got
        self._window_found = 0  # state.found when the window opened
        self._window_notes = 0  # self._notes when the window opened
        self._window_updated = False  # an optimizer step or Parameter.set_data ran in the window
        self._replayed: set[int] = set()  # computations of the window already run again
        self._bad_before = False  # the optimizer being called had Parameters holding inf/nan
        self._started = False
        self._start_calls = 0
        self._checked_steps: set[int] = set()
        self._run_steps: set[int] = set()  # steps in which start() was called, checked or not
        self._exact_steps: set[int] = set()  # steps with an exact window
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
        from .grad_watch import GradWatch
        from .hooks.collectives import communication_ready
        from .hooks.frames import library_roots
        from .l0.cell_hooks import CellHooks
        from .l1.interceptor import ApiInterceptor
        from .l1.optimizer import OptimizerWatch
        from .replay import Replayer, capture_state
        from .state_watch import StateWatch

        self.checker = Checker(self.state, dump_path=self.dump_path, task=self.task, level=self.level,
                               on_exhausted=self._unpatch, library_roots=library_roots(), carry_batch=True)
        self.interceptor = ApiInterceptor(self.checker)
        self.cells = CellHooks(self.checker)
        # L0 sees the collective calls too (only those): a Cell's inf/nan may come from another rank
        self.collectives = ApiInterceptor(self.checker, namespaces=("Collective",))
        self.collectives.wrappers.enclosing = self.cells.current_call
        self._distributed = communication_ready
        self.watch = OptimizerWatch(self.checker, on_update=self._parameters_may_change, before_step=self._before_step,
                                    after_step=self._after_step)
        self.sync = SyncWindows()
        self.grads = GradWatch(self.checker.on_error, on_device=_device_target() not in ("CPU", None))
        self.grads.on_computation = self._on_computation
        nested = lambda: self.grads.depth > 1  # noqa: E731 - grad of grad: no backward hooks (wrappers.py)
        self.interceptor.wrappers.nested_gradient = self.cells.nested_gradient = nested
        self.collectives.wrappers.nested_gradient = nested
        if self.checks == "auto":
            self.grads.capture = capture_state
        self.states = StateWatch(self.grads.judge)
        self._replayer_type = Replayer
        self._replayer: Any = None

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
        self._run_steps.add(self.state.step)
        if self._started:
            return
        try:
            if not self.checker.begin():
                return
            self._settle_checks()
            kind = self._next_window()
            self._model = model
            self._window_found, self._window_updated, self._replayed = self.state.found, False, set()
            self._window_notes = self._notes
            self.grads.begin_window(keep=kind == "watched")
            if kind == "watched":
                self.states.begin_window()
            self.window = kind
            if kind == "exact":
                self._open_exact(model)
            if kind != "sentinel":
                self.watch.install()
            self.grads.install()  # raises when another debugger's watch is installed
            self._started = True
            self._checked_steps.add(self.state.step)  # only a window that did start (not one refused)
            if kind == "exact":
                self._exact_steps.add(self.state.step)
        except Exception as err:
            self.window = None
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
            self._close_window()
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
            self._close_window()
            self._say_nothing_found()
        finally:
            self._started = False

    # -- windows -----------------------------------------------------------------------
    def _settle_checks(self) -> None:
        """At the first window: the default checks of a job of several
        ranks are exact (see ``checks`` in the class docstring)."""
        if not self._checks_defaulted:
            return
        self._checks_defaulted = False
        if self.checks == "auto" and self._distributed():
            self.checks = "exact"
            self.grads.capture = None
            LOGGER.info("probe_runtime: a job of several ranks runs exact checks by default (a replay of auto checks "
                        "never issues a collective, so inf/nan received through one would not be named at the call); "
                        "checks='auto' or PROBE_CHECKS=auto chooses auto checks")

    def _next_window(self) -> str:
        """The kind of the window ``start()`` opens: ``sentinel`` (sentinel
        checks until they find something), ``watched`` (auto checks after a
        window that computed gradients, unless a finding asked for exact
        checks) or ``exact``."""
        if self.checks == "sentinel":
            return "sentinel" if self.sentinel_armed else "exact"
        if self.checks == "auto" and self._watch_next and not self._exact_next:
            return "watched"
        return "exact"

    def _open_exact(self, model: Any) -> None:
        """Exact checks on at the configured level (a window, or a replay):
        synchronous on CPU, the L1 wrappers or the L0 hooks on ``model``."""
        self.sync.enter()
        self.interceptor.synchronous = self.cells.synchronous = self.sync.active
        self.collectives.synchronous = self.checker.synchronous = self.sync.active
        if self.level == "L0":
            self.cells.install(model)
            if self._distributed():
                self.collectives.install()
        else:
            self.interceptor.install()

    def _close_exact(self) -> None:
        """Exact checks off (what :meth:`_open_exact` put on)."""
        for part in (self.interceptor, self.cells, self.collectives):
            try:
                part.uninstall()
            except Exception as err:  # pragma: no cover
                LOGGER.error("probe_runtime: error removing patches: %s", err)
        try:
            self.sync.leave()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error restoring the execution mode: %s", err)

    def _close_window(self) -> None:
        """The window closed and its checks are resolved: judge what the
        gradient watch still holds, write what the window's kind asks for,
        and choose the next window's kind (auto checks)."""
        kind, self.window = self.window, None
        if kind is None:
            return
        self.window = kind  # the computations judged now still belong to it
        try:
            self.grads.end_window()
            self.states.end_window()
        finally:
            self.window = None
        if kind == "sentinel":
            self._resolve_sentinel()
        elif kind == "exact":
            self._explain_window()
        elif kind == "watched":
            self._cover_window()
        if self.checks == "auto":
            self._watch_next = self.grads.computations > 0 and not self._exact_next
            self._exact_next = False

    def _resolve_sentinel(self) -> None:
        """Sentinel checks: on inf/nan in what the window's gradient
        computations returned, write their record and switch to exact
        checks for good."""
        found = self.grads.resolve()
        if found is None:
            if not self.grads.computations and not self._sentinel_empty_said:
                self._sentinel_empty_said = True
                LOGGER.warning("probe_runtime: sentinel checks saw no gradient computation in step %s: they judge "
                               "only what mindspore.grad / value_and_grad compute in PyNative, so forward-only code "
                               "and a training step compiled with mindspore.jit are not checked (use exact checks "
                               "for forward-only code: checks='exact' or PROBE_CHECKS=exact)", self.state.step)
            return
        self.sentinel_armed = False
        if self.checker.records.note_sentinel(found):
            self._notes += 1

    def _explain_window(self) -> None:
        """An exact window closed: when a gradient computation in it
        returned inf/nan and no record of the window explains it, say that
        the overflow lies outside what the level checks."""
        findings = [c for c in self.grads.findings if c.complete] or self.grads.findings
        if not findings or self._explained():
            return
        labels = list(dict.fromkeys(label for c in findings for label in c.nonfinite))
        self._note_outside(labels, findings[0].frames)

    def _cover_window(self) -> None:
        """A watched window closed: inf/nan that no replay covered (a
        computation nested in another one that returned finite, a forward
        pass whose gradients never came) gets the sentinel record saying
        why, and exact checks in the next window. A watched window that
        computed no gradients (an evaluation step after a training step)
        checked nothing: said once (logger ``probe_runtime``, warning)."""
        if not self.grads.computations and not self._watched_empty_said:
            self._watched_empty_said = True
            message = (f"probe_runtime: step {self.state.step} computed no gradients, so auto checks, which watch "
                       "gradient computations after the first step, checked nothing in it (evaluation or "
                       "forward-only code); every checked step after one without gradients runs exact checks, and "
                       "checks='exact' (PROBE_CHECKS=exact) checks every step")
            LOGGER.warning(message)
        if not self.grads.findings or self._explained() or self._notes > self._window_notes:
            return
        first = self.grads.findings[0]
        if first.nested:
            reason = "it ran inside another gradient computation, which is not run again on its own"
        else:
            reason = "its gradients were never computed (a forward pass alone), so it cannot be run again"
        self._fall_back(first, reason)

    def _explained(self) -> bool:
        """A record was written in this window (or detection stopped)."""
        return self.state.found > self._window_found or self.state.exhausted or self.checker.disabled

    # -- what the watches hand on ------------------------------------------------------
    def _on_computation(self, computation: Any) -> None:
        """A gradient computation returned (judged by the gradient watch):
        in a watched window, inf/nan in it is run again at once under exact
        checks (:meth:`_replay`), before its caller gets the gradients. One
        nested in another is left to the outer one's replay, which runs it
        too; what no replay covers is said when the window closes."""
        computation.step = self.state.step
        if self.checks == "auto" and computation.complete and not computation.nested:
            self._judge_state(computation)
        if not computation.nonfinite or self.window != "watched" or self._explained_for_good():
            return
        if computation.complete and not computation.nested:
            self._replay(computation)

    def _judge_state(self, computation: Any) -> None:
        """Auto checks: learn the state Parameters of the computation's
        function (every window) and, in a watched window where it returned
        finite values, judge them: one that turned inf/nan in the window
        (a training BatchNorm's moving variance) is what the computation
        got wrong, and its replay names the call that wrote it."""
        try:
            if self.window != "watched" or computation.nonfinite or self._explained_for_good():
                self.states.learn(computation.fn)
                return
            turned = self.states.turned_nonfinite(computation.fn)
        except Exception as err:  # a Cell without MindSpore's usual attributes
            self.checker.on_error("while judging the state Parameters of a gradient computation", err)
            return
        if turned:
            computation.nonfinite = turned
            self.grads.findings.append(computation)

    def _explained_for_good(self) -> bool:
        return self.state.exhausted or self.checker.disabled

    def _replay(self, computation: Any, masked: Optional[list] = None) -> None:
        """Run the window's gradient computations not run again yet (ending
        with ``computation``) under exact checks, then say what the replay
        found when its records do not. ``masked``: the labels of Parameters
        found holding inf/nan before an optimizer step although the
        computations returned finite values (the replay then looks for the
        calls that used them)."""
        from msprobe_lint.report.dumpformat import REPLAY

        pending = [c for c in self.grads.window if id(c) not in self._replayed]
        if not pending or pending[-1] is not computation:
            pending = [computation]
        where = self.checker.records.where(computation.frames)
        found = self.state.found
        self.checker.records.marks = {REPLAY: where}
        try:
            if self._replayer is None:  # made once: it keeps its plan of guards
                self._replayer = self._replayer_type(self.grads.originals, self.grads.judge,
                                                     distributed=self.state.rank is not None)
            outcome = self._replayer.run(pending, open_checks=self._open_replay, close_checks=self._close_replay,
                                         model=self._model, start_values=self.states.start_values())
        finally:
            self.checker.records.marks = {}
            self._replayed.update(id(c) for c in pending)
        explained = self.state.found > found
        labels = masked or computation.nonfinite
        if outcome.refused:
            self._fall_back(computation, f"its replay stopped before {outcome.refused}: a replay never issues a "
                            "collective", labels)
        elif outcome.error:
            self._fall_back(computation, f"running it again failed ({outcome.error})", labels)
        elif explained or self._explained_for_good():
            return
        elif masked:
            self._note_masked(masked, computation)
        elif outcome.nonfinite:
            self._note_outside(computation.nonfinite, computation.frames)
        else:
            self._fall_back(computation, "running it again under exact checks did not reproduce it (random ops "
                            "with their own state, a nondeterministic kernel, or inputs changed in place since)")

    def _open_replay(self) -> None:
        self._open_exact(self._model)
        if self._window_updated:  # Parameters were updated earlier in the window: not their values at start()
            self._parameters_may_change()

    def _close_replay(self) -> None:
        try:
            self.checker.flush(final=True)
        finally:
            self._close_exact()

    def _fall_back(self, computation: Any, reason: str, labels: Optional[list] = None) -> None:
        """Auto checks could not name the call: today's sentinel record,
        saying why, and exact checks in the next window."""
        self._exact_next = True
        records = self.checker.records
        where = records.where(computation.frames)
        source = "returned by" if not labels or labels is computation.nonfinite else "used by"
        labels = labels or computation.nonfinite
        message = (f"inf/nan in {_shown(labels)}, {source} the gradient computation at {where}; "
                   f"{reason}: exact {self.level} checks run from the next start() on")
        if records.note("sentinel", labels, where, message):
            self._notes += 1

    def _note_masked(self, labels: list, computation: Any) -> None:
        """Parameters held inf/nan before an optimizer step, the window's
        gradient computations returned finite values, and the replay's exact
        checks recorded no call that used them: said, with exact checks next."""
        self._exact_next = True
        records = self.checker.records
        where = records.where(computation.frames)
        message = (f"{_shown(labels)} held inf/nan before the optimizer step, although the gradient computation "
                   f"at {where} returned finite values and no checked {'Cell' if self.level == 'L0' else 'call'} "
                   "used it with inf/nan: it was written outside the checked windows, or is not used by the "
                   "computation")
        if records.note("outside", labels, where, message):
            self._notes += 1

    def _note_outside(self, labels: list, frames: tuple) -> None:
        """A gradient computation returned inf/nan that no checked call or
        Cell explains (issue 26): the record saying where to look."""
        records = self.checker.records
        where = records.where(frames)
        if self.level == "L0":
            outside = ("the Cells given to start() (in the loss function, or other code outside the model): use "
                       "level L1, or pass the loss Cell to start() too, e.g. start([net, loss_fn])")
        else:
            outside = ("the calls level L1 checks (code compiled with mindspore.jit, a Cell run as one graph, or "
                       "the inside of one kernel)")
        message = (f"inf/nan in {_shown(labels)}, returned by the gradient computation at {where}, and no checked "
                   f"{'Cell' if self.level == 'L0' else 'call'} made it: the overflow lies outside {outside}")
        if records.note("outside", labels, where, message):
            self._notes += 1

    def _before_step(self, optimizer: Any, args: tuple, frames: tuple) -> None:
        """An optimizer is about to update its Parameters
        (``l1.optimizer.OptimizerWatch``). In a watched window whose
        gradient computations returned finite values, its Parameters are
        read: inf/nan in them now was masked on the way to the loss and the
        gradients (a saturating gate), which exact checks would have
        recorded where it was used; so the window's computations run again
        under exact checks (:meth:`_replay`)."""
        self._bad_before = False
        if self.window != "watched" or self._explained_for_good() or self.grads.findings or self._explained() \
                or not self.grads.window:
            return
        params = _optimizer_parameters(optimizer)
        bad = self.grads.judge([(f"Parameter {getattr(p, 'name', '?')}", p) for p in params])
        if bad:
            self._bad_before = True
            self._replay(self.grads.window[-1], masked=bad)

    def _after_step(self, optimizer: Any, args: tuple, frames: tuple) -> None:
        """An optimizer call returned (``l1.optimizer.OptimizerWatch``):
        inf/nan in the gradients it got that no gradient computation of
        the window returned and no record explains is said (``outside``);
        in a watched window its Parameters are read again, and inf/nan they
        hold now, though they and their gradients were finite before the
        call, is said (``update``), with exact checks in the next window."""
        if self.window not in ("exact", "watched") or self._explained_for_good() or self.grads.findings \
                or self._explained() or self._bad_before:
            return
        params = _optimizer_parameters(optimizer)
        known = self.grads.finite
        given = self.grads.judge([(label, t) for label, t in _labelled_inputs(args, params)
                                  if known.get(id(t)) is not t])
        records = self.checker.records
        where = records.where(frames)
        name = type(optimizer).__name__
        if given:
            message = (f"inf/nan in {_shown(given)} given to the optimizer {name} at {where}, which no gradient "
                       "computation returned and no checked call made: the code between them (an unscale, a clip) "
                       "made it")
            kind = "outside"
        elif self.window == "watched" and self.grads.window:
            given = self.grads.judge([(f"Parameter {getattr(p, 'name', '?')}", p) for p in params])
            if not given:
                return
            message = (f"{_shown(given)} held inf/nan right after the optimizer step {name} at {where}, although "
                       "it and the gradients it got were finite before: the update made it")
            kind = "update"
        else:
            return
        if records.note(kind, given, where, message):
            self._notes += 1
        if self.checks == "auto":
            self._exact_next = True

    def _parameters_may_change(self) -> None:
        """An optimizer step or ``Parameter.set_data`` is about to run (the
        queue is resolved): Parameters are probed again at their next use,
        at L1 (first use in a call) and at L0 (the next call of each Cell)."""
        self._window_updated = True
        self.interceptor.forget_probes()
        self.collectives.forget_probes()
        self.cells.forget_probes()

    def _say_nothing_found(self) -> None:
        """At exit, after at least one start(): one line on stderr when no
        record was written (and detection was not turned off), so a run
        without overflow is told apart from a wrong dump_path."""
        if self._exit_said or not self._start_calls or self.state.found or self.checker.disabled or self._notes:
            return
        if self._start_failed and not self._checked_steps:  # it never checked; start() said why
            return
        self._exit_said = True
        watched = len(self._checked_steps - self._exact_steps)
        how = ""
        if self.checks == "auto" and watched:
            how = (f" ({len(self._exact_steps)} with exact checks, {watched} watched by auto checks: an inf/nan "
                   "masked before the loss and the gradients is not seen there)")
        message = (f"probe_runtime: no overflow found in {len(self._checked_steps)} checked step(s){how}; "
                   f"dump_path: {self.dump_path}")
        message += _outside_filter(self._run_steps - self._checked_steps, self.state.steps)
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
            self.grads.uninstall()
        except Exception as err:  # pragma: no cover
            LOGGER.error("probe_runtime: error removing the gradient watch: %s", err)


def _device_target() -> Optional[str]:
    """``mindspore.get_context("device_target")``, or None when unknown."""
    try:
        import mindspore

        return str(mindspore.get_context("device_target"))
    except Exception:  # pragma: no cover
        return None


def _shown(labels: list, limit: int = 4) -> str:
    """``labels`` for a message, the first ``limit`` of them."""
    return ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def _optimizer_parameters(optimizer: Any) -> list:
    """The Parameters an optimizer updates: ``parameters`` of an
    ``nn.Optimizer``, the ``params`` of each group of a ``mint.optim`` one."""
    params = getattr(optimizer, "parameters", None)
    if params is not None and not callable(params):
        return list(params)
    out: list = []
    for group in getattr(optimizer, "param_groups", None) or []:
        out.extend(group.get("params", []) if isinstance(group, dict) else [])
    return out


def _labelled_inputs(args: tuple, params: list) -> list:
    """(label, tensor) for the gradients given to an optimizer: ``gradient
    of <Parameter>`` when they line up with its Parameters, else ``input
    i``."""
    from .check.verdict import iter_tensors

    tensors = list(iter_tensors(list(args)))
    if len(tensors) == len(params):
        return [(f"gradient of {getattr(p, 'name', '?')}", t) for p, t in zip(params, tensors)]
    return [(f"input {i}", t) for i, t in enumerate(tensors)]
