"""The state a compiled step changes, copied to reused host buffers
before the step and put back before its replay.

A compiled training step (a ``TrainOneStepCell``, the network of
``Model.train``) updates its Parameters and the optimizer's state (moments,
``global_step``) in place; all of them are Parameters of the Cell called.
:class:`StateSnapshot` copies them into host buffers allocated once (the
same buffers every step) and writes them back with ``ops.assign``: after a
compiled graph ran, ``Parameter.set_data`` no longer reaches the graph's
copy (measured on MindSpore 2.7.0 and 2.10.0, CPU).

Example::

    snapshot = StateSnapshot(train_cell)
    snapshot.take()
    loss = train_cell(x, y)
    if snapshot.nonfinite():      # ["fc1.weight", ...]: Parameters holding inf/nan now
        snapshot.restore()        # the values before the step
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np


class StateSnapshot:
    """Host copies of the floating Parameters of ``cell`` (and every
    Parameter, integer ones too, so a step counter is put back).

    Args:
        cell: a ``mindspore.nn.Cell``, or None.
        extra: ``(name, Parameter)`` pairs the step may write besides the
            Cell's own (:func:`foreign_parameters`); each Parameter once.

    Attributes:
        skipped: names of Parameters that cannot be copied to the host
            (a dtype numpy lacks, such as bfloat16); not restored.
    """

    def __init__(self, cell: Any, extra: Any = ()) -> None:
        self._entries: list[tuple[str, Any, np.ndarray]] = []
        self.skipped: list[str] = []
        pairs = list(cell.parameters_and_names()) if cell is not None else []
        seen = {id(parameter) for _, parameter in pairs}
        for name, parameter in extra:
            if id(parameter) not in seen:
                seen.add(id(parameter))
                pairs.append((name, parameter))
        for name, parameter in pairs:
            try:
                host = parameter.asnumpy()
            except Exception:
                self.skipped.append(name)
                continue
            self._entries.append((name, parameter, np.empty_like(host)))

    def __len__(self) -> int:
        return len(self._entries)

    def parameters(self) -> list[tuple[str, Any]]:
        """(name, Parameter) of each Parameter copied."""
        return [(name, parameter) for name, parameter, _ in self._entries]

    def take(self) -> None:
        """Copy every Parameter's current value into its buffer."""
        for _, parameter, buffer in self._entries:
            np.copyto(buffer, parameter.asnumpy())

    def nonfinite(self) -> list[str]:
        """Names of the floating Parameters holding inf/nan now, but for
        masks by design (:func:`by_design`): a frozen Parameter's -inf is
        one only where it held -inf when :meth:`take` ran too (a finite
        value the step turned into -inf is an overflow)."""
        found = []
        for name, parameter, buffer in self._entries:
            if buffer.dtype.kind == "f":
                values = parameter.asnumpy()
                if not np.isfinite(values).all() and not by_design(parameter, values, before=buffer):
                    found.append(name)
        return found

    def taken_nonfinite(self) -> list[str]:
        """Names of the Parameters that held inf/nan when :meth:`take` ran
        (masks by design left out)."""
        return [name for name, parameter, buffer in self._entries
                if buffer.dtype.kind == "f" and not np.isfinite(buffer).all() and not by_design(parameter, buffer)]

    def taken_finite(self) -> bool:
        """Every floating Parameter was finite when :meth:`take` ran, masks
        by design included (a frozen Parameter's -inf counts here)."""
        return all(buffer.dtype.kind != "f" or np.isfinite(buffer).all() for _, _, buffer in self._entries)

    @classmethod
    def like(cls, other: "StateSnapshot") -> "StateSnapshot":
        """A snapshot of the same Parameters as ``other`` (new buffers)."""
        return cls(None, other.parameters())

    def restore(self) -> None:
        """Put the values of the last :meth:`take` back (``ops.assign``)."""
        from mindspore import Tensor, ops

        for _, parameter, buffer in self._entries:
            ops.assign(parameter, Tensor(buffer.copy()))


def by_design(parameter: Any, values: np.ndarray, before: Optional[np.ndarray] = None) -> bool:
    """A Parameter no optimizer writes (``requires_grad`` False) whose
    non-finite values are -inf only: a mask kept as a Parameter (a causal
    attention mask, ``triu`` of -inf), as L0 and L1 treat a frozen
    Parameter's -inf (``check.probes.probe_now``). NaN or +inf there, or
    -inf in a trainable Parameter, is no mask. A hunt's finding: such a mask
    made every step "held inf/nan before the compiled step", so no step
    was checked and the real overflow was never named.

    ``before``: its values before the step that left ``values``; then each
    -inf must have been -inf before it too (a mask kept as a Parameter is
    -inf from the start). A hunt's finding: a frozen running statistic
    that a step overflowed from finite to -inf (``ops.assign``) was taken
    for a mask, and the run ended in "no overflow found"."""
    if getattr(parameter, "requires_grad", True) is not False:
        return False
    flat = values.reshape(-1)
    if bool(np.isnan(flat).any()) or bool(np.isposinf(flat).any()):
        return False
    if before is None:
        return True
    if before.shape != values.shape:
        return False
    return bool(np.isneginf(before)[np.isneginf(values)].all())


def foreign_parameters(cell: Any, args: tuple, kwargs: dict,
                       reached: Optional[list] = None) -> list[tuple[str, Any]]:
    """``(name, Parameter)`` of the Parameters a compiled step of ``cell``
    may write although ``cell`` does not own them: those its arguments
    hold, and those the ``construct`` of ``cell`` or of a Cell in it
    reaches (module-level ones it names, or that a function it calls
    names: :func:`~probe_runtime.hooks.reach.reachable_parameters`), such
    as a counter updated with ``ops.assign_add`` in the user's network
    inside a ``TrainOneStepCell``. Hunts' findings: the replay of an
    overflowing step updated them a second time, since only the Cell's
    own Parameters were put back. Parameters reached only through
    ``self`` attributes that are not Cells (a plain object holding one)
    are not found.

    ``reached``: what :func:`construct_parameters` gave for ``cell``
    (kept by the caller: the walk is the same every step)."""
    from ..hooks.reach import reachable_parameters

    if reached is None:
        reached = construct_parameters(cell)
    candidates = reachable_parameters([*args, *kwargs.values()]) + reached
    if not candidates:
        return []
    seen = {id(parameter) for _, parameter in cell.parameters_and_names()}
    found = []
    for parameter in candidates:
        if id(parameter) not in seen:
            seen.add(id(parameter))
            found.append((parameter.name, parameter))
    return found


def construct_parameters(cell: Any) -> list:
    """The Parameters the ``construct`` of ``cell``, or of any Cell in it,
    reaches through the names its code uses (the walk of
    :func:`~probe_runtime.hooks.reach.reachable_parameters`); ``self``'s
    own are not among them unless a global names them."""
    from ..hooks.reach import reachable_parameters

    try:
        cells = [c for _, c in cell.cells_and_names()]  # the user's network inside a TrainOneStepCell too
    except Exception:
        cells = [cell]
    constructs = [getattr(klass, "construct", None) for klass in dict.fromkeys(type(c) for c in cells)]
    return reachable_parameters([c for c in constructs if callable(c)])
