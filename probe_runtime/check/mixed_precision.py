"""Inputs a Cell's mixed precision cast makes inf: what an origin's record
adds when the kernel did not get the values its entry shows.

A Cell given a precision (``cell.to_float(mindspore.float16)``,
``amp_level`` O2/O3) pushes it on MindSpore's PyNative executor for the
length of its call (``Cell._call_pre_process``), and the executor casts the
floating inputs of every operator run then to that type before the kernel
(``PyBoostCastOperation::DoMixPrecisionCast``, every op but ``Cast``;
``amp_level="auto"`` does the same for the operators on its lists). That
cast is no call of its own: an L1 entry records the arguments as the code
passed them (float32 70000, as msprobe does) and the kernel's result
(float16 inf), and at L0 a Cell's entry records its inputs before its
operators cast them. Such an entry is still the origin (nothing before it
held inf/nan; the cast is part of how MindSpore ran it), and
:func:`cast_entered` says why its record looks impossible: the record's
``entered`` (``source`` ``mixed-precision``) names the input the cast made
inf (a fresh user's finding: ``ORIGIN Primitive.MatMul.0.forward`` with
inputs 70000 and 0.001, whose product is 280).

Read only for an origin's record (an overflow), never on the hot path:

* L0: the precision of the Cell (or of the nearest enclosing Cell given
  one, the model given to ``start()`` included) is read from the Cell
  itself; its floating inputs and own Parameters of a wider dtype holding a
  value that precision cannot hold are named, save an additive mask (one
  value of ``-1e9`` or below where it is beyond that precision: the -inf
  the cast makes of it is by design).
* L1: nothing tells which Cells were running, so the call's own evidence
  decides. A call that is no cast and takes no dtype argument returned a
  floating dtype narrower than every floating input it got (float32 inputs,
  a float16 result): MindSpore ran it in that dtype. Or a cast to a dtype
  that holds its input (``astype(float32)`` of float32 70000) returned
  inf/nan: only a narrower cast before it can have made that. Either way,
  an input holding a value the narrower dtype cannot hold is named.

Example::

    cast_entered(call, cache)
    # {"entry": "Primitive.MatMul.0.forward", "input": "input_args[0]", "source": "mixed-precision",
    #  "message": "input_args[0] (Float32, max 70000) is above float16's largest value 65504: ..."}
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from probe_format.layout import INPUT_ARGS, INPUT_KWARGS, SOURCE_MIXED_PRECISION
from probe_format.records import entered_object

from .by_design import CASTS, MASK_VALUE, api_word
from .names import parameter_name
from .provenance import judged_outputs, labelled_tensors, parameters_seen
from .verdict import HostCache, dtype_name, is_dtype, is_parameter, iter_tensors

#: dtype name -> (largest finite value, smallest magnitude a cast to it rounds to inf: halfway between the
#: largest value and the next power of two, round to nearest even), for the precisions a Cell can be given
LIMITS = {
    "Float16": (65504.0, 65520.0),
    "BFloat16": (float.fromhex("0x1.fep127"), 2.0 ** 128 - 2.0 ** 119),
    "Float32": (float.fromhex("0x1.fffffep127"), 2.0 ** 128 - 2.0 ** 103),
}
#: floating dtypes from the narrowest range to the widest
WIDTH = {"Float16": 0, "BFloat16": 1, "Float32": 2, "Float64": 3}
#: ``MixedPrecisionType`` member names -> dtype names
PRECISIONS = {"FP16": "Float16", "BF16": "BFloat16", "FP32": "Float32"}
#: dtype names as MindSpore spells them in code
MINDSPORE_NAMES = {"Float16": "float16", "BFloat16": "bfloat16", "Float32": "float32", "Float64": "float64"}


def cast_entered(call: Any, cache: HostCache) -> Optional[dict]:
    """The ``entered`` object of an origin's forward record whose input a
    mixed precision cast made inf (see the module's docstring), or None.
    Reads the host copies of the inputs (shared through ``cache``)."""
    if hasattr(call, "ancestry"):
        return _cell_cast(call, cache)
    return _call_cast(call, cache)


# -- L0: the Cell's precision, read from the Cell ------------------------------------
def cell_precision(call: Any) -> Optional[tuple[str, str]]:
    """(dtype name, the entry prefix of the Cell that set it) of the
    precision an L0 Cell call ran its operators in: its own
    ``mixed_precision_type``, else that of the nearest enclosing hooked
    Cell, else the model given to ``start()``; None when none was given
    one."""
    node = call
    while node is not None:
        found = _precision_of(getattr(node, "cell", None))
        if found is not None:
            return found, node.prefix
        node = node.parent
    top = getattr(call, "top", None)
    found = _precision_of(getattr(top, "cell", None))
    if top is None or found is None:
        return None
    return found, top.prefix or top.class_name


def _precision_of(cell: Any) -> Optional[str]:
    precision = getattr(cell, "mixed_precision_type", None) if cell is not None else None
    return PRECISIONS.get(getattr(precision, "name", ""))


def _cell_cast(call: Any, cache: HostCache) -> Optional[dict]:
    found = cell_precision(call)
    if found is None:
        return None
    target, owner = found
    tensors = labelled_tensors(INPUT_ARGS, call.args) + labelled_tensors(INPUT_KWARGS, call.kwargs)
    tensors += [(f"parameters.{name}", value) for name, value in parameters_seen(call).items()]
    over = [item for item in _beyond(tensors, target, cache) if not _mask(item[1], target, cache)]
    if not over:
        return None
    label, tensor, value = over[0]
    ms_name = MINDSPORE_NAMES[target]
    given = "it was given that precision" if owner == call.prefix else f"{owner}, which it runs in, was given it"
    message = (f"{_value_text(label, tensor, value, target)}, and {call.prefix} runs its operators in {ms_name} "
               f"({given}: Cell.to_float, amp_level O2/O3): MindSpore casts their floating inputs to {ms_name}, "
               f"which makes {label} {_infinity(value)}{_more(over)}; use level L1 to see the API")
    return _entered(call.name, label, tensor, message)


# -- L1: the call's own evidence -----------------------------------------------------
def _call_cast(call: Any, cache: HostCache) -> Optional[dict]:
    if getattr(call, "inplace", False):  # writing into a narrower tensor casts by itself (copy_, x[i] = y)
        return None
    made = [t for t in iter_tensors(judged_outputs(call)) if not cache.finite(t)]
    kinds = {dtype_name(t) for t in made}
    if len(kinds) != 1:
        return None
    result = kinds.pop()
    if result not in WIDTH:
        return None
    tensors = [(label, t) for label, t in labelled_tensors(INPUT_ARGS, call.args) +
               labelled_tensors(INPUT_KWARGS, call.kwargs) if dtype_name(t) in WIDTH]
    if not tensors:
        return None
    if api_word(call.api) in CASTS:
        return _cast_call(call, tensors, result, cache)
    if result not in LIMITS or _takes_dtype(call) or \
            any(WIDTH[dtype_name(t)] <= WIDTH[result] for _, t in tensors):
        return None
    over = _beyond(tensors, result, cache)
    if not over:
        return None
    label, tensor, value = over[0]
    ms_name = MINDSPORE_NAMES[result]
    message = (f"{_value_text(label, tensor, value, result)}, and MindSpore ran this call in {ms_name} (its output "
               f"is {result}, none of its floating inputs is), as it runs every operator inside a Cell given "
               f"{ms_name} precision (Cell.to_float, amp_level O2/O3; amp_level \"auto\" for the operators on its "
               f"list): it cast the floating inputs to {ms_name} for the kernel, which made {label} "
               f"{_infinity(value)}{_more(over)}")
    return _entered(call.name, label, tensor, message)


def _cast_call(call: Any, tensors: list, result: str, cache: HostCache) -> Optional[dict]:
    """A cast (``astype``, ``to`` ...) to ``result`` that returned inf/nan
    although ``result`` holds its input: a narrower cast came first."""
    label, tensor = tensors[0]
    source = dtype_name(tensor)
    value = _extreme(tensor, cache)
    if value is None or result in LIMITS and abs(value) >= LIMITS[result][1]:
        return None  # a cast to a dtype that cannot hold the value makes inf by itself
    narrower = [name for name in sorted(LIMITS, key=WIDTH.__getitem__, reverse=True)
                if WIDTH[name] < WIDTH[source] and abs(value) >= LIMITS[name][1]]
    if not narrower:
        return None
    ms_name = MINDSPORE_NAMES[narrower[0]]
    also = f" (or {', '.join(MINDSPORE_NAMES[n] for n in narrower[1:])})" if len(narrower) > 1 else ""
    message = (f"{_value_text(label, tensor, value, narrower[0])}, and a cast to {result} cannot make it "
               f"{_infinity(value)}: MindSpore cast it to {ms_name}{also} first, as it casts the floating inputs of "
               f"every operator inside a Cell given {ms_name} precision (Cell.to_float, amp_level O2/O3)")
    return _entered(call.name, label, tensor, message)


def _takes_dtype(call: Any) -> bool:
    """A dtype among the call's arguments (``sum(x, dtype=...)``): the
    call chooses its result's dtype itself."""
    items = list(call.args) + list(call.kwargs.values())
    return any(is_dtype(item) for item in items)


# -- shared --------------------------------------------------------------------------
def _beyond(tensors: list, target: str, cache: HostCache) -> list[tuple[str, Any, float]]:
    """(label, tensor, its value of largest magnitude) of each tensor of a
    dtype wider than ``target`` holding a value a cast to ``target`` makes
    inf, in order."""
    threshold = LIMITS[target][1]
    out = []
    for label, tensor in tensors:
        if WIDTH.get(dtype_name(tensor), -1) <= WIDTH[target]:
            continue
        value = _extreme(tensor, cache)
        if value is not None and abs(value) >= threshold:
            out.append((label, tensor, value))
    return out


def _mask(tensor: Any, target: str, cache: HostCache) -> bool:
    """Every value of ``tensor`` (its host copy) that a cast to ``target``
    makes inf is one and the same value of ``by_design.MASK_VALUE`` or
    below: an additive mask written with ``finfo(float32).min`` or ``-1e9``
    in place of -inf, which the cast makes the -inf it stands for (a
    review's finding: a float16 attention Cell given the usual float32 mask
    had its own overflow, ``q @ k.T`` going +inf, blamed on the mask's
    cast)."""
    array = cache.get(tensor).array
    if array is None or array.dtype.kind != "f":
        return False
    beyond = array[np.abs(array) >= LIMITS[target][1]]
    return bool(beyond.size) and float(beyond.flat[0]) <= MASK_VALUE and bool((beyond == beyond.flat[0]).all())


def _extreme(tensor: Any, cache: HostCache) -> Optional[float]:
    """The finite value of largest magnitude in ``tensor`` (its host copy),
    or None (empty, unreadable, or not finite)."""
    array = cache.get(tensor).array
    if array is None or not array.size or array.dtype.kind != "f":
        return None
    with np.errstate(all="ignore"):
        top, low = float(array.max()), float(array.min())
    if not (np.isfinite(top) and np.isfinite(low)):
        return None
    return top if abs(top) >= abs(low) else low


def _value_text(label: str, tensor: Any, value: float, target: str) -> str:
    largest = LIMITS[target][0]
    ms_name = MINDSPORE_NAMES[target]
    if value > 0:
        return f"{label} ({dtype_name(tensor)}, max {value:.6g}) is above {ms_name}'s largest value {largest:.6g}"
    return f"{label} ({dtype_name(tensor)}, min {value:.6g}) is below {ms_name}'s lowest value {-largest:.6g}"


def _infinity(value: float) -> str:
    return "inf" if value > 0 else "-inf"


def _more(over: list) -> str:
    rest = [label for label, _, _ in over[1:]]
    return f" ({', '.join(rest)} too)" if rest else ""


def _entered(name: str, label: str, tensor: Any, message: str) -> dict:
    parameter = parameter_name(tensor) if is_parameter(tensor) else None
    return entered_object(name, input=None if label.startswith("parameters.") else label,
                          source=SOURCE_MIXED_PRECISION, parameter=parameter, message=message)
