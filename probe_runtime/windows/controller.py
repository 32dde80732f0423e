"""The checked windows: what ``start()`` opens and ``stop()`` closes.

:class:`Windows` owns the window of the moment (:class:`Window`) and the
rules of what is judged in it, at every kind (:mod:`.policy`):

* opening: the kind from the policy, the gradient watch's window, exact
  checks on (:mod:`.exact`) in an exact window, the optimizer watch;
* around each optimizer step, in every window: the optimizer's own state
  (Adam's moments, accumulators, ``global_step``) when it is first seen,
  or after a window it did not run in, and, after the step, what it was
  given and what it left in its Parameters and its own state
  (:meth:`Windows.before_step`, :meth:`Windows.after_step`);
* closing: what the gradient watch still holds, then per kind: the
  sentinel's record, an exact window's ``outside`` note when a gradient
  computation returned inf/nan that no record explains, a watched window's
  cover (:mod:`.watched`); then the policy learns what the window computed;
* ``step()`` after a ``start()`` with no ``stop()`` (msprobe collects on
  until ``stop()``): the next step's window is opened with the same model
  (:meth:`Windows.stepped`). The next ``step()`` closes it as any other
  (the loop ran an iteration); one ended by ``stop()`` or exit that saw no
  training call (the one the last ``step()`` opens) counts as no step; a
  ``start()`` of the user's in its step with another model, or after calls,
  ends it and opens the user's window (:meth:`Windows.replaced_by`).

What is written when no call is named: :mod:`.notes`. The closing
summary: :mod:`.summary`.
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from ..check.names import parameter_name
from ..check.verdict import iter_tensors
from ..hooks.guard import keep_training
from .activity import CellCalls, asked_has_aux
from .exact import ExactChecks
from .notes import Notes
from .optimizers import (input_label, optimizer_parameters, state_label, state_parameters,
                         updated_names)
from .policy import Checks, Kind, WindowPolicy
from .summary import Summary
from .watched import WatchedWindow

LOGGER = logging.getLogger("probe_runtime")


@dataclass
class Window:
    """One open window.

    Attributes:
        kind: its :class:`~.policy.Kind`.
        model: what ``start()`` got (L0's network; replays hook it too).
        found: ``RunState.found`` when it opened (records written since
            explain what it saw).
        notes: ``Notes.count`` when it opened.
        updated: an optimizer step or ``Parameter.set_data`` ran in it.
        replayed: ``id()`` of the gradient computations run again.
        bad_before: the optimizer being called had Parameters holding
            inf/nan (its replay said so).
        optimizers: ``id()`` of the optimizers whose state was judged in it.
        found_step: ``RunState.found`` when the optimizer step being run
            began (records written since were made by its own calls).
        nested: a gradient computation nested in another's forward pass
            returned inf/nan that no record explained (its note is written).
    """

    kind: Kind
    model: Any = None
    found: int = 0
    notes: int = 0
    updated: bool = False
    replayed: set = field(default_factory=set)
    bad_before: bool = False
    optimizers: set = field(default_factory=set)
    found_step: int = 0
    nested: bool = False


class Windows:
    """Opens, judges and closes the checked windows of one debugger.

    Args:
        policy: the :class:`~.policy.WindowPolicy`.
        exact: the :class:`~.exact.ExactChecks` switch.
        checker: the ``Checker`` (its ``records``, ``flush``, ``on_error``).
        state: the ``RunState`` (``found``, ``exhausted``, ``step``).
        grads: the ``GradWatch``.
        states: the ``StateWatch`` (auto checks' written state).
        optimizers: the ``OptimizerWatch`` (installed in every window but
            the sentinel's).
        replayer: builds the ``Replayer`` (called once, when the first
            replay runs).
        level: ``"L0"`` or ``"L1"``.
        dump_path: for the closing summary.

    Attributes:
        resume: ``(model,)`` of the last ``start()`` while no ``stop()``
            followed it: ``step()`` opens the next step's window with it.
        compiled: the debugger's ``l2.parts.CompiledParts`` (set after it is
            built): its checked Cell steps and ``mindspore.jit`` region calls
            count as training calls of a window.
    """

    def __init__(self, policy: WindowPolicy, exact: ExactChecks, *, checker: Any, state: Any, grads: Any, states: Any,
                 optimizers: Any, replayer: Any, level: str, dump_path: str) -> None:
        self.policy = policy
        self.exact = exact
        self.checker, self.state, self.grads, self.states = checker, state, grads, states
        self.optimizers = optimizers
        self.level = level
        self.notes = Notes(checker.records, level)
        outside = state.ranks is not None and (state.rank or 0) not in state.ranks
        self.summary = Summary(level, dump_path, state.steps,
                               f"rank {state.rank or 0} is not in the config's rank filter {sorted(state.ranks)}"
                               if outside and state.ranks is not None else None,
                               task=getattr(checker.records, "task", "overflow_check"))
        self.current: Optional[Window] = None
        self.watched = WatchedWindow(self, replayer)
        self._sentinel_empty_said = False
        #: ``id()`` of the optimizers whose state may hold inf/nan an earlier record explains (it ran in a
        #: window that recorded an overflow, or its state was said to hold inf/nan): not said again; dropped
        #: once its state reads finite (before or after a step): inf/nan in it from then on is new
        self._tainted: set[int] = set()
        #: ``id()`` of the optimizers that ran in the last window (their state was followed through it)
        self._last_optimizers: set[int] = set()
        self.resume: Optional[tuple] = None
        self.compiled: Any = None
        #: (step, :meth:`_activity`) of the step whose ``start()`` ``step()`` made, until that step ends
        self._reopened: Optional[tuple[int, Any]] = None
        self._reopening = False
        self._user_started: Optional[int] = None  # the step of the user's last own start()
        #: whether a Cell was called in the window ``step()`` opened (no hook watches a watched/sentinel one)
        self._cells = CellCalls()

    # -- what the facade calls ---------------------------------------------------
    @property
    def kind(self) -> Optional[Kind]:
        """The open window's kind; None between windows."""
        return self.current.kind if self.current is not None else None

    def started(self, step: int, model: Any) -> None:
        """``start(model)`` was called in ``step`` (checked or not): the
        all-clear counts it, unless ``step()`` made it (:meth:`stepped`), and
        ``step()`` opens the next step's window with ``model`` until ``stop()``.
        A window ``step()`` opened in ``step`` that is still open here was
        kept (:meth:`replaced_by`): it is the user's from now on."""
        self.resume = (model,)
        if self._reopening:
            return
        if self._reopened is not None and self._reopened[0] == step:  # the user's own start(): a step of theirs
            self._reopened = None
            self._cells.disarm()
        elif self._user_started == step and self.current is not None:
            # a hunt's finding: an exception skipped stop() and step() (a loop that catches it and goes on), the
            # next iteration's start() continued the window, and the steps drifted from the loop's without a word
            self.summary.restarted(step)
        self._user_started = step
        self.summary.started(step)

    def replaced_by(self, step: int, model: Any) -> bool:
        """The user's own ``start(model)`` in ``step`` while a window is
        open: True when that window must end first (the caller stops it,
        :meth:`close` drops it when ``step()`` opened it and it saw no
        training call, else closes it as any other) so that ``start()``
        opens one with ``model``. False when ``model`` is the one the window
        checks (it is kept, also after calls ran in it: a Cell called before
        ``start()``; it becomes the user's, :meth:`started`). Another model
        replaces the window ``step()`` opened (:meth:`stepped`) and, at L0,
        the user's own: the Cells checked are those of the model given to
        the last ``start()``. Fresh reviews' findings: ``start(net_b)`` in
        the odd steps of a loop that starts ``net_a`` in the even ones and
        never calls ``stop()``, and ``start(disc)`` after ``start(gen)`` in
        each step of a GAN loop, returned early (already started): net_b's
        and disc's Cells were never hooked ("no overflow found", or an
        ``outside`` record for an overflow in them)."""
        window = self.current
        if self._reopening or window is None or _same_model(model, window.model):
            return False
        reopened = self._reopened
        return (reopened is not None and reopened[0] == step) or self.level == "L0"

    def stepped(self, start: Any, resume: Optional[tuple]) -> None:
        """``step()`` ended a step and counted one more. When ``start()`` had
        no ``stop()`` after it (``resume``: its arguments), the window of
        the next step is opened by calling ``start(*resume)``: msprobe
        collects from ``start()`` until ``stop()``, ``step()`` only counts
        the step (a fresh user's finding: ``start()`` once before the loop,
        ``step()`` in it, checked step 0 alone and said "no overflow found
        in 1 checked step(s)" of a run whose step 3 overflowed). The next
        ``step()`` closes a window so opened as any other; one that
        ``stop()`` or exit ends (the one the last ``step()`` opens) counts
        as no step when it saw no training call (:meth:`close`): a Cell
        call is watched for while it is open (:class:`.activity.CellCalls`),
        the one sign of a forward pass in a watched or sentinel window.

        Raises:
            UsageError: what ``start()`` raises (a torch layer imported late).
        """
        self.summary.step_calls += 1
        if self.stopped() or not self.state.selected():
            self.exact.unpark()  # no exact window follows: outside the step filter nothing stays patched
        previous, self._reopened = self._reopened, None
        if previous is not None:  # opened by step(), it ran to this step() with no window: outside the filter
            self.summary.started(previous[0])
        if resume is None:
            return
        self._reopening = True
        try:
            start(*resume)
        finally:
            self._reopening = False
        self._reopened = (self.state.step, self._activity())
        if self.current is not None:  # a watched or sentinel window hooks no call: a Cell call says one ran
            self._cells.arm()

    def _activity(self) -> tuple:
        """Counts that grow with the training calls of any window: compiled
        Cell steps checked at L2, ``mindspore.jit`` regions checked at L1/L0."""
        compiled = self.compiled
        graph, jit = getattr(compiled, "graph", None), getattr(compiled, "jit", None)
        return getattr(graph, "checked", 0), getattr(jit, "calls", 0)

    def _unused_reopened(self, window: Optional[Window], by_step: bool) -> bool:
        """The step now ending was opened by ``step()`` (:meth:`stepped`),
        is ended by ``stop()``, exit or the user's ``start()``
        (:meth:`replaced_by`), not by the next ``step()`` (``by_step``: the
        loop ran an iteration in it, whatever the window saw), and saw no
        training call (:meth:`_unused`). With no window open (the step
        outside the step filter, ``overflow_nums`` reached) nothing can
        tell: it counts as unused."""
        reopened, self._reopened = self._reopened, None
        if by_step or reopened is None or reopened[0] != self.state.step:
            return False
        if window is None:
            return bool(self._activity() == reopened[1])
        return self._unused(window, reopened)

    def _unused(self, window: Window, reopened: tuple) -> bool:
        """The window ``step()`` opened (``reopened``: its step and
        :meth:`_activity` then) saw no training call: no API or Cell call
        checked, no Cell called at all (:class:`.activity.CellCalls`: the one
        sign a watched or sentinel window has of a forward pass), no
        gradient computation, no optimizer step, no compiled step or region.
        Forward code that calls no Cell (functional calls alone) leaves no
        sign in a watched or sentinel window."""
        if self._activity() != reopened[1]:
            return False
        return not (self.state.counters or self.state.collective_counters or self.grads.computations
                    or self.grads.depth or window.optimizers or window.updated or self._cells.seen)

    def open(self, model: Any) -> None:
        """Open the next window (``start()``, once the checker said the step
        and rank are checked).

        Raises:
            Exception: what installing a part raises (another debugger's
                gradient watch is installed ...): the caller logs it and
                turns everything off.
        """
        if self.policy.settle(self.exact.distributed()):
            self.grads.capture = None
            LOGGER.info("probe_runtime: a job of several ranks runs exact checks by default (a replay of auto checks "
                        "never issues a collective, so inf/nan received through one would not be named at the call); "
                        "checks='auto' or PROBE_CHECKS=auto chooses auto checks")
        kind = self.policy.next_kind()
        if kind is not Kind.EXACT:
            self.exact.unpark()  # a watched or sentinel window intercepts no call
        self.current = Window(kind, model, found=self.state.found, notes=self.notes.count)
        self.grads.begin_window(keep=kind is Kind.WATCHED)
        if kind is Kind.WATCHED:
            self.states.begin_window()
        if kind is Kind.EXACT:
            self.exact.open(model)
        elif kind is Kind.WATCHED:
            self.exact.begin_sweep(model)
        self.optimizers.install()  # a sentinel window too: it judges what an optimizer got (after_step)
        self.grads.install()  # raises when another debugger's watch is installed
        self.summary.checked(self.state.step, exact=kind is Kind.EXACT)

    def abandon(self) -> None:
        """``open`` failed: no window is open."""
        self.current = None

    def close(self, at_exit: bool = False, by_step: bool = False) -> None:
        """The window's checks are resolved (``stop()``, ``step()``, exit):
        judge what the gradient watch still holds, write what the kind asks
        for, and let the policy choose the next kind. ``at_exit``: the
        interpreter is exiting; a window still open then is a step whose
        code never reached ``stop()``, which the all-clear says. A window
        ``step()`` opened that saw no training call is dropped as if it
        never opened when ``stop()``, exit or the user's ``start()`` ends
        it: not a checked step, not cut short, and the policy learns nothing
        from it. ``by_step``: ``step()`` ends it; the loop ran an iteration
        in it, so it is closed as any other (a fresh review's finding: an
        evaluation step of auto checks, whose watched window hooks no call,
        was dropped as unused: not counted, no warning that it computed no
        gradients, and the next window stayed watched, missing the overflow
        of the next evaluation step)."""
        window = self.current
        self._cells.disarm()
        if self._unused_reopened(window, by_step):
            self.summary.forget(self.state.step)
            if window is not None:
                try:
                    self.grads.end_window()
                    self.states.end_window()
                finally:
                    self.current = None
                    self.checker.by_design.clear()
            return
        if window is None:
            return
        if at_exit:
            self.summary.interrupted(self.state.step)
        try:  # the computations judged now still belong to the window
            self.grads.end_window()
            self.states.end_window()
        finally:
            self.current = None
        if self.explained(window) or self.notes.count > window.notes:  # its optimizers carry what was said
            self._tainted.update(window.optimizers)
        self._last_optimizers = set(window.optimizers)
        try:
            if at_exit and getattr(sys, "last_value", None) is not None:
                self._release_cut_off()  # an uncaught exception cut the step short: masks nothing took yet
            else:  # -inf by design that nothing took: a result, unless a mask the user's code read on the host
                registry = self.checker.by_design
                self.checker.release_by_design(unconsumed=True, keep=lambda maker: not registry.left_checks(maker))
            if window.kind is Kind.SENTINEL:
                self._resolve_sentinel()
            elif window.kind is Kind.EXACT:
                self._explain(window)
            else:
                if not self.explained(window) and (written := self.exact.written_state()):
                    self.notes.written_inside(written)  # L0: what a Cell's own code wrote (l0.state_sweep)
                self.watched.cover(window)
        finally:
            self.summary.masks.update(self.checker.by_design.consumed_cells())  # L0: named in the all-clear
            self.summary.regions.update(self.checker.by_design.consumed_regions())  # L1: likewise
            self.checker.by_design.clear()  # the tensors of -inf made by design, held for the window
        self.policy.closed(self.grads.computations > 0)

    def parameters_may_change(self) -> None:
        """An optimizer step or ``Parameter.set_data`` is about to run (the
        queue is resolved): Parameters are probed again at their next use."""
        if self.current is not None:
            self.current.updated = True
        self.exact.forget_probes()

    def uninstall(self, park: bool = False) -> None:
        """Remove every installed part (exact checks, the optimizer watch,
        the gradient watch), each in its own guard. ``park``: the window
        ends with the next one expected (``stop()``, ``step()``): L1's
        patches stay in place, inert (``ExactChecks.close``), unless
        detection stopped for good. :meth:`stepped` removes them when the
        next step is not checked, :meth:`open` before a window of another
        kind."""
        self.exact.close(park=park and not self.stopped())
        self._cells.disarm()
        for part, what in ((self.optimizers, "the optimizer hook"), (self.grads, "the gradient watch")):
            with keep_training(f"removing {what}"):
                part.uninstall()

    def say_nothing_found(self) -> None:
        """At exit: the all-clear, when nothing was recorded, or the steps
        left unchecked once ``overflow_nums`` was reached (:mod:`.summary`)."""
        if self.state.exhausted and not self.checker.disabled:
            self.summary.say_limit(self.state.overflow_nums)
            return
        self.summary.say(found=self.state.found, disabled=self.checker.disabled, notes=self.notes.count,
                         auto=self.policy.checks is Checks.AUTO)

    # -- judging -------------------------------------------------------------------
    def explained(self, window: Optional[Window] = None) -> bool:
        """A record was written in the window (or detection stopped)."""
        window = window or self.current
        found = window.found if window is not None else self.state.found
        return self.state.found > found or self.stopped()

    def stopped(self) -> bool:
        """Detection stopped for good (``overflow_nums`` reached, or turned off)."""
        return self.state.exhausted or self.checker.disabled

    def on_computation(self, computation: Any) -> None:
        """A gradient computation returned (the gradient watch judged it)."""
        computation.step = self.state.step
        window = self.current
        exact = window is not None and window.kind is Kind.EXACT and not self.stopped() and not computation.nested
        if exact and computation.complete and computation.nonfinite and \
                self.excuse_auxiliary(computation, computation.nonfinite) == computation.nonfinite:
            self.grads.forget_finding(computation)  # a -inf by design returned as an auxiliary output: no overflow
        self.watched.on_computation(computation)
        if exact:
            # a resolution point: what the computation's calls took is read before the caller can refill it (a
            # hunt's finding: a Tensor.from_numpy batch buffer refilled with the next micro-batch was read instead,
            # and the call that took a NaN batch was called the origin); the reads were due before the update.
            # Nothing ran since the watch read the loss and gradients (grads.reads): those reads serve the batch
            # (a gradient a backward hook got is often the one returned), as reads within one batch do
            self.checker.flush(reads=getattr(self.grads, "reads", None))
            if computation.complete and not computation.nonfinite:
                # L0: its loss and gradients are finite, so the code after the model (the loss) took the -inf the
                # model returned into it and turned it finite (check.by_design.ByDesign.returned)
                self.checker.by_design.consume_returned()
        if (computation.nested and computation.complete and computation.nonfinite and window is not None
                and window.kind is Kind.EXACT and not self.stopped()):
            # a gradient of a gradient (a gradient penalty): the inner computation's backward is not checked call
            # by call, so the first call taking its inf/nan was said to get it from outside the window
            self.checker.flush()
            if not self.explained(window) and not window.nested:
                window.nested = self.notes.nested_backward(computation.nonfinite, computation.frames)

    def excuse_auxiliary(self, computation: Any, labels: list) -> list:
        """The labels among ``labels`` (what ``computation``, a gradient
        computation run under exact checks, returned holding inf/nan) that
        are no overflow: all of them, when each is an auxiliary output
        (``has_aux=True``) holding a -inf a checked call or Cell made by
        design, the loss and the gradients being finite (masked logits
        returned for an accuracy read on the host:
        ``check.by_design.ByDesign.auxiliary``), else none. Used for the
        window's computations and for their replays (auto checks)."""
        return self.checker.excused_auxiliary(computation.auxiliary(), labels)

    def on_forward(self, computation: Any) -> None:
        """L0, exact window: a gradient computation's forward pass returned
        (before its backward pass runs). When its output (the loss) holds
        inf/nan and no checked Cell made it, the loss was computed outside
        the Cells given to ``start()`` (a loss Cell ``Model.train`` adds):
        said now, before any backward record, and no backward entry of the
        window is an origin (they all derive from that loss). Every output
        is differentiated, so each is "the loss", unless the computation
        was asked with ``has_aux=True`` (read from MindSpore's frames, as
        the gradient watch learns it only with the gradients:
        :func:`.activity.asked_has_aux`): then only output 0 is, the others
        are auxiliary outputs, not differentiated, and inf/nan in them alone
        is judged with the gradients (an ``outside`` record when the window
        closes, :meth:`_explain`). A Cell's -inf by design that no checked
        call consumed (``check.by_design``) made it instead: its maker is
        recorded, the origin."""
        window = self.current
        if window is None or window.kind is not Kind.EXACT or self.level != "L0" or self.stopped():
            return
        labelled = [(f"forward output {i}", t) for i, t in enumerate(iter_tensors(computation.output))]
        bad = self.grads.judge(labelled)
        if not bad:
            return
        aux = len(labelled) > 1 and asked_has_aux() is True
        if aux and labelled[0][0] not in bad:  # a fresh user's finding: an auxiliary output was called the loss
            return
        self.checker.flush()  # the forward entries of the Cells first: one may have made it
        if self.explained(window) or self.checker.release_by_design(unconsumed=True):
            return  # (a Cell's -inf by design that nothing consumed is the loss's: its maker is the origin)
        self.checker.loss_nonfinite = True
        if not window.nested:  # else the loss took what a nested gradient computation returned: said already
            self.notes.loss(bad, computation.frames, aux=aux)

    def _release_cut_off(self) -> None:
        """The interpreter ends on an uncaught exception (or Ctrl-C,
        ``sys.last_value``) with a window open. A mask nothing took yet (a
        call that writes a -inf it was given: ``masked_fill``, ``pad``,
        ``s[i] = -inf``: :meth:`~probe_runtime.check.by_design.ByDesign.left_checks`)
        was cut off by it, not returned as a result: said, not recorded (a
        fresh user's finding: a shape error raised right after a causal
        ``masked_fill`` was reported as an overflow that started in it).
        Every other maker is recorded as when a window closes: a ``log`` of
        a probability that underflowed, a ``mindspore.jit`` region whose
        overflow gives -inf only, whose value the loop read and raised on
        (a review's finding: "no overflow found" for a real ``exp``
        overflow). What the queue held was judged before this
        (``flush(final=True)``), so a mask whose -inf reached a result is
        recorded still."""
        registry = self.checker.by_design
        cut = [m for m in registry.unconsumed() if registry.left_checks(m, cut_off=True)]
        cut_ids = {id(m) for m in cut}
        self.checker.release_by_design(unconsumed=True, keep=lambda maker: id(maker) not in cut_ids)
        if cut:
            names = ", ".join(getattr(m, "name", "?") for m in cut[:4])
            LOGGER.warning("probe_runtime: step %s ended on an uncaught exception while %d -inf mask(s) written on "
                           "purpose were not used yet (%s): not recorded as overflows", self.state.step, len(cut),
                           names)

    def _sentinel_step(self, optimizer: Any, args: tuple, frames: tuple) -> None:
        """Sentinel checks, after an optimizer call: inf/nan in the
        gradients it got that no gradient computation returned (a fresh
        user's finding: gradients user code made inf after the gradient
        computation were written into the weights and the step said
        nothing; the next step's sentinel named the next step). Only the
        tensors no finite gradient result holds are read (none when the
        gradients are handed on as computed); a finding gets a sentinel
        record and exact checks for good, as a gradient computation's.
        What the update itself makes of finite gradients is not read
        (a copy of every weight a step): the next step's computation
        sees it."""
        given = self._judge_given(optimizer, args)
        if given:
            self.policy.sentinel_found()
            self.notes.sentinel_given(given, type(optimizer).__name__, frames)

    def _resolve_sentinel(self) -> None:
        """Sentinel checks: inf/nan in what the window's gradient
        computations returned gets its record, and exact checks for good."""
        found = self.grads.resolve()
        if found is None:
            if not self.grads.computations and not self._sentinel_empty_said:
                self._sentinel_empty_said = True
                LOGGER.warning("probe_runtime: sentinel checks saw no gradient computation in step %s: they judge "
                               "only what mindspore.grad / value_and_grad compute in PyNative, so forward-only code "
                               "and a training step compiled with mindspore.jit are not checked (use exact checks "
                               "for forward-only code: checks='exact' or PROBE_CHECKS=exact)", self.state.step)
            return
        self.policy.sentinel_found()
        self.notes.sentinel(found)

    def _explain(self, window: Window) -> None:
        """An exact window closed: a gradient computation in it returned
        inf/nan and no record of the window explains it: the overflow lies
        outside what the level checks."""
        if not self.explained(window) and not self.checker.loss_nonfinite:
            written = self.exact.written_state()
            if written:  # L0: state a Cell's own code wrote (ops.batch_norm in a custom construct)
                self.notes.written_inside(written)
                return
            if not window.updated and self.grads.computations and (trained := self.exact.trainables_written()):
                self.notes.written_outside(trained)  # L0: a hand-written update, no optimizer step seen
                return
        findings = self.grads.complete_findings()
        if not findings or self.explained(window) or self.checker.loss_nonfinite:
            return
        if self.checker.release_by_design():  # -inf made by design reached the result: its maker is named
            return
        labels = list(dict.fromkeys(label for c in findings for label in c.nonfinite))
        self.notes.outside(labels, findings[0].frames, aux=any(c.has_aux is True for c in findings))

    # -- around an optimizer step ----------------------------------------------------
    def before_step(self, optimizer: Any, args: tuple, frames: tuple) -> None:
        """An optimizer is about to update its Parameters (every window
        but the sentinel's). When it is first seen, or did not run in the
        last window, its own state and its Parameters are judged: inf/nan
        there, which no record of the window explains, came in with them (a
        resumed checkpoint) or was written in unchecked steps, since no
        checked call wrote it (a fresh finding: a Parameter that held NaN
        from the start and no checked call used, an unused head, got an
        ``update`` record in every step, "the update made it"). In a watched window, its Parameters too
        (:meth:`.watched.WatchedWindow.before_step`). When the window
        already holds a record, its Parameters and state are read before
        the step too, so :meth:`after_step` tells an update that makes
        inf/nan from one that carries what was recorded."""
        window = self.current
        if window is None or window.kind is Kind.SENTINEL:  # it judges only what the optimizer got (after_step)
            return
        window.bad_before = False
        if id(optimizer) not in window.optimizers:
            window.optimizers.add(id(optimizer))
            # its state is read when first seen, and again after a window it did not run in (unchecked steps
            # may have changed it); in a checked window it is read after every step (after_step), with the
            # Parameters: an update can make it inf/nan while they stay finite (Adam's moment2 of a gradient
            # of 2e20 is inf; the weights go NaN only in the next step)
            if id(optimizer) not in self._last_optimizers and not self.stopped() and not self.explained(window):
                bad = self._judge_held(optimizer)  # its Parameters too: one no checked call used
                if bad:
                    window.bad_before = True
                    if id(optimizer) in self._tainted:  # an overflow already recorded wrote it: carried
                        return
                    self.notes.state_at_start(bad, type(optimizer).__name__, frames)
                    self._tainted.add(id(optimizer))
                    self.policy.ask_exact()
                    return
                self._tainted.discard(id(optimizer))  # finite before this step: inf/nan after it is new
        if id(optimizer) in self._tainted and not self.stopped() and not self.explained(window):
            # an earlier record may explain inf/nan in its state or Parameters: read them before the step (only
            # then), so that after_step tells what the step made from what they carried into it
            if not self._judge_held(optimizer):
                self._tainted.discard(id(optimizer))
        self.checker.before_update()  # the calls before the step are judged now (it would, right after this)
        window.found_step = self.state.found  # records from here on are the step's own calls' (after_step)
        if self.explained(window) and not self.stopped():
            # a fresh user's finding: an update that made Adam's moment2 inf in a step that already had an origin
            # (an overflow masked before the loss) lost its record; read what the step starts from, so that
            # after_step tells an update that makes inf/nan from one that carries an overflow recorded before it
            if self._judge_held(optimizer):
                window.bad_before = True
        if window.kind is Kind.WATCHED:
            self.watched.before_step(window, optimizer)

    def carries(self, optimizer: Any) -> bool:
        """An earlier record explains inf/nan in ``optimizer``'s Parameters
        or state (it is tainted): what its steps write is carried."""
        return id(optimizer) in self._tainted

    def _judge_held(self, optimizer: Any) -> list[str]:
        """The labels of the Parameters an optimizer updates and of its own
        state (``"Parameter fc.weight"``, ``"Momentum moments of
        fc.weight"``: ``optimizers.optimizer_state``) that hold inf/nan,
        every one read; labels are made for those only."""
        params = optimizer_parameters(optimizer)
        state = state_parameters(optimizer, params)
        count = len(params)

        def label(i: int) -> str:
            if i < count:
                return f"Parameter {parameter_name(params[i])}"
            return state_label(optimizer, state[i - count], updated_names(params))

        return self.grads.judge_each(params + state, label)

    def _judge_given(self, optimizer: Any, args: tuple) -> list[str]:
        """The labels of the gradients given to an optimizer (``args``) that
        hold inf/nan (``optimizers.labelled_inputs``), those a finite
        gradient result holds not read again; labels are made for those
        only."""
        tensors = list(iter_tensors(list(args)))
        todo = [i for i, t in enumerate(tensors) if not self.grads.known_finite(t)]
        if not todo:
            return []
        params = optimizer_parameters(optimizer)
        return self.grads.judge_each([tensors[i] for i in todo], lambda j: input_label(todo[j], tensors, params))

    def after_step(self, optimizer: Any, args: tuple, frames: tuple) -> None:
        """An optimizer call returned. Unless a gradient computation of the
        window returned inf/nan or the optimizer's own calls were recorded:
        inf/nan in the gradients it got that no gradient computation
        returned is said (``outside``: the code between them made it),
        unless a record of the window explains them (a checked call made
        them); else inf/nan its Parameters or its own state (Adam's
        moments, ``global_step``) hold now, though they and the gradients
        were finite before, is said (``update``), read together in one
        judgement. In every window, so an update that goes inf/nan is
        named in its own step, also when only the state went inf/nan (the
        Parameters turn inf/nan a step later), and also when the step
        already has a record of another overflow. An optimizer whose
        Parameters or state held inf/nan before the step (``bad_before``),
        or whose state held inf/nan an earlier record explains (tainted:
        :meth:`before_step` read it), gets no ``update`` record: what its
        update writes is carried. A sentinel window judges only the
        gradients it got (:meth:`_sentinel_step`)."""
        window = self.current
        if window is None or self.stopped() or window.bad_before:
            return
        if self.grads.findings:
            return
        if window.kind is Kind.SENTINEL:
            self._sentinel_step(optimizer, args, frames)
            return
        self.checker.flush()  # calls the optimizer made (a PyNative update) explain it first
        if self.state.found > window.found_step:
            return
        given = self._judge_given(optimizer, args)
        name = type(optimizer).__name__
        if given:
            if self.explained(window):  # a checked call recorded in the window made them: carried
                return
            if self.exact.cells.holding():  # L0: the model whose call runs made them; its record comes at its return
                return
            if window.kind is Kind.WATCHED and self.state.rank is not None:  # maybe a collective's: no origin here
                self.notes.given_unseen(given, name, frames)
            else:
                self.notes.given(given, name, frames)
        else:
            held = self._judge_held(optimizer)
            if not held:
                self._tainted.discard(id(optimizer))  # finite now: inf/nan in it later is new
                return
            if id(optimizer) in self._tainted:  # its state held inf/nan before the step: carried into them
                return
            self.notes.update(held, name, frames, state_only=not any(label.startswith("Parameter ")
                                                                      for label in held))
            self._tainted.add(id(optimizer))  # its next steps carry it (also in this window)
        self.policy.ask_exact()


def _same_model(model: Any, other: Any) -> bool:
    """``start()`` got the same model: the same object, or lists/tuples of
    the same objects (``start([net, loss_fn])`` builds a new list each time)."""
    if model is other:
        return True
    return (isinstance(model, (list, tuple)) and isinstance(other, (list, tuple)) and len(model) == len(other)
            and all(a is b for a, b in zip(model, other)))
