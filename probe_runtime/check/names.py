"""The names records give Parameters.

A ``mindspore.Parameter`` is named by its ``name`` (``fc1.weight``, set
by its Cell). A Parameter of the MSAdapter layer (mindtorch's
``torch.nn.Parameter``) has a ``name`` too, but it is a UUID
(``7f7630af-...``) that appears nowhere in the user's code: records name it
by its dotted ``named_parameters()`` name instead (``0.weight``), as a
PyTorch user reads it. Those names come from the model given to ``start()``
(L0 registers them when it plans its hooks: :func:`register_module`) or,
when no model was given (L1), from the outermost Module holding the
Parameter, looked up once when a record first needs the name
(:func:`parameter_name`). A Module's buffers (a ``BatchNorm``'s
``running_var``) are named the same way.

Example::

    register_module(net)                 # L0: start(net)
    parameter_name(net[0].weight)        # "0.weight"
    parameter_name(ms_dense.weight)      # "fc1.weight" (its own name)
"""
from __future__ import annotations

import gc
import sys
import time
import weakref
from typing import Any, Optional

from .verdict import is_mindspore_parameter, is_parameter

#: id(tensor) -> (weak reference to it, its dotted name; None: no Module holds it)
_NAMES: dict[int, tuple[Any, Optional[str]]] = {}
#: seconds between two walks of the garbage collector's objects (each costs about 0.14 s per million objects)
WALK_INTERVAL = 30.0
_last_walk: Optional[float] = None


def is_layer_parameter(obj: Any) -> bool:
    """``obj`` is a Parameter of the MSAdapter layer (mindtorch's
    ``torch.nn.Parameter``, a ``mindspore.Tensor`` that is not a
    ``mindspore.Parameter``)."""
    return is_parameter(obj) and not is_mindspore_parameter(obj)


def layer_parameter_type() -> Optional[type]:
    """mindtorch's Parameter class when the layer is loaded, else None."""
    module = sys.modules.get("mindtorch.nn.parameter")
    klass = getattr(module, "Parameter", None)
    return klass if isinstance(klass, type) else None


def register_module(model: Any, prefix: str = "") -> None:
    """Name the Parameters and buffers of ``model`` (a ``torch.nn.Module``
    of the layer) by their ``named_parameters()``/``named_buffers()``
    names, with ``prefix`` (``"1."`` for the second model of a list given
    to ``start()``). Never raises."""
    try:
        items = list(model.named_parameters()) + list(model.named_buffers())
    except Exception:
        return
    for name, tensor in items:
        _remember(tensor, prefix + name)


def _remember(tensor: Any, name: Optional[str]) -> None:
    key = id(tensor)
    try:
        _NAMES[key] = (weakref.ref(tensor, lambda _: _NAMES.pop(key, None)), name)
    except TypeError:  # cannot be referred to weakly: not named
        pass


def _known(tensor: Any) -> tuple[bool, Optional[str]]:
    entry = _NAMES.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return False, None
    return True, entry[1]


def _search_modules(tensor: Any) -> None:
    """Name ``tensor`` (and every Parameter and buffer of the Modules
    found) from the outermost Modules alive: a Module that is no other
    Module's sub-Module. Walks the garbage collector's objects once; asked
    only when a record names a layer Parameter no model given to
    ``start()`` holds, and at most once every :data:`WALK_INTERVAL`
    seconds: tensors no Module holds (a standalone ``nn.Parameter``) would
    each cost a walk (a reviewer measured 9 s for 60 of them in a process
    of a million objects); one asked in between keeps its own name."""
    global _last_walk
    now = time.monotonic()
    if _last_walk is not None and now - _last_walk < WALK_INTERVAL:
        _remember(tensor, None)
        return
    _last_walk = now
    torch = sys.modules.get("torch")
    kind = getattr(getattr(torch, "nn", None), "Module", None)
    if not isinstance(kind, type):
        _remember(tensor, None)
        return
    # type(), not isinstance(): isinstance reads __class__, which a dead weak proxy among the objects raises on
    modules: list[Any] = [obj for obj in gc.get_objects() if issubclass(type(obj), kind)]
    inner: set[int] = set()
    for module in modules:
        try:
            inner.update(id(child) for child in module.modules() if child is not module)
        except Exception:  # a Module half built or torn down: skipped
            continue
    for root in modules:
        if id(root) in inner:
            continue
        try:
            for name, item in list(root.named_parameters()) + list(root.named_buffers()):
                if not _known(item)[0]:
                    _remember(item, name)
        except Exception:
            continue
    if not _known(tensor)[0]:
        _remember(tensor, None)


def parameter_name(param: Any, default: str = "?", search: bool = False) -> str:
    """The name a record gives ``param``: a layer Parameter's dotted Module
    name (see the module's docstring; ``search``: a buffer's too, looked
    up the same way), else its ``name`` attribute (``default`` without
    one)."""
    if not is_mindspore_parameter(param):
        known, name = _known(param)
        if not known and (search or is_layer_parameter(param)):
            _search_modules(param)
            known, name = _known(param)
        if name:
            return name
    name = getattr(param, "name", None)
    return name if isinstance(name, str) and name else default

