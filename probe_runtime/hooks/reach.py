"""The reach walk: the Cells and Parameters a gradient computation can touch.

A replay (``grad.replay``) must put back every Parameter the computation it
runs again may write, a ``mindspore.jit`` region's check (``l2.jit``) reads
the Parameters it may write, and the state watch (``grad.states``) must
know which Cells' state a differentiated function may update. None can ask
MindSpore: a PyNative function is plain Python. So all follow references
from the computation's function, inputs and weights (and the model given to
``start()``): a Cell or a Parameter is taken and not entered; functions,
bound methods, ``functools.partial``, containers and plain objects are
entered, :data:`REACH_DEPTH` references deep.

Example::

    params = reachable_parameters([loss_fn, net])   # every Parameter of net, and of Cells loss_fn names
"""
from __future__ import annotations

import functools
import types
from typing import Any

#: how deep :func:`reachable_parameters` follows references from the computations
REACH_DEPTH = 4


def reachable_parameters(roots: list, depth: int = REACH_DEPTH) -> list:
    """Every ``mindspore.Parameter`` reachable from ``roots``: Cells (all
    their Parameters, trainable or not, sub-Cells included), Parameters
    themselves, and what functions (closure, defaults, the globals their
    code names, nested code too), bound methods, ``functools.partial``,
    lists, tuples, dicts and plain objects hold, ``depth`` references deep.
    Modules, classes and tensors other than Parameters are not entered.
    In the order found, each once."""
    found: dict[int, Any] = {}
    for obj in _reach(roots, depth):
        if hasattr(obj, "parameters_and_names"):  # a Cell
            for _, param in obj.parameters_and_names():
                found.setdefault(id(param), param)
        else:
            found.setdefault(id(obj), obj)
    return list(found.values())


def reachable_cells(roots: list, depth: int = REACH_DEPTH) -> list:
    """The ``mindspore.nn.Cell`` objects reachable from ``roots`` as
    :func:`reachable_parameters` follows references (not their sub-Cells),
    in the order found, each once."""
    return [obj for obj in _reach(roots, depth) if hasattr(obj, "parameters_and_names")]


def _reach(roots: list, depth: int) -> list:
    """The Cells and Parameters reachable from ``roots`` (neither entered)."""
    from mindspore import Parameter, Tensor, nn

    found: list = []
    seen: set[int] = set()
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        obj, level = stack.pop()
        if id(obj) in seen or obj is None:
            continue
        seen.add(id(obj))
        if isinstance(obj, (Parameter, nn.Cell)):
            found.append(obj)
            continue
        if level >= depth or isinstance(obj, (Tensor, types.ModuleType, type, str, bytes, int, float, bool)):
            continue
        stack.extend((child, level + 1) for child in _children(obj))
    return found


def _children(obj: Any) -> list:
    """What :func:`reachable_parameters` follows from ``obj``."""
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.FunctionType):
        out = [cell.cell_contents for cell in obj.__closure__ or () if _filled(cell)]
        out.extend(obj.__defaults__ or ())
        out.extend((obj.__kwdefaults__ or {}).values())
        names: set[str] = set()
        codes = [obj.__code__]
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        globals_ = obj.__globals__
        out.extend(globals_[name] for name in names if name in globals_)
        return out
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)[:1000]
    if isinstance(obj, dict):
        return list(obj.values())[:1000]
    attributes = getattr(obj, "__dict__", None)
    return list(attributes.values())[:1000] if isinstance(attributes, dict) else []


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty closure cell
        return False
    return True
