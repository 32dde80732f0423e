"""The records that name no call: what the windows say when no checked call
or Cell explains an inf/nan.

Each is one ``overflow.json`` record of a note kind
(``probe_format.layout.NOTE_KINDS``: ``sentinel``, ``outside``,
``update``), written by ``check.records.Records.note`` with ``origin``
false, ``where`` (the user's line) and ``nonfinite`` (the labels of what
held inf/nan). They do not count towards ``overflow_nums``. ``docs/checks.md`` lists when each is
written.

Example::

    notes = Notes(checker.records, level="L1")
    notes.outside(["forward output 0"], computation.frames)   # "... the overflow lies outside ..."
    notes.count                                                # 1
"""
from __future__ import annotations

from typing import Any, Optional

from probe_format.layout import OUTSIDE, SENTINEL, UPDATE

from ..check.records import shown_labels


class Notes:
    """Writes the records that name no call, and counts them.

    Args:
        records: the checker's ``Records`` (``note``, ``note_sentinel``, ``where``).
        level: ``"L0"`` or ``"L1"`` (the wording: a checked Cell or call).

    Attributes:
        count: notes written so far.
    """

    def __init__(self, records: Any, level: str) -> None:
        self.records = records
        self.level = level
        self.count = 0

    @property
    def _checked(self) -> str:
        return "Cell" if self.level == "L0" else "call"

    def _write(self, kind: str, labels: list, where: Optional[str], message: str) -> bool:
        written = bool(self.records.note(kind, labels, where, message))
        self.count += written
        return written

    def sentinel(self, found: dict) -> bool:
        """Sentinel checks found inf/nan in a gradient computation's result
        (``GradWatch.resolve``)."""
        written = bool(self.records.note_sentinel(found))
        self.count += written
        return written

    def fall_back(self, computation: Any, reason: str, labels: Optional[list] = None) -> bool:
        """Auto checks could not name the call (``reason``): a sentinel
        record saying why; exact checks run from the next ``start()`` on
        (the caller tells the policy)."""
        where = self.records.where(computation.frames)
        source = "returned by" if not labels or labels is computation.nonfinite else "used by"
        labels = labels or computation.nonfinite
        message = (f"inf/nan in {shown_labels(labels)}, {source} the gradient computation at {where}; "
                   f"{reason}: exact {self.level} checks run from the next start() on")
        return self._write(SENTINEL, labels, where, message)

    def masked(self, labels: list, computation: Any) -> bool:
        """Parameters held inf/nan before an optimizer step, the window's
        gradient computations returned finite values, and no checked call
        or Cell used them with inf/nan (auto checks' replay)."""
        where = self.records.where(computation.frames)
        message = (f"{shown_labels(labels)} held inf/nan before the optimizer step, although the gradient "
                   f"computation at {where} returned finite values and no checked {self._checked} used it with "
                   "inf/nan: it was written outside the checked windows, or is not used by the computation")
        return self._write(OUTSIDE, labels, where, message)

    def outside(self, labels: list, frames: tuple, aux: bool = False) -> bool:
        """A gradient computation returned inf/nan that no checked call or
        Cell explains: where to look instead. ``aux``: it was asked with
        ``has_aux=True`` (its forward output 0 is the loss, the others are
        auxiliary outputs, not differentiated)."""
        where = self.records.where(frames)
        if self.level == "L0":
            # a fresh user's finding: a float16 gather in the model's own construct made the gradient of a
            # Parameter the model owns itself, and this said only "in the loss function"
            outside = ("the checked Cells: in the loss function or other code outside the model, or in the model's "
                       "own construct between its sub-Cells (a Parameter the model owns itself gets its gradient "
                       "there): use level L1, or pass the loss Cell to start() too, e.g. start([net, loss_fn])")
        else:
            outside = ("the calls level L1 checks (code compiled with mindspore.jit, a Cell run as one graph, or "
                       "the inside of one kernel)")
        message = (f"inf/nan in {shown_labels(labels)}, returned by the gradient computation at {where}, and no "
                   f"checked {self._checked} made it: the overflow lies outside {outside}")
        if aux and any(label.startswith("forward output ") and label != "forward output 0" for label in labels):
            message += ("; it was asked with has_aux=True: forward output 0 is the loss, the others are auxiliary "
                        "outputs, returned but not differentiated")
        return self._write(OUTSIDE, labels, where, message)

    def nested_backward(self, labels: list, frames: tuple) -> bool:
        """A gradient computation run inside another's forward pass (a
        gradient of a gradient: a gradient penalty, MAML) returned inf/nan,
        and no checked call or Cell made it: its own backward pass, which
        gets forward checks only (``docs/checks.md``), made it."""
        where = self.records.where(frames)
        message = (f"inf/nan in {shown_labels(labels)}, returned by the gradient computation at {where}, which ran "
                   f"inside another gradient computation's forward pass (a gradient of a gradient), and no checked "
                   f"{self._checked} made it: the overflow started in its backward pass, which is checked only as a "
                   "whole (what it returns), not call by call; calls that take its result carry it")
        return self._write(OUTSIDE, labels, where, message)

    def written_inside(self, written: list) -> bool:
        """L0: state of the models given to ``start()`` that no Cell check
        reads (a Parameter without gradient, a buffer, or a Parameter of a
        Cell whose code calls a function that writes its arguments, as
        ``ops.batch_norm`` does) was finite at ``start()`` and held inf/nan
        when the window closed, and no record explains it
        (``l0.state_sweep``): written in place by code inside its owner,
        most likely, which returned finite values."""
        labels = [f"Parameter {name}" for name, _ in written]
        owners = list(dict.fromkeys(owner for _, owner in written))
        message = (f"{shown_labels(labels)} of {', '.join(owners)} held inf/nan when the window closed, although "
                   "it was finite at start() and no record of the window explains it: it was written in place in the "
                   f"window, most likely by the own code of {', '.join(owners)} (a function that writes its "
                   "arguments, as ops.batch_norm or F.batch_norm in training writes its running statistics: a batch "
                   "of one leaves nan in the running variance); use level L1 to name the call")
        return self._write(OUTSIDE, labels, None, message)

    def written_outside(self, written: list) -> bool:
        """L0: trainable Parameters of the checked Cells were finite at
        ``start()`` and held inf/nan when a window that computed gradients,
        with no optimizer step, closed, and no record explains it: code
        outside the Cells wrote them (a hand-written update, gradients
        accumulated there)."""
        labels = [f"Parameter {name}" for name, _ in written]
        owners = list(dict.fromkeys(owner for _, owner in written))
        were, it = ("were", "they") if len(labels) > 1 else ("was", "it")
        message = (f"{shown_labels(labels)} of {', '.join(owners)} held inf/nan when the window closed, although "
                   f"{it} {were} finite at start() and no record of the window explains it: code outside the checked "
                   f"Cells wrote {'them' if len(labels) > 1 else 'it'}, with no optimizer step in the window (a "
                   "hand-written update such as "
                   "p.copy_(p - lr * p.grad) or ops.assign, or gradients accumulated there that overflowed); use "
                   "level L1 to name the call")
        return self._write(OUTSIDE, labels, None, message)

    def loss(self, labels: list, frames: tuple, aux: bool = False) -> bool:
        """L0: a gradient computation's forward output (the loss) held
        inf/nan before its backward pass, and no checked Cell made it.
        ``aux``: it was asked with ``has_aux=True``: output 0 (the first of
        ``labels``) is the loss, the other outputs are named as auxiliary;
        else every output is differentiated, each one the loss."""
        where = self.records.where(frames)
        shown = (shown_labels([f"{labels[0]} (the loss)", *labels[1:]]) if aux
                 else f"{shown_labels(labels)} (the loss)")
        message = (f"inf/nan in {shown} of the gradient computation at {where}, before "
                   "its backward pass, and no checked Cell made it: the loss was computed outside the Cells given "
                   "to start() (a loss function or loss Cell, as Model.train adds one); use level L1, or pass the "
                   "loss Cell to start() too, e.g. start([net, loss_fn])")
        return self._write(OUTSIDE, labels, where, message)

    def given(self, labels: list, optimizer: str, frames: tuple) -> bool:
        """An optimizer got inf/nan gradients that no gradient computation
        returned and no checked call made (an unscale, a clip between them)."""
        where = self.records.where(frames)
        message = (f"inf/nan in {shown_labels(labels)} given to the optimizer {optimizer} at {where}, which no "
                   "gradient computation returned and no checked call made: the code between them (an unscale, "
                   "a clip) made it")
        return self._write(OUTSIDE, labels, where, message)

    def given_unseen(self, labels: list, optimizer: str, frames: tuple) -> bool:
        """Auto checks in a job of several ranks: an optimizer got inf/nan
        gradients that no gradient computation returned. The code between
        them is not watched, and it may hold a collective (the gradient
        AllReduce of data parallelism) that brought another rank's inf/nan:
        the record says so and claims no origin on this rank (a fresh
        user's finding: the ``outside`` record said an unscale or a clip on
        rank 0 made what rank 1's ``exp`` made). Kind ``outside``, as the
        single-process record: ``probe report`` then names another rank's
        origin of the step first. Exact checks run from the next
        ``start()`` on (the caller tells the policy)."""
        where = self.records.where(frames)
        message = (f"inf/nan in {shown_labels(labels)} given to the optimizer {optimizer} at {where}, which no "
                   "gradient computation returned: the code between them made it or brought it from another rank "
                   "(a collective, such as the gradient AllReduce of data parallelism); auto checks do not see that "
                   f"code: exact {self.level} checks run from the next start() on")
        return self._write(OUTSIDE, labels, where, message)

    def sentinel_given(self, labels: list, optimizer: str, frames: tuple) -> bool:
        """Sentinel checks: an optimizer got inf/nan gradients that no
        gradient computation returned (an unscale, a clip between them made
        them); the record names no call, exact checks run from the next
        ``start()`` on (the caller tells the policy)."""
        where = self.records.where(frames)
        message = (f"inf/nan in {shown_labels(labels)} given to the optimizer {optimizer} at {where}, which no "
                   "gradient computation returned: the code between them (an unscale, a clip) made it; sentinel "
                   f"checks name no call: exact {self.level} checks run from the next start() on")
        return self._write(SENTINEL, labels, where, message)

    def update(self, labels: list, optimizer: str, frames: tuple, state_only: bool = False) -> bool:
        """Parameters (or the optimizer's own state: ``"Adam moment2 of
        fc.bias"``) held inf/nan right after an optimizer step though they
        and the gradients were finite before it: the update made it.
        ``state_only``: only the state did (the Parameters are finite)."""
        where = self.records.where(frames)
        message = (f"{shown_labels(labels)} held inf/nan right after the optimizer step {optimizer} at {where}, "
                   "although it and the gradients it got were finite before: the update made it")
        if state_only:
            message += (" (in the optimizer's own state; the Parameters it updates are still finite, until a later "
                        "step uses that state)")
        return self._write(UPDATE, labels, where, message)

    def state_at_start(self, labels: list, optimizer: str, frames: tuple) -> bool:
        """The optimizer's own state (Adam's moments, accumulators,
        ``global_step``) or a Parameter it updates held inf/nan when it was
        first seen, and no checked call used it: it came in with them (a
        checkpoint resumed, an earlier run or unchecked steps)."""
        where = self.records.where(frames)
        message = (f"{shown_labels(labels)} held inf/nan before the first optimizer step {optimizer} of this "
                   f"window (at {where}): it was there at start() (a resumed checkpoint, or written outside the "
                   "checked steps), not made by a checked call")
        return self._write(OUTSIDE, labels, where, message)
