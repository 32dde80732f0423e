"""Auto checks: the state a gradient computation writes in place.

A watched window (auto checks) judges what each gradient computation
returns: its forward output and its gradients. A Parameter that the forward
pass writes in place and that is neither returned nor differentiated, such
as the moving statistics of a training ``BatchNorm`` (a 1-sample batch makes
its unbiased variance 0/0), can turn inf/nan while all of those stay
finite. :class:`StateWatch` learns, for each differentiated function, the
Parameters its Cells may write (``check.writable.writable_parameters``),
copies them when a watched window starts, and judges them when a
computation of that function returns; one that turned inf/nan in the window
sends the computation to a replay, which starts from the copies, so the call
or Cell that wrote it is named as exact checks name it. The cost is a copy
of those Parameters per watched window and one more finite check per
computation; a function whose Cells hold no such state costs one walk of
its references, once.
"""

from __future__ import annotations

from typing import Any, Callable

from ..check.writable import writable_parameters
from ..hooks.guard import tool_section
from ..hooks.reach import reachable_cells

#: how many differentiated functions are remembered (a new lambda every step must not grow it)
MAX_FUNCTIONS = 8


class StateWatch:
    """The state Parameters of the gradient computations of a run.

    Args:
        judge: ``GradWatch.judge``: (label, tensor) pairs -> the labels of
            those holding inf/nan.
    """

    def __init__(self, judge: Callable[[list], list]) -> None:
        self.judge = judge
        self._known: dict[int, tuple[Any, list]] = {}  # id(fn) -> (fn, [(label, Parameter)])
        self._start: dict[int, tuple[Any, Any]] = {}  # id(Parameter) -> (Parameter, its copy at start())

    def learn(self, fn: Any) -> list:
        """The state Parameters of ``fn`` (a differentiated function or
        Cell) as ``[("Parameter bn.moving_variance", Parameter), ...]``,
        found once per function (:func:`state_parameters`)."""
        entry = self._known.get(id(fn))
        if entry is not None and entry[0] is fn:
            return entry[1]
        with tool_section():
            params = state_parameters(fn)
        self._known[id(fn)] = (fn, params)
        while len(self._known) > MAX_FUNCTIONS:
            del self._known[next(iter(self._known))]
        return params

    def begin_window(self) -> None:
        """A watched window starts: copy the state Parameters of every
        function seen so far (device copies, ``ops.deepcopy``)."""
        from mindspore import ops

        self._start = {}
        with tool_section():
            for _, params in self._known.values():
                for _, param in params:
                    if id(param) not in self._start:
                        self._start[id(param)] = (param, ops.deepcopy(param))

    def end_window(self) -> None:
        """Let go of the copies."""
        self._start = {}

    def turned_nonfinite(self, fn: Any) -> list[str]:
        """The labels of ``fn``'s state Parameters that hold inf/nan now
        and did not when the window started (or were not copied then: a
        function new in this window)."""
        params = self.learn(fn)
        if not params:
            return []
        bad = self.judge(params)
        if not bad:
            return []
        by_label = dict(params)
        out = []
        for label in bad:
            start = self._start.get(id(by_label[label]))
            if start is None or not self.judge([(label, start[1])]):
                out.append(label)
        return out

    def start_values(self) -> list[tuple[Any, Any]]:
        """(Parameter, its copy at the window's start) pairs, for a replay."""
        return list(self._start.values())


def state_parameters(fn: Any) -> list[tuple[str, Any]]:
    """The Parameters that the forward pass of ``fn`` may write in place:
    for every Cell reachable from ``fn`` (``replay.reachable_cells``) and
    each of its sub-Cells, ``writable_parameters``; labelled
    ``"Parameter <name>"``, each once, in the order found."""
    out: dict[int, tuple[str, Any]] = {}
    for root in reachable_cells([fn]):
        for _, cell in root.cells_and_names():
            own = {key.split(".")[-1]: value for key, value in cell.parameters_dict(recurse=False).items()}
            for param in writable_parameters(cell, own).values():
                out.setdefault(id(param), (f"Parameter {getattr(param, 'name', '?')}", param))
    return list(out.values())
