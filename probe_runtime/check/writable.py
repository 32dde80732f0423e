"""Which Parameters a Cell's forward pass may write in place.

Used by L0 (read after each call of such a Cell) and by the state watch of
auto checks (read when a gradient computation returns); the facts are in
:func:`writable_parameters`.
"""

from __future__ import annotations

from typing import Any

from .verdict import is_floating


def writable_parameters(cell: Any, params: dict) -> dict:
    """The own Parameters (``params``: short name -> Parameter) that
    ``cell``'s forward may write in place: the floating ones that need no
    gradient, in a Cell that updates such state. That is a MindSpore
    normalisation Cell (its class or a base defined in a
    ``mindspore...normalization`` module: ``nn.BatchNorm1d/2d/3d``,
    ``nn.SyncBatchNorm``, ``nn.InstanceNorm2d``, ``mint.nn.BatchNorm2d``,
    whose moving or running statistics a training call updates), or a Cell
    holding a Primitive that writes its inputs (``side_effect_mem``, e.g.
    an ``ops.AssignSub`` attribute). A frozen weight (no gradient) of any
    other Cell is not read after each call: it is not written there, and
    reading a frozen backbone after every call would cost a copy of it."""
    candidates = {key: value for key, value in params.items()
                  if not getattr(value, "requires_grad", True) and is_floating(value)}
    if not candidates:
        return {}
    for klass in type(cell).__mro__:
        module = getattr(klass, "__module__", "") or ""
        if module.startswith("mindspore") and module.endswith("normalization"):
            return candidates
    try:
        primitives = list((getattr(cell, "_primitives", None) or {}).values())
        if any(p is not None and p.attrs.get("side_effect_mem", False) for p in primitives):
            return candidates
    except Exception:  # a Cell without MindSpore's usual attributes
        pass
    return {}
