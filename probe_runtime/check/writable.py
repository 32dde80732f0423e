"""Which Parameters a Cell's forward pass may write in place.

Used by L0 (read after each call of such a Cell) and by the state watch of
auto checks (read when a gradient computation returns); the facts are in
:func:`writable_parameters` (and :func:`writable_module_state` for the
Modules of the MSAdapter layer).
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


def writable_module_state(module: Any, params: dict) -> dict:
    """:func:`writable_parameters` for a ``torch.nn.Module`` of the
    MSAdapter layer (``params``: its own Parameters, short name ->
    Parameter): the own floating Parameters and buffers (short name ->
    tensor) its forward may write in place. That is a normalisation Module
    of the layer (its class or a base defined in a ``mindtorch...batchnorm``
    module, or named ``_NormBase``: ``nn.BatchNorm1d/2d/3d``), whose
    training call runs ``F.batch_norm``: it updates the running statistics
    (buffers) and, on mindtorch 0.5.1's CPU kernel, which gets the four in
    another order, writes the update into ``weight`` and ``bias`` (a batch
    of one leaves nan in the bias), trainable as they are. Other Modules:
    nothing."""
    for klass in type(module).__mro__:
        where = getattr(klass, "__module__", "") or ""
        if where.startswith("mindtorch") and (where.endswith("batchnorm") or klass.__name__ == "_NormBase"):
            break
    else:
        return {}
    state = {key: value for key, value in params.items() if is_floating(value)}
    try:
        for key, value in module.named_buffers(recurse=False):
            if is_floating(value):
                state.setdefault(key, value)
    except Exception:  # a Module without the usual buffers
        pass
    return state
