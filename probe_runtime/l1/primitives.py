"""Naming and reading Primitive calls for L1.

Example::

    primitive_api(ops.MatMul())           # "Primitive.MatMul"
    primitive_api(Primitive("Softsign"))  # "Primitive.Softsign" (made by name)
    primitive_api(ops.typeof)             # None: not a computation
"""
from __future__ import annotations

from typing import Any, Optional

from .namespaces import FUNCTION_SKIP, GENERIC_PRIMITIVES, PRIMITIVE_SKIP


def side_effect(prim: Any) -> bool:
    """The primitive changes its inputs in place: its ``side_effect_mem``
    attribute (``Assign``, ``ApplyMomentum``, a training ``BatchNorm``).
    Read per instance, not per class: MindSpore sets it in ``__init__``
    from the arguments (``BatchNorm(is_training=True)`` has it,
    ``BatchNorm(is_training=False)`` has not)."""
    try:
        return bool(prim.attrs.get("side_effect_mem", False))
    except Exception:
        return False


_PRIMITIVE_API: dict[type, Optional[str]] = {}
_UNKNOWN = object()  # not in _PRIMITIVE_API yet


def primitive_api(prim: Any) -> Optional[str]:
    """The API name of a Primitive call, ``Primitive.<operator>``, or None
    for primitives that are not intercepted (:data:`PRIMITIVE_SKIP`).

    The operator is the class name (``MatMul``), as msprobe names them,
    except for primitives made by name from a generic class
    (:data:`GENERIC_PRIMITIVES`, e.g. ``ops.typeof`` is
    ``Primitive("typeof")``): those are named by their operator name
    (``prim.name``), never ``Primitive.Primitive``; names that are not
    computations (:data:`FUNCTION_SKIP`, e.g. ``typeof``) are not
    intercepted. Cached per class, except for the generic ones."""
    klass = type(prim)
    api = _PRIMITIVE_API.get(klass, _UNKNOWN)
    if api is not _UNKNOWN:
        return api  # type: ignore[return-value]
    name = klass.__name__
    if name in GENERIC_PRIMITIVES:
        op = getattr(prim, "name", None)
        if isinstance(op, str) and op:
            return None if op in PRIMITIVE_SKIP or op in FUNCTION_SKIP else f"Primitive.{op}"
    api = None if name in PRIMITIVE_SKIP else f"Primitive.{name}"
    _PRIMITIVE_API[klass] = api
    return api


_ARITY: dict[type, int] = {}


def call_arity(klass: type) -> int:
    """How many positional arguments the ``__call__`` of a generated
    Primitive class takes (``self`` left out); cached per class. Large when
    it takes ``*args`` or cannot be read, so nothing is cut off."""
    count = _ARITY.get(klass)
    if count is None:
        call = getattr(klass, "__call__", None)
        code = getattr(call, "__code__", None)
        if code is None or code.co_flags & 0x04:  # CO_VARARGS
            count = 1 << 30
        else:
            count = max(code.co_argcount - 1, 0)
        _ARITY[klass] = count
    return count
