"""L0: the state a Cell's own code may write in place, read once per window.

L0 reads a Cell's Parameters after each of its calls only where it knows
they are written (``check.writable``: a normalisation Cell, a Cell holding
a Primitive that writes its inputs): reading every frozen weight after
every call would cost a copy of a frozen backbone at each call. But a
custom Cell's ``construct`` can write its own state through a function
(``ops.batch_norm(x, self.rm, self.rv, ..., training=True)`` updates
``rm`` and ``rv``; a batch of one writes nan into ``rv``) while everything
it returns stays finite: a fresh review got "no overflow found" with
``rv`` nan. So :class:`StateSweep` probes, when the window opens, every
floating tensor of the models given to ``start()`` that no optimizer
writes (a Parameter without gradient, a Module's buffer) and every own
Parameter of a Cell (Module) whose ``construct`` (``forward``) names a
function that writes its arguments (:data:`WRITING_FUNCTIONS`), and
probes them again when the window closes. One that was finite at
``start()`` and holds inf/nan then, in a window with no record, gets an
``outside`` note naming it and its owner (``windows.controller``): no
false all-clear. Cost: one finiteness probe of that state at each end of
the window (``docs/checks.md`` gives the measurement).

Example::

    sweep = StateSweep()
    sweep.begin(net, modules=False, probe=probe_now)   # start()
    ...
    sweep.changed(HostCache())    # [("rv", "Cell.Net")] once rv went nan
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..check.names import parameter_name
from ..check.verdict import HostCache, is_floating
from .plan import models

#: functions whose call writes some of their tensor arguments in place
#: besides returning a result (``l1.namespaces.FUNCTION_WRITES`` and
#: ``TORCH_WRITES``): a Cell whose code names one may write its trainable
#: Parameters too (mindtorch's CPU ``batch_norm`` writes ``weight``/``bias``)
WRITING_FUNCTIONS = frozenset({"batch_norm"})

#: class -> whether its construct/forward names a writing function
_WRITERS: dict[type, bool] = {}


def names_writer(cell: Any, modules: bool) -> bool:
    """``cell``'s class's ``construct`` (a Module's ``forward``) names a
    function of :data:`WRITING_FUNCTIONS` (``ops.batch_norm``,
    ``F.batch_norm``); read from its code object, once per class."""
    klass = type(cell)
    known = _WRITERS.get(klass)
    if known is None:
        function = getattr(klass, "forward" if modules else "construct", None)
        code = getattr(getattr(function, "__wrapped__", function), "__code__", None)
        known = _WRITERS[klass] = bool(code is not None and WRITING_FUNCTIONS.intersection(code.co_names))
    return known


def watched_state(model: Any, modules: bool) -> list[tuple[str, str, Any]]:
    """``(name, owner, tensor)`` of the state :class:`StateSweep` reads:
    the floating Parameters without gradient and buffers of ``model``'s
    Cells (Modules), and all own Parameters of those whose code names a
    writing function; ``owner``: ``Cell.<path>.<Class>`` as L0 names the
    Cell (the model itself: ``Cell.<Class>``). Each tensor once."""
    found: list[tuple[str, str, Any]] = []
    seen: set[int] = set()
    kind = "Module" if modules else "Cell"
    for index_prefix, root in models(model, modules):
        pairs = root.named_modules() if modules else root.cells_and_names()
        for path, cell in pairs:
            owner = f"{kind}.{index_prefix}{path + '.' if path else ''}{type(cell).__name__}"
            writer = names_writer(cell, modules)
            if modules:
                items = [(n, t, False) for n, t in cell.named_parameters(recurse=False)]
                items += [(n, t, True) for n, t in cell.named_buffers(recurse=False)]
            else:
                items = [(n.split(".")[-1], t, False) for n, t in cell.parameters_dict(recurse=False).items()]
            for short, tensor, buffer in items:
                if tensor is None or id(tensor) in seen or not is_floating(tensor):
                    continue
                if buffer or writer or getattr(tensor, "requires_grad", True) is False:
                    seen.add(id(tensor))
                    found.append((parameter_name(tensor, short), owner, tensor))
    return found


class StateSweep:
    """Probes the state :func:`watched_state` selects when a window opens
    and when it closes (see the module's docstring). Never raises."""

    def __init__(self) -> None:
        self._items: list[tuple[str, str, Any, Any]] = []  # (name, owner, tensor, probe at start())
        self._probe: Optional[Callable[[Any], Any]] = None

    def begin(self, model: Any, modules: bool, probe: Callable[[Any], Any]) -> None:
        """The window opens (L0 ``install``): probe the state now
        (``probe``: ``probe_now`` or ``launch_sum``)."""
        self._items, self._probe = [], probe
        try:
            self._items = [(name, owner, tensor, probe(tensor))
                           for name, owner, tensor in watched_state(model, modules)]
        except Exception:  # an unusual model: no sweep (the Cell checks still run)
            self._items = []

    def changed(self, cache: HostCache) -> list[tuple[str, str]]:
        """``(name, owner)`` of the state that was finite at ``start()`` and
        holds inf/nan now; the sweep is then over (read once per window)."""
        items, self._items = self._items, []
        probe = self._probe
        if not items or probe is None:
            return []
        out = []
        try:
            for name, owner, tensor, before in items:
                if cache.finite(before) and not cache.finite(probe(tensor)):
                    out.append((name, owner))
        except Exception:
            return out
        return out
