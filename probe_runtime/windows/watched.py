"""The watched window of auto checks: a replay when a gradient computation
returns inf/nan, before its caller gets the gradients.

In a watched window only the gradient computations are watched
(``probe_runtime.grad.watch``). :class:`WatchedWindow` decides what each
one's result starts:

* inf/nan in what a computation returned: the window's computations not
  run again yet (ending with this one) run again at once under exact
  checks (``probe_runtime.grad.replay``), so its records name the call or
  Cell as exact checks would have in that step;
* a finite result whose function's state Parameters turned inf/nan (a
  training ``BatchNorm``'s moving variance): the same replay;
* Parameters holding inf/nan right before an optimizer step, though the
  computations returned finite values (masked on the way): the same
  replay, looking for the calls that used them;
* at the window's close, inf/nan no replay covered (a computation nested
  in another, a forward pass whose gradients never came): a ``sentinel``
  note saying why, and exact checks in the next window.

Every record it cannot name a call for is written by :mod:`.notes`; what
auto checks do not see is in ``docs/checks.md``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from probe_format.layout import REPLAY

from ..check.names import parameter_name
from .optimizers import optimizer_parameters
from .policy import Checks, Kind

LOGGER = logging.getLogger("probe_runtime")


class WatchedWindow:
    """What a watched window does with what the watches hand on.

    Args:
        windows: the :class:`~.controller.Windows` it belongs to (its parts,
            policy, notes and open window).
        replayer: called once, with ``(originals, judge, distributed,
            excuse)``, to build the ``Replayer`` when the first replay runs.
    """

    def __init__(self, windows: Any, replayer: Callable[..., Any]) -> None:
        self.windows = windows
        self._make_replayer = replayer
        self._replayer: Any = None
        self._empty_said = False
        self._replaying = False

    # -- a gradient computation returned ------------------------------------------------
    def on_computation(self, computation: Any) -> None:
        """Judge a returned computation's state (auto checks, every
        window) and, in a watched window, replay one that returned inf/nan.
        One nested in another is left to the outer one's replay, which runs
        it too; what no replay covers is said when the window closes."""
        w = self.windows
        if self._replaying:  # run by the replay itself (one nested in the computation replayed): checked by it
            return
        if w.policy.checks is Checks.AUTO and computation.complete and not computation.nested:
            self._judge_state(computation)
        if not computation.nonfinite or w.kind is not Kind.WATCHED or w.stopped():
            return
        if computation.complete and not computation.nested:
            self.replay(computation)

    def _judge_state(self, computation: Any) -> None:
        """Learn the state Parameters of the computation's function (every
        window) and, in a watched window where it returned finite values,
        judge them: one that turned inf/nan is what it got wrong."""
        w = self.windows
        try:
            if w.kind is not Kind.WATCHED or computation.nonfinite or w.stopped():
                w.states.learn(computation.fn)
                return
            turned = w.states.turned_nonfinite(computation.fn)
        except Exception as err:  # a Cell without MindSpore's usual attributes
            w.checker.on_error("while judging the state Parameters of a gradient computation", err)
            return
        if turned:
            computation.nonfinite = turned
            w.grads.add_finding(computation)

    # -- before an optimizer step -------------------------------------------------------
    def before_step(self, window: Any, optimizer: Any) -> None:
        """The window's computations returned finite values: Parameters
        holding inf/nan now were masked on the way to the loss and the
        gradients, which exact checks would have recorded where they were
        used; so the computations run again under exact checks."""
        w = self.windows
        if w.stopped() or w.grads.findings or w.explained(window) or not w.grads.window:
            return
        params = optimizer_parameters(optimizer)
        bad = w.grads.judge([(f"Parameter {parameter_name(p)}", p) for p in params])
        if bad:
            window.bad_before = True
            if w.carries(optimizer):  # an earlier record said its Parameters or state held inf/nan
                return
            self.replay(w.grads.window[-1], masked=bad)

    # -- the replay -----------------------------------------------------------------------
    def replay(self, computation: Any, masked: Optional[list] = None) -> None:
        """Run the window's gradient computations not run again yet (ending
        with ``computation``) under exact checks, then say what the replay
        found when its records do not. ``masked``: the labels of Parameters
        found holding inf/nan before an optimizer step although the
        computations returned finite values."""
        w = self.windows
        window = w.current
        assert window is not None
        waiting = [c for c in w.grads.window if id(c) not in window.replayed]
        if not waiting or waiting[-1] is not computation:
            waiting = [computation]
        pending = [c for c in waiting if not c.nested] or [computation]  # a nested one runs inside its outer one
        missing = w.grads.computations - len(window.replayed) - len(waiting)
        if missing > 0:  # their calls were never counted: the replay's call indices would not be the step's
            self.fall_back(computation, f"{missing} earlier gradient computation(s) of this step are not held for "
                           "a replay (gradient accumulation past the computations a window holds), so the replay "
                           "could not number its calls as the step does", masked or computation.nonfinite)
            return
        records = w.checker.records
        found = w.state.found
        records.marks = {REPLAY: records.where(computation.frames)}
        # A helper's finding: a gradient of a gradient, replayed, ran the inner computation again, which came
        # back inf/nan as a computation of its own and was replayed in turn, again and again (20 origins for
        # one sqrt, and a false "not held for a replay" note). What the replay runs is not the step's: it
        # starts no replay, and the watch forgets it afterwards.
        held = (w.grads.computations, list(w.grads.window), list(w.grads.findings))
        self._replaying = True
        try:
            if self._replayer is None:  # made once: it keeps its plan of guards
                self._replayer = self._make_replayer(w.grads.originals, w.grads.judge,
                                                     distributed=w.state.rank is not None,
                                                     excuse=w.excuse_auxiliary)
            outcome = self._replayer.run(pending, open_checks=self._open, close_checks=self._close,
                                         model=window.model, start_values=w.states.start_values())
        finally:
            self._replaying = False
            w.grads.computations, w.grads.window[:], w.grads.findings[:] = held[0], held[1], held[2]
            records.marks = {}
            window.replayed.update(id(c) for c in waiting)
        labels = masked or computation.nonfinite
        if outcome.refused:
            self.fall_back(computation, f"its replay stopped before {outcome.refused}: a replay never issues a "
                           "collective", labels)
        elif outcome.error:
            self.fall_back(computation, f"running it again failed ({outcome.error})", labels)
        elif w.state.found > found or w.stopped():
            return
        elif masked:
            w.policy.ask_exact()
            w.notes.masked(masked, computation)
        elif outcome.nonfinite:
            w.notes.outside(computation.nonfinite, computation.frames)
        elif outcome.excused and set(computation.nonfinite) <= set(outcome.excused):
            # its only inf/nan is a -inf by design returned as an auxiliary output (masked logits for a metric),
            # beside a finite loss and finite gradients: no overflow (before: an outside record in every
            # watched step)
            w.grads.forget_finding(computation)
        else:
            self.fall_back(computation, "running it again under exact checks did not reproduce it (random ops "
                           "with their own state, a nondeterministic kernel, or inputs changed in place since)")

    def _open(self) -> None:
        w = self.windows
        window = w.current
        w.exact.open(window.model if window is not None else None)
        if window is not None and window.updated:  # Parameters were updated earlier in the window
            w.exact.forget_probes()

    def _close(self) -> None:
        try:
            self.windows.checker.flush(final=True)
            # the replay's deferred makers whose -inf no replayed call consumed: the code after it takes the
            # step's own tensors, never the replay's, so nothing can consume them later; recorded now, before
            # the replay's outcome is said (a review's finding: a jit head's -inf returned as an auxiliary output
            # got an "outside" record first, and exact checks' first record was the head's kernel)
            self.windows.checker.release_by_design(unconsumed=True)
        finally:
            self.windows.exact.close()

    def fall_back(self, computation: Any, reason: str, labels: Optional[list] = None) -> None:
        """Auto checks could not name the call: the sentinel note, saying
        why, and exact checks in the next window."""
        self.windows.policy.ask_exact()
        self.windows.notes.fall_back(computation, reason, labels)

    # -- the window closed -----------------------------------------------------------------
    def cover(self, window: Any) -> None:
        """A watched window closed: inf/nan that no replay covered gets the
        sentinel note saying why. One that computed no gradients (an
        evaluation step after a training step) checked nothing: said once."""
        w = self.windows
        if not w.grads.computations and not self._empty_said:
            self._empty_said = True
            LOGGER.warning(f"probe_runtime: step {w.state.step} computed no gradients, so auto checks, which watch "
                           "gradient computations after the first step, checked nothing in it (evaluation or "
                           "forward-only code); every checked step after one without gradients runs exact checks, "
                           "and checks='exact' (PROBE_CHECKS=exact) checks every step")
        if not w.grads.findings or w.explained(window) or w.notes.count > window.notes:
            return
        first = w.grads.findings[0]
        if first.nested:
            reason = "it ran inside another gradient computation, which is not run again on its own"
        else:
            reason = "its gradients were never computed (a forward pass alone), so it cannot be run again"
        self.fall_back(first, reason)
