"""-inf by design: outputs that hold -inf on purpose, judged the way the
loss and the gradients see them (L1, issue 33).

Training code makes -inf on purpose: an attention mask filled with
``float("-inf")`` that a softmax turns into exact zeros, ``log`` of
probabilities that are 0 by design (under a ``where`` that drops them).
Exact checks used to call the call that made the -inf an ORIGIN in every
step, although the loss and the gradients stayed finite. Now such a call
is *deferred*: no record, and its -inf outputs are remembered. A call that
takes one of them is judged as if it were finite there, so:

* its result is finite (the softmax consumed the mask): nothing is
  recorded, in any step;
* its result holds -inf only and it passes -inf on elementwise
  (:data:`PASS_ON`: ``scores + mask``, a cast, a reshape): deferred too,
  for the same maker;
* its result holds NaN or +inf, or it is not in :data:`PASS_ON` (a
  reduction: ``log(0)`` reaching the loss through ``mean``): the -inf
  reached a judged result, so the maker is recorded then, as the ORIGIN
  of the step, and this call as carried; unless another input of the
  call already held NaN or +inf (scores a real overflow made inf, plus
  the mask): that overflow is carried on, and the maker is no origin;
* the maker's own backward entry overflows (``where(p > 0, log(p), 0)``:
  ``0 * (1 / 0)`` is NaN): the maker is recorded first, likewise;
* the window closes with a gradient computation whose result holds
  inf/nan and no record explains it, or with a maker whose -inf no
  checked call ever took (a forward-only loop returning ``log(0)``: the
  -inf is the result): the makers are recorded then.

A -inf by design that leaves a gradient computation asked with
``has_aux=True`` as an auxiliary output (masked logits returned beside
the loss, for an accuracy read on the host), its loss and gradients
finite, is no overflow: the makers count as consumed
(:meth:`ByDesign.auxiliary`, at L1 and L0).

A -inf written into a tensor (``s[pad] = float("-inf")``, ``index_fill``,
the in-place ``masked_fill_``/``fill_``) is made by design the same way.
An in-place call's entry holds copies of its inputs made before the call,
so the tensor it wrote is the one it returned (matched by object, or by
memory: :func:`storage_key`), and a copy of a deferred maker's -inf is
traced back to that maker (:meth:`ByDesign.inherit`). A call that only
moves, keeps or writes values (:data:`KEEP_VALUES`) and returns NaN or
+inf from a by-design -inf made them itself (``s[i] = inf`` after the
mask): it is the origin, and the -inf it took is let go.

A -inf that no checked call made (a mask built with numpy before the
loop, ``Tensor(np.triu(np.full(..., -inf)))``, added to the scores) is
judged the same way: a call taking it that returns finite values
consumes it; one passing it on elementwise is deferred, as the place it
came in; when it reaches a judged result, that call is recorded then,
carried, with ``entered`` saying the -inf came from outside.

At level L0 a Cell call stands for an API call, with the same rules
(:func:`decide_cell`): a hooked Cell whose inputs and own Parameters are
finite and whose outputs' non-finite values are -inf only (a ``Policy``
Cell masking invalid actions with ``masked_fill``) is deferred, and its
-inf outputs remembered (as the tensors the caller got; a later Cell gets
them through its gradient hook as new objects, matched by
:meth:`ByDesign.alias`). A later Cell taking one that returns finite
values consumed it (an attention Cell given the mask); one returning -inf
only passes it on, deferred for the same maker; one returning NaN or +inf
(``mask - mask``) makes the maker the origin, recorded then, and itself
carried, unless another input already held NaN or +inf. The Cell
enclosing a deferred call (``by_design_inside``, :func:`tell_enclosing`)
ran the code between its sub-Cells that took the -inf: its result finite,
that code consumed it; -inf only, it passes it on; NaN or +inf from finite
inputs and Parameters, its own construct made it (``own-construct``, the
record's message naming the maker, which is not recorded: L1 tells them
apart). A -inf-only input no deferred maker made, whose -inf lie where a
deferred sibling's did, is that sibling's (:meth:`ByDesign.adopt`: the
enclosing code cast or reshaped it). The model given to ``start()`` is
judged likewise (:func:`settle_model`); its own -inf-only result is
deferred too (``queue.Checker._defer_top``), and a gradient
computation returning finite values consumed it. The backward rules and the window's
close are L1's: the maker's own backward entry, or its Parameters'
gradients, overflowing from finite gradients records it first; a window
closing with an unexplained inf/nan gradient result or with a -inf no
checked call consumed (a forward-only loop returning the mask) records the
makers, and so does a loss holding inf/nan that no record explains while
such a -inf is deferred (``windows.controller.Windows.on_forward``).

Which APIs may make -inf by design, and which pass it on, is data
(:data:`MAKERS`, :data:`PASS_ON`), keyed by the API's name without its
prefix (``Functional.masked_fill`` and ``Tensor.masked_fill`` alike), as
``provenance.JUDGED_OUTPUTS`` is for BatchNorm's workspace outputs. NaN is
never by design, nor is +inf, but at L1 the +inf of a call that writes a
value it was given, given +inf (:func:`fills_positive_infinity`:
``masked_fill(d, pad, inf)`` before a ``min``; a Python float or a
one-element tensor, :func:`positive_fill_tensors`), judged as a -inf mask is,
and so is the +inf of a loss scale's growth that MindSpore's
``DynamicLossScaler.adjust`` keeps out (:data:`GUARDED_CALLERS`). At
L0 which Cell may make -inf is not data: any hooked Cell may, and so may
the model given to ``start()`` in its own ``construct``.

Example::

    registry = ByDesign()
    registry.defer(call, [mask])       # masked_fill's -inf output
    registry.excused(mask, cache)      # True: a consumer sees it as finite
"""
from __future__ import annotations

import enum
import re
from typing import Any, Callable, Optional

import numpy as np

from .verdict import FLOAT_DTYPES, HostCache, dtype_name, is_parameter, iter_tensors

#: APIs whose -inf output may be by design (the name after the prefix;
#: MindSpore ``ops``/``mint``/``Tensor`` functions and their primitives).
#: Beside the functions that return a new tensor, the writes of a -inf
#: value into a tensor (a scalar or a -inf tensor, or a float32
#: ``finfo.min`` that rounds to -inf in float16): ``s[pad] = -inf``
#: (``Tensor.__setitem__``, in place: it returns ``s`` itself),
#: ``index_fill``, ``fills``, ``fill_diagonal`` and their in-place forms
#: (``index_fill_``, ``masked_fill_``, ``fill_``, ``fill_diagonal_``: Ascend
#: only in MindSpore 2.7 and 2.10, which run them as the ``Inplace*``
#: kernels named here; ``index_fill_`` is not in 2.7).
MAKERS = frozenset({
    "masked_fill", "masked_fill_", "fill", "fill_", "full", "full_like", "where", "log", "log_softmax",
    "MaskedFill", "FillV2", "Fill", "Select", "Log", "LogSoftmax", "FullLike", "Full",
    "__setitem__", "index_fill", "index_fill_", "fills", "fill_diagonal", "fill_diagonal_",
    "IndexFill", "IndexFillScalar", "IndexFillTensor", "MaskedFillScalar", "FillScalar", "FillTensor", "Fills",
    "FillDiagonal", "InplaceFillScalar", "InplaceFillTensor", "InplaceMaskedFillScalar",
    "InplaceMaskedFillTensor", "InplaceIndexFillScalar", "InplaceIndexFillTensor", "InplaceFillDiagonal",
    # a constant pad writes the value it is given (-inf padding before a max over a window; a fresh user's
    # finding: an ORIGIN in every clean step); they also pass a -inf of their input on (PASS_ON)
    "pad", "Pad", "PadV3", "ConstantPadND",
})
#: APIs that pass a by-design -inf on elementwise: their -inf output, made
#: from a by-design input, is by design too (the writes of a tensor's
#: values into another: ``copy_``, ``index_put``, ``tensor_scatter_update``,
#: ``masked_scatter``, ``scatter`` with a -inf source)
PASS_ON = frozenset({
    "__add__", "__radd__", "__iadd__", "__sub__", "__isub__", "add", "sub", "where", "masked_fill",
    "masked_fill_", "maximum", "minimum", "astype", "to", "float", "half", "cast", "reshape", "view",
    "expand_dims", "unsqueeze", "squeeze", "broadcast_to", "expand", "expand_as", "transpose", "permute",
    "swapaxes", "__getitem__", "tile", "repeat", "contiguous", "clone", "copy", "flatten", "tril", "triu",
    "Add", "Sub", "Select", "MaskedFill", "Maximum", "Minimum", "Cast", "Reshape", "ExpandDims", "Squeeze",
    "BroadcastTo", "Transpose", "StridedSlice", "Tile", "Tril", "Triu", "Identity",
    "copy_", "index_put", "index_put_", "tensor_scatter_update", "masked_scatter", "masked_scatter_", "scatter",
    "scatter_", "TensorScatterUpdate", "TensorScatterElements", "InplaceCopy", "InplaceIndexPut",
    "InplaceMaskedScatter",
    # joined, padded, repeated, selected, split, sorted: the values move, none is computed (a fresh user's
    # prefix mask ops.cat([zeros, causal]), per-head masks stacked, top-k attention: an ORIGIN every step)
    "cat", "concat", "stack", "hstack", "vstack", "column_stack", "pad", "repeat_interleave", "index_select",
    "split", "tensor_split", "chunk", "narrow", "unbind", "select", "topk", "sort", "gather", "gather_elements",
    "take_along_dim", "flip", "fliplr", "flipud", "roll", "movedim", "moveaxis", "diagonal", "slice",
    "masked_select", "MaskedSelect",
    "Concat", "Stack", "StackExt", "Pad", "PadV3", "ConstantPadND", "RepeatInterleaveInt",
    "RepeatInterleaveTensor", "IndexSelect", "Split", "SplitTensor", "SplitWithSize", "Chunk", "Narrow",
    "Unstack", "TopK", "TopkExt", "Sort", "SortExt", "Gather", "GatherD", "ReverseV2", "Roll", "Slice",
    "SliceExt",
    # scaled (by a temperature, a square root of the head size): a positive scale keeps -inf
    "__mul__", "__rmul__", "__imul__", "__truediv__", "__itruediv__", "mul", "div", "Mul", "Muls", "Div",
    "RealDiv", "Divs",
    # negated: -(+inf) is -inf (a causal mask written triu(-full(inf)); a fresh user's finding)
    "__neg__", "neg", "negative", "Neg",
})
#: the makers and passers-on that compute with the -inf they take (``mask
#: - mask`` and ``log`` of a -inf are NaN): the others only move values, keep
#: them or write new ones (:data:`KEEP_VALUES`)
COMPUTE = frozenset({
    "__add__", "__radd__", "__iadd__", "__sub__", "__isub__", "add", "sub", "Add", "Sub", "log", "log_softmax", "Log",
    "LogSoftmax", "__mul__", "__rmul__", "__imul__", "__truediv__", "__itruediv__", "mul", "div", "Mul", "Muls",
    "Div", "RealDiv", "Divs", "__neg__", "neg", "negative", "Neg",  # neg: a -inf mask negated is +inf
})
#: the passers-on that work element by element, each output value from the
#: input values at the same place (broadcast): an infinity of theirs where
#: no input held one is their own (:func:`infinities_from_inputs`)
ELEMENTWISE = (COMPUTE - {"log", "log_softmax", "Log", "LogSoftmax"}) | frozenset({
    "astype", "to", "float", "half", "cast", "Cast", "maximum", "minimum", "Maximum", "Minimum", "clone", "copy",
    "contiguous", "Identity",
})
#: APIs whose output holds their inputs' values (moved, kept, cast) or
#: values they write (``s[i] = inf``): a -inf by design they take stays
#: -inf, so a NaN or +inf in their output is theirs, not the -inf's
KEEP_VALUES = (MAKERS | PASS_ON) - COMPUTE
#: makers remembered per window before those whose -inf a checked call already turned finite are let go
#: (their tensors are held until then, or until the window closes)
MAX_DEFERRED = 16
#: makers whose -inf nothing consumed yet remembered per window at most, and the bytes of their tensors: past
#: either, a new one is judged at once (an origin): masks built before any is used (a fresh user's finding:
#: 17 attention heads' masked scores built first, the 17th an ORIGIN in a clean step)
MAX_PENDING = 256
MAX_PENDING_BYTES = 1 << 30


def api_word(api: str) -> str:
    """``"Functional.masked_fill"`` -> ``"masked_fill"``; ``"Primitive.Log"`` -> ``"Log"``."""
    return api.split(".", 1)[1] if "." in api else api


def storage_key(tensor: Any) -> Optional[tuple]:
    """Where ``tensor``'s values live: (data pointer, storage offset, shape,
    dtype), or None when MindSpore does not say. Two tensor objects with the
    same key show the same values: an in-place call (``masked_fill_``,
    ``copy_``) may return a new object over the memory it wrote, and the
    code goes on with the one it wrote into."""
    try:
        pointer = int(tensor.data_ptr())
    except Exception:
        return None
    if not pointer:
        return None
    try:
        offset = int(tensor.storage_offset())
    except Exception:
        offset = 0
    return pointer, offset, tuple(getattr(tensor, "shape", ())), str(getattr(tensor, "dtype", ""))


def written_tensor(call: Any) -> Optional[Any]:
    """The tensor an in-place L1 call wrote into, as the call returned it
    (``Tensor.__setitem__`` returns ``self``; a C++ in-place method may
    return a new object over the same memory), or None."""
    if not getattr(call, "inplace", False):
        return None
    return next(iter(iter_tensors([call.output])), None)


def only_negative_infinity(tensor: Any, cache: HostCache) -> bool:
    """True when ``tensor`` is floating and its non-finite values are all
    -inf (at least one): no NaN, no +inf."""
    return _only_infinity(tensor, cache, np.isposinf)


def only_positive_infinity(tensor: Any, cache: HostCache) -> bool:
    """True when ``tensor`` is floating and its non-finite values are all
    +inf (at least one): no NaN, no -inf."""
    return _only_infinity(tensor, cache, np.isneginf)


def _only_infinity(tensor: Any, cache: HostCache, other_sign: Callable) -> bool:
    """``tensor`` is floating, not finite, and holds neither NaN nor an
    infinity ``other_sign`` (``numpy.isposinf`` or ``isneginf``) finds."""
    if dtype_name(tensor) not in FLOAT_DTYPES or cache.finite(tensor):
        return False
    array = cache.get(tensor).array
    if array is None or array.size == 0:
        return False
    flat = array.reshape(-1)
    return not bool(np.isnan(flat).any()) and not bool(other_sign(flat).any())


#: the makers that write a value they are given (:func:`fills_positive_infinity`)
FILLS = frozenset({
    "masked_fill", "masked_fill_", "fill", "fill_", "full", "full_like", "where", "MaskedFill", "FillV2", "Fill",
    "Select", "FullLike", "Full", "__setitem__", "index_fill", "index_fill_", "fills", "IndexFill",
    "IndexFillScalar", "IndexFillTensor", "MaskedFillScalar", "FillScalar", "FillTensor", "Fills",
    "InplaceFillScalar", "InplaceFillTensor", "InplaceMaskedFillScalar", "InplaceMaskedFillTensor",
    "InplaceIndexFillScalar", "InplaceIndexFillTensor", "pad", "Pad", "PadV3", "ConstantPadND",
})


def fills_positive_infinity(call: Any, given: Optional[list] = None) -> bool:
    """``call`` writes a value it was given, and that value is +inf: a
    Python ``float("inf")``, or a one-element tensor holding +inf given as
    the value (``given``: those :func:`positive_fill_tensors` found): a
    +inf mask on purpose, such as padded points set to +inf before a
    ``min`` over distances. The only way +inf is by design. (A Python
    float has no history: one a numpy overflow made, ``float(np.float16(
    70000))``, looks the same: docs/checks.md, what exact checks do not
    see.)"""
    if api_word(getattr(call, "api", "")) not in FILLS:
        return False
    if given:
        return True
    values = list(getattr(call, "args", ()) or ()) + list((getattr(call, "kwargs", None) or {}).values())
    return any(type(value) is float and value == float("inf") for value in values)


#: library functions that compute a value, test it with ``isfinite`` and keep
#: the old one when it is not finite, as (the end of the file's path, the
#: function's name): a +inf made by a call they make directly is by design,
#: judged as a fill's +inf is (deferred; an origin only when it reaches a
#: judged result). MindSpore's ``amp.DynamicLossScaler.adjust``
#: (``mindspore/amp.py``, 2.7 and 2.10) grows the loss scale as
#: ``scale_value * scale_factor`` and keeps the old scale when that product is
#: not finite: once the scale is near float32's largest value, the product is
#: +inf in every step (a hunt's finding: a clean run got an ORIGIN there, and
#: it used up ``overflow_nums``).
GUARDED_CALLERS = frozenset({("mindspore/amp.py", "adjust")})


def guarded_growth(call: Any) -> bool:
    """``call`` was made directly by a function of :data:`GUARDED_CALLERS`
    (its innermost frame outside this package is that function's)."""
    frames = getattr(call, "frames", None)
    if not frames:
        return False
    filename, _, function = frames[0]
    filename = str(filename).replace("\\", "/")
    return any(function == name and filename.endswith("/" + path) for path, name in GUARDED_CALLERS)


#: keyword names of the tensor a fill writes into (its first argument), not the value it writes
WRITTEN_KEYWORDS = frozenset({"input", "input_x", "x", "self"})
#: size-1 floating tensors an overflowing checked call returned, remembered per window at most
MAX_COMPUTED = 256


def positive_fill_tensors(call: Any, cache: HostCache, registry: "ByDesign") -> list:
    """The tensors ``call`` (a fill, :data:`FILLS`) was given as the value
    to write that hold +inf only, in one element (``Tensor(float("inf"))``,
    ``ms.tensor(float("inf"))``): judged as a Python ``float("inf")`` is
    (:func:`fills_positive_infinity`), so the call is a +inf maker by
    design. Not the tensor written into (the first argument), not a
    Parameter (state an update wrote), not what an overflowing checked
    call of the window returned (:meth:`ByDesign.computed`: ``exp`` of a
    large value is an overflow, whatever takes it), and none at all when
    any candidate is not such a value. A hunt's finding: the Python float
    was a mask, the same +inf as a tensor gave carried records "made
    outside the checked window" in every clean step."""
    if api_word(getattr(call, "api", "")) not in FILLS:
        return []
    kwargs = getattr(call, "kwargs", None) or {}
    candidates = list(iter_tensors(list(getattr(call, "args", ()) or ())[1:])) + \
        list(iter_tensors([v for k, v in kwargs.items() if k not in WRITTEN_KEYWORDS]))
    found = []
    for tensor in candidates:
        if dtype_name(tensor) not in FLOAT_DTYPES or cache.finite(tensor):
            continue
        size = getattr(tensor, "size", None)
        if size != 1 or is_parameter(tensor) or registry.was_computed(tensor) or \
                not only_positive_infinity(tensor, cache):
            return []
        found.append(tensor)
    return found


#: makers whose -inf is computed (``log(0)``), not written: a float16 probability that underflowed to 0
COMPUTES_MINUS_INFINITY = frozenset({"log", "log_softmax", "Log", "LogSoftmax"})


def writes_on_purpose(maker: Any) -> bool:
    """``maker`` (a deferred maker) is an L1 call of an API that writes
    -inf on purpose (``masked_fill``, ``where``, ...: :data:`MAKERS`; not
    ``log``, :data:`COMPUTES_MINUS_INFINITY`; not a call that passed on a
    -inf made outside the checked calls), not an L0 Cell nor a
    ``mindspore.jit`` region (``l2.jit.RegionMaker``),
    which are makers only because their output held -inf only: what they
    return could as well be an overflow that gives -inf only."""
    if maker is None or isinstance(getattr(maker, "prefix", None), str) or \
            getattr(maker, "regions", None) is not None:
        return False
    return api_word(getattr(maker, "api", "")) in MAKERS - COMPUTES_MINUS_INFINITY


def by_design_infinity(tensor: Any, cache: HostCache, positive: bool) -> bool:
    """``tensor`` holds -inf only, or +inf only when ``positive`` (its
    maker wrote +inf on purpose: :func:`fills_positive_infinity`)."""
    return only_negative_infinity(tensor, cache) or (positive and only_positive_infinity(tensor, cache))


class ByDesign:
    """The deferred makers of one window and their -inf tensors.

    Attributes:
        makers: the deferred forward entries, in the order deferred (each
            holds its tensors until recorded or the window closes).
    """

    def __init__(self) -> None:
        self.makers: list = []
        self._tensors: dict[int, tuple[Any, Any]] = {}  # id(tensor) -> (tensor, maker)
        self._written: dict[tuple, tuple[Any, Any]] = {}  # storage_key -> (tensor, maker): written in place
        self._calls: set[int] = set()
        self._consumed: set[int] = set()  # makers whose -inf a checked call took and turned finite
        self._external: set[int] = set()  # deferred calls that passed on a -inf no checked call made
        self._positive: set[int] = set()  # makers that wrote +inf on purpose (fills_positive_infinity)
        self._returned: set[int] = set()  # L0: makers whose -inf the model returned into a gradient computation
        self._computed: dict[int, Any] = {}  # L1: one-element outputs of overflowing calls (computed)
        self._passers: dict[int, list] = {}  # id(maker) -> the calls that passed its -inf on, in order
        self._read: set[int] = set()  # makers whose -inf the user's code read on the host (asnumpy)
        self._carrying: set[int] = set()  # makers a call passing on the -inf of several was deferred for

    def __bool__(self) -> bool:
        return bool(self.makers)

    def clear(self) -> None:
        """The window closed: let everything go."""
        self.makers, self._tensors, self._calls, self._consumed, self._external = [], {}, set(), set(), set()
        self._written, self._positive, self._returned, self._computed = {}, set(), set(), {}
        self._passers, self._read, self._carrying = {}, set(), set()

    def full(self) -> bool:
        """No more makers are remembered in this window. Past
        :data:`MAX_DEFERRED` the oldest makers whose -inf a checked call
        already turned finite (a layer's mask its softmax absorbed) are let
        go first: a model of more than that many masked attention layers
        had its 17th mask called an origin in every step. A tensor of
        theirs taken again later counts as a -inf no checked call made.
        Makers nothing consumed yet are kept up to :data:`MAX_PENDING`
        calls and :data:`MAX_PENDING_BYTES` of tensors."""
        if len(self.makers) < MAX_DEFERRED:
            return False
        for maker in [m for m in self.makers if id(m) in self._consumed]:
            if len(self.makers) < MAX_DEFERRED:
                break
            self._forget(maker)
        if len(self.makers) < MAX_DEFERRED:
            return False
        return len(self.makers) >= MAX_PENDING or self._pending_bytes() >= MAX_PENDING_BYTES

    def _pending_bytes(self) -> int:
        """The bytes of the tensors the makers not yet consumed hold: their
        -inf tensors and what their entries keep (inputs, in-place copies,
        outputs), each tensor once (0 for what does not say its size). A
        review's finding: counting the -inf outputs alone, a decoding loop
        held twice the budget (each ``masked_fill`` keeps its logits too)."""
        pending = [m for m in self.makers if id(m) not in self._consumed]
        ids = {id(m) for m in pending}
        seen: set[int] = set()
        total = 0
        tensors = [tensor for tensor, maker in self._tensors.values() if id(maker) in ids]
        for maker in pending:
            tensors.extend(iter_tensors([getattr(maker, "args", None), getattr(maker, "kwargs", None),
                                         getattr(maker, "output", None)]))
        for tensor in tensors:
            if id(tensor) in seen:
                continue
            seen.add(id(tensor))
            try:
                total += int(tensor.nbytes)
            except Exception:
                continue
        return total

    def _forget(self, maker: Any) -> None:
        """Let ``maker`` and its tensors go."""
        self.makers.remove(maker)
        self._calls.discard(id(maker))
        self._consumed.discard(id(maker))
        self._external.discard(id(maker))
        self._positive.discard(id(maker))
        self._returned.discard(id(maker))
        self._passers.pop(id(maker), None)
        self._read.discard(id(maker))
        self._carrying.discard(id(maker))
        self._tensors = {key: hit for key, hit in self._tensors.items() if hit[1] is not maker}
        if self._written:
            self._written = {key: hit for key, hit in self._written.items() if hit[1] is not maker}

    def defer(self, maker: Any, tensors: list, on_behalf: Optional[Any] = None, external: bool = False,
              inplace: bool = False, positive: bool = False) -> None:
        """Remember ``tensors`` (-inf by design) as made by ``maker``; a
        call passing a maker's -inf on (``on_behalf``: that call) adds its
        outputs under the same maker. ``external``: ``maker`` passed on a
        -inf no checked call made (recorded carried, not as the origin).
        ``inplace``: the call wrote ``tensors`` in place: any object over
        the same memory (:func:`storage_key`) is theirs too. ``positive``:
        ``maker`` wrote +inf on purpose; its +inf-only tensors are by design."""
        if positive:
            self._positive.add(id(maker))
        if on_behalf is not None:  # its -inf lives on: a call that consumed it before does not settle it
            self._consumed.discard(id(maker))
        if on_behalf is None and id(maker) not in self._calls:
            self.makers.append(maker)
            self._calls.add(id(maker))
            if external:
                self._external.add(id(maker))

        for tensor in tensors:
            self._tensors[id(tensor)] = (tensor, maker)
            key = storage_key(tensor) if inplace else None
            if key is not None:
                self._written[key] = (tensor, maker)

    def maker_of(self, tensor: Any) -> Optional[Any]:
        """The deferred maker of ``tensor``, or None: ``tensor`` is one of
        its -inf tensors, or shows the memory one was written in place."""
        hit = self._tensors.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        if self._written:
            key = storage_key(tensor)
            hit = self._written.get(key) if key is not None else None
            if hit is not None and storage_key(hit[0]) == key:  # still there (not given new memory since)
                return hit[1]
        return None

    def inherit(self, call: Any, cache: HostCache) -> None:
        """Before an in-place ``call`` is judged: its inputs are the copies
        the L1 wrappers made before the call, not the tensors the code
        passed, so a copy of a deferred maker's -inf would look like a -inf
        no checked call made. The copy of the tensor written into (the
        first argument) holding -inf belongs to the maker of what the call
        returned (``s[pad] = -inf`` twice into the same scores); any other
        copy holding -inf only to the maker of a remembered tensor holding
        the very same values (``s.copy_(masked)``, ``s[pad] =
        mask_value``). A copy holding +inf only belongs to a maker only when
        the code passed that maker's very tensor (``call.originals``; a
        review's finding: a +inf fill assigned into a Parameter,
        ``ops.assign(best, d)``, was recorded after the assign, "made
        outside the checked window"; another's: matched by values, a real
        +inf assigned later made a consumed fill an ORIGIN)."""
        target = written_tensor(call)
        written_by = self.maker_of(target) if target is not None else None
        originals = getattr(call, "originals", None) or {}
        for position, tensor in enumerate(iter_tensors([getattr(call, "args", ()), getattr(call, "kwargs", {})])):
            if tensor is target or self.maker_of(tensor) is not None:
                continue
            if not only_negative_infinity(tensor, cache):
                # +inf: only the copy of a maker's very tensor (a real +inf of the same values is no fill's)
                original = originals.get(id(tensor))
                maker = self.maker_of(original) if original is not None else None
                if maker is not None and only_positive_infinity(tensor, cache):
                    self._tensors[id(tensor)] = (tensor, maker)
                continue
            maker = written_by if position == 0 and written_by is not None else self._same_values(tensor, cache)
            if maker is not None:
                self._tensors[id(tensor)] = (tensor, maker)

    def _same_values(self, tensor: Any, cache: HostCache) -> Optional[Any]:
        """The maker of a remembered tensor whose values are ``tensor``'s
        (same shape and dtype, equal elementwise, -inf included), or None."""
        array = cache.get(tensor).array
        if array is None:
            return None
        shape, dtype = tuple(getattr(tensor, "shape", ())), dtype_name(tensor)
        for original, maker in list(self._tensors.values()):
            if original is tensor or tuple(getattr(original, "shape", ())) != shape or dtype_name(original) != dtype:
                continue
            other = cache.get(original).array
            if other is not None and np.array_equal(other, array):
                return maker
        return None

    def passed_on(self, maker: Any, call: Any) -> None:
        """L0: ``call`` took ``maker``'s -inf as an input and passed it on
        (its output -inf only, deferred for ``maker``)."""
        passers = self._passers.setdefault(id(maker), [])
        if call is not maker and all(p is not call for p in passers):
            passers.append(call)

    def passers(self, maker: Any) -> list:
        """The calls that passed ``maker``'s -inf on (deferred for it), in
        order: when it is recorded, they carried its overflow."""
        return list(self._passers.get(id(maker), ()))

    def passed_on_by(self, calls: Any) -> list:
        """The deferred makers whose -inf one of ``calls`` passed on, in order."""
        wanted = {id(c) for c in calls}
        return [m for m in self.makers if id(m) in self._calls and
                any(id(p) in wanted for p in self._passers.get(id(m), ()))]

    def deferred(self, call: Any) -> bool:
        """``call`` is a deferred maker not recorded yet."""
        return id(call) in self._calls

    def read_on_host(self, tensors: list) -> None:
        """The user's code reads ``tensors`` on the host: those that are a
        deferred maker's -inf (or a call's that passed it on) mark it."""
        for tensor in tensors:
            maker = self.maker_of(tensor)
            if maker is not None:
                self._read.add(id(maker))

    def read(self, maker: Any) -> bool:
        """The user's code read ``maker``'s -inf on the host."""
        return id(maker) in self._read

    def left_checks(self, maker: Any, cut_off: bool = False) -> bool:
        """``maker``'s -inf left the checked calls without reaching a
        judged result, so its not being consumed says nothing: a mask
        written on purpose (:func:`writes_on_purpose`) that the user's code
        read on the host, or (``cut_off``) any such mask, the step having
        ended on an uncaught exception. Not a mask that a call passing on
        the -inf of several makers was deferred for (:meth:`carrying`): the
        others' -inf rides on it unseen, and may be computed (a review's
        finding: ``bias + log(p)`` read on the host, with ``log(p)`` also
        taken by an ``exp``, said "no overflow found")."""
        return writes_on_purpose(maker) and id(maker) not in self._external and \
            id(maker) not in self._carrying and (cut_off or id(maker) in self._read)

    def carrying(self, owner: Any, makers: list, outside: bool = False) -> None:
        """A call passing on the -inf of ``makers`` was deferred for
        ``owner`` (one of them) alone: with others, or with a -inf no
        remembered maker made (``outside``: a maker let go past the limit,
        or one of an earlier window; a review's finding), ``owner`` carries
        theirs."""
        if outside or any(m is not owner for m in makers):
            self._carrying.add(id(owner))

    def external(self, maker: Any) -> bool:
        """``maker`` passed on a -inf that no checked call made."""
        return id(maker) in self._external

    def consumed(self, makers: list) -> None:
        """A checked call took these makers' -inf and returned finite values."""
        self._consumed.update(id(m) for m in makers)

    def unconsume(self, makers: list) -> None:
        """These makers' -inf reached a result (an L0 model returned it),
        although a checked call took it and turned it finite on another
        path: recorded when the window closes, as makers nothing consumed."""
        self._consumed.difference_update(id(m) for m in makers)

    def consumed_cells(self) -> set[str]:
        """L0: the Cells (``Cell.policy.Policy``) among this window's makers
        whose -inf a checked Cell or the model's own code turned finite:
        not recorded, and named in the all-clear, since at L0 such a mask
        looks like an overflow that gives -inf only (``-exp`` of a large
        value)."""
        return {m.prefix for m in self.makers
                if id(m) in self._consumed and isinstance(getattr(m, "prefix", None), str)}

    def consumed_regions(self) -> set[str]:
        """L1: the ``mindspore.jit`` regions (``Jit.make_mask``, the call
        index dropped) among this window's makers (``l2.jit.RegionMaker``)
        whose -inf a checked call turned finite: not recorded, and named in
        the all-clear, since an overflow inside a region that gives -inf
        only looks the same from outside it."""
        return {re.sub(r"\.\d+\.forward$", "", m.name) for m in self.makers
                if id(m) in self._consumed and getattr(m, "regions", None) is not None}

    def unconsumed(self) -> list:
        """The deferred makers whose -inf no checked call turned finite."""
        return [m for m in self.makers if id(m) not in self._consumed]

    def recorded(self, maker: Any) -> None:
        """``maker`` was recorded: not deferred any more (its tensors stay
        by design for the consumers still to be judged)."""
        self._calls.discard(id(maker))
        if maker in self.makers:
            self.makers.remove(maker)

    def let_go(self, makers: list, tensors: list) -> None:
        """A call took these makers' -inf and made NaN or +inf of its own
        (recorded as the origin): ``tensors``, its output, are not by
        design (a tensor it wrote in place was one of theirs), and the
        makers' -inf led to that record, not to a result of its own."""
        for tensor in tensors:
            hit = self._tensors.get(id(tensor))
            if hit is not None and hit[0] is tensor:
                del self._tensors[id(tensor)]
            key = storage_key(tensor) if self._written else None
            if key is not None:
                self._written.pop(key, None)
        self.consumed(makers)

    def alias(self, pairs: Any) -> None:
        """L0: a Cell's inputs as the code passed them and as the Cell got
        them (through the gradient hook, a new tensor object of the same
        values): ``(given, hooked)`` pairs. A hooked input whose given
        tensor is a deferred maker's is that maker's too."""
        for given, hooked in pairs:
            if hooked is given or self.maker_of(hooked) is not None:
                continue
            maker = self.maker_of(given)
            if maker is not None:
                self._tensors[id(hooked)] = (hooked, maker)

    def adopt(self, tensors: Any, candidates: list, cache: HostCache) -> None:
        """L0: each -inf-only tensor among ``tensors`` that no deferred
        maker made, whose -inf lie where those of a tensor of one of
        ``candidates`` lie (the same elements in order, or that tensor's
        broadcast to its shape), becomes that maker's: the code between
        two sub-Cells (the enclosing Cell's ``astype``, ``reshape``, the
        mask added to scores) made it from the maker's -inf, as a new
        object. A hunt's finding: a float16 Dense's -inf, cast to float32
        before the loss Cell, made the enclosing Cell the origin and the
        Dense was never named; a mask a parent cast made the parent it."""
        wanted = {id(m) for m in candidates}
        if not wanted:
            return
        for tensor in iter_tensors(tensors):
            if self.maker_of(tensor) is not None or not only_negative_infinity(tensor, cache):
                continue
            array = cache.get(tensor).array
            if array is None:
                continue
            pattern = np.isneginf(array)
            for original, maker in list(self._tensors.values()):
                if id(maker) not in wanted:
                    continue
                other = cache.get(original).array
                if other is not None and _same_places(np.isneginf(other), pattern):
                    self._tensors[id(tensor)] = (tensor, maker)
                    break

    def returned(self, makers: list) -> None:
        """L0: the model returned these makers' -inf while MindSpore
        recorded it for a gradient (its output went into a gradient
        computation's forward pass)."""
        self._returned.update(id(m) for m in makers)

    def returned_makers(self) -> list:
        """L0: the deferred makers whose -inf the model returned into a
        gradient computation (:meth:`returned`), in order."""
        return [m for m in self.makers if id(m) in self._returned and id(m) in self._calls]

    def consume_returned(self) -> None:
        """L0, a window whose gradient computations returned finite values
        only (loss and gradients): the code after the model (the loss) took
        the -inf the model returned into them and turned it finite; only
        those makers are consumed (not one a forward-only pass returned)."""
        self.consumed([m for m in self.makers if id(m) in self._returned])

    def auxiliary(self, aux: list, labels: list, cache: HostCache) -> list:
        """``labels``: what a gradient computation asked with ``has_aux=True``
        returned holding inf/nan; ``aux``: its auxiliary outputs, (label,
        tensor) pairs (forward output 1 on, returned but not differentiated).
        When every one of ``labels`` is an auxiliary output holding a
        deferred maker's -inf by design (:meth:`excused`), the loss and the
        gradients being finite: the mask left the computation beside them
        (masked logits returned for an accuracy read on the host), no
        overflow; its makers count as consumed and ``labels`` are returned.
        Else none is: ``[]`` (a real overflow in an auxiliary output, a
        float16 logit at an unmasked place, is no maker's tensor or holds
        +inf or NaN beside the -inf). Only an L1 call that writes -inf on
        purpose (:func:`writes_on_purpose`) is excused so: at L0 any Cell,
        and at L1 any ``mindspore.jit`` region, returning -inf only is a
        maker, and nothing after it turned the -inf finite to show it was
        used as a mask (a review's finding: a float16 head overflowing to
        -inf, returned for a metric, got an all-clear). Before, such logits
        made the mask's maker an origin, at L1 and L0, in every clean step;
        at L0 and for regions they still do."""
        held = dict(aux)
        if not labels or any(label not in held for label in labels):
            return []
        if not all(self.excused(held[label], cache) for label in labels):
            return []
        makers = [self.maker_of(held[label]) for label in labels]
        if not all(writes_on_purpose(m) and not self.external(m) for m in makers):
            return []
        self.consumed(makers)
        return list(labels)

    def computed(self, tensors: list) -> None:
        """An overflowing checked call of the window returned ``tensors``
        (L1, recorded): its one-element ones are remembered, so that one
        given to a fill as its +inf value is no value given on purpose
        (:func:`positive_fill_tensors`). Past :data:`MAX_COMPUTED` none is
        taken for a given value any more."""
        for tensor in tensors:
            if getattr(tensor, "size", None) == 1 and id(tensor) not in self._computed:
                self._computed[id(tensor)] = tensor if len(self._computed) < MAX_COMPUTED else None

    def was_computed(self, tensor: Any) -> bool:
        """``tensor`` may be what an overflowing checked call of the window
        returned (:meth:`computed`); True once more were returned than are
        remembered."""
        if len(self._computed) >= MAX_COMPUTED:
            return True
        return id(tensor) in self._computed and self._computed[id(tensor)] is tensor

    def positive(self, makers: list) -> bool:
        """One of ``makers`` wrote +inf on purpose."""
        return any(id(m) in self._positive for m in makers)

    def excused(self, tensor: Any, cache: HostCache) -> bool:
        """A consumer sees ``tensor`` as finite: it is a deferred maker's
        output and holds -inf only (+inf only, for a maker that wrote +inf
        on purpose)."""
        maker = self.maker_of(tensor)
        return maker is not None and by_design_infinity(tensor, cache, id(maker) in self._positive)

    def makers_of(self, inputs: Any, cache: HostCache) -> list:
        """The makers of the by-design tensors among ``inputs``, once each, in order."""
        out: list = []
        for tensor in iter_tensors(inputs):
            if cache.finite(tensor):
                continue
            maker = self.maker_of(tensor)
            if maker is not None and maker not in out:
                out.append(maker)
        return out


def _same_places(theirs: np.ndarray, ours: np.ndarray) -> bool:
    """The True elements of ``theirs`` are those of ``ours``: the same
    elements in order (a reshape, a cast) or ``theirs`` broadcast to
    ``ours``'s shape (a mask added to scores)."""
    if theirs.size == ours.size:
        return bool(np.array_equal(theirs.reshape(-1), ours.reshape(-1)))
    try:
        return bool(np.array_equal(np.broadcast_to(theirs, ours.shape), ours))
    except ValueError:
        return False


def infinities_from_inputs(inputs: list, outputs: list, cache: HostCache, masks: bool = False) -> bool:
    """Each inf/nan of ``outputs`` lies where a non-finite input (broadcast
    to that output's shape) holds one: an elementwise call passing its
    inputs' infinities on made none of its own. ``masks``: a place where
    an input holds :data:`MASK_VALUE` or below counts too (a cast to
    float16 of a mask written with ``finfo(float32).min``). A -inf where a
    signed integer input holds its dtype's lowest value is that mask's
    too, whatever ``masks`` says (float16 scores with a -inf mask, plus an
    Int64 causal mask of ``iinfo(int64).min``: float16 holds it as -inf).
    True when that cannot be told (an input that does not broadcast, an
    unreadable array)."""
    bad = [cache.get(t).array for t in iter_tensors(inputs)
           if not cache.finite(t) or (masks and dtype_name(t) in FLOAT_DTYPES)]
    integers = [places for places in (integer_mask(cache.get(t).array) for t in iter_tensors(inputs)
                                      if dtype_name(t) in SIGNED_INTEGER_DTYPES) if places is not None]
    for tensor in outputs:
        after = cache.get(tensor).array
        if after is None:
            return True
        covered = np.zeros(after.shape, bool)
        for values in bad:
            if values is None:
                return True
            try:
                covered |= np.broadcast_to(~np.isfinite(values) | ((values <= MASK_VALUE) if masks else False),
                                           after.shape)
            except (ValueError, TypeError):
                return True
        for places in integers:
            try:
                covered |= np.broadcast_to(places, after.shape) & np.isneginf(after)
            except ValueError:
                return True
        if not bool(covered[~np.isfinite(after)].all()):
            return False
    return True


def judge_excusing(inputs: list, outputs: list, cache: HostCache, registry: ByDesign,
                   outside: frozenset = frozenset()) -> tuple[bool, bool]:
    """(inputs finite, outputs finite) of an entry, a by-design -inf input
    counting as finite (:meth:`ByDesign.excused`), and so does each input
    whose ``id`` is in ``outside`` (a -inf-only tensor no checked call made)."""
    finite = cache.finite
    inputs_finite = all(finite(t) or id(t) in outside or registry.excused(t, cache) for t in iter_tensors(inputs))
    outputs_finite = all(finite(t) for t in iter_tensors(outputs))
    return inputs_finite, outputs_finite


def outside_minus_infinity(inputs: list, cache: HostCache, registry: ByDesign) -> Optional[frozenset]:
    """The ``id`` of each non-finite input that no deferred maker made,
    when every one of them holds -inf only (None when one holds NaN or
    +inf; empty when there is none)."""
    found = []
    for tensor in iter_tensors(inputs):
        if cache.finite(tensor) or registry.maker_of(tensor) is not None:
            continue
        if not only_negative_infinity(tensor, cache):
            return None
        found.append(id(tensor))
    return frozenset(found)


def may_defer(api: str, from_maker: bool) -> bool:
    """An entry of ``api`` whose output holds -inf only may be deferred:
    it is a maker, or it passes a maker's -inf on (``from_maker``)."""
    word = api_word(api)
    return word in MAKERS or (from_maker and word in PASS_ON)


class Decision(enum.Enum):
    """What the checker does with an entry that overflowed (:func:`decide`)."""

    AS_USUAL = "as usual"        #: judge and record it as any other entry
    SKIP = "skip"                #: no record: deferred, or it consumed a by-design -inf
    AFTER_MAKERS = "after makers"  #: record the makers first (origins), then this entry, carried
    ORIGIN = "origin"            #: record it as the origin: its NaN/+inf is its own, not the -inf's it took


def decide(kind: str, call: Any, inputs: list, outputs: list, origin: bool, cache: HostCache,
           registry: ByDesign) -> tuple[Decision, list]:
    """The by-design verdict of an L1 entry that overflowed: (what to do,
    the deferred makers to record first). ``origin``: its plain verdict
    (finite inputs, non-finite output). May defer the entry in
    ``registry`` (the rules: the module docstring)."""
    if kind != "forward":
        # its own backward made the overflow from finite gradients: the -inf it made reached them; a backward
        # that only carried inf/nan coming from downstream says nothing of its -inf (the softmax consumed it)
        if registry.deferred(call) and origin:
            return Decision.AFTER_MAKERS, [call]
        return Decision.AS_USUAL, []
    inplace = bool(getattr(call, "inplace", False))
    if inplace:
        registry.inherit(call, cache)  # an in-place write into a tensor holding a deferred maker's -inf
    nonfinite = [t for t in iter_tensors(outputs) if not cache.finite(t)]
    given = positive_fill_tensors(call, cache, registry)
    if given:  # a +inf tensor given as the value to write: as a Python float("inf") is, not an input's inf
        inputs = [t for t in iter_tensors(inputs) if not any(t is g for g in given)]
        origin = bool(nonfinite) and all(cache.finite(t) for t in inputs)
    makers = registry.makers_of(inputs, cache)
    outside = outside_minus_infinity(inputs, cache, registry)
    positive = registry.positive(makers) if makers else fills_positive_infinity(call, given)
    only_minus_inf = all(by_design_infinity(t, cache, positive) for t in nonfinite)
    word = api_word(call.api)
    if makers or outside:
        inputs_finite, outputs_finite = (False, False) if outside is None else \
            judge_excusing(inputs, outputs, cache, registry, outside)
        if inputs_finite and outputs_finite:  # consumed by design (a softmax over a -inf mask)
            registry.consumed(makers)
            return Decision.SKIP, []
        if inputs_finite and word in ELEMENTWISE and word not in MAKERS and \
                not infinities_from_inputs(inputs, nonfinite, cache, masks=word in CASTS):
            # reviews' and hunts' findings: a float16 `d + penalty`, `scores * 1000` or a cast to float16
            # overflowing beside a +inf (or -inf) mask was passed on as the mask's own infinity (an all-clear) or
            # blamed on the mask's maker; inf/nan where no by-design input had one are its own
            registry.let_go(makers, nonfinite)
            return Decision.ORIGIN, []
        if inputs_finite and only_minus_inf and may_defer(call.api, True) and (makers or not registry.full()):
            if makers:  # passed on: deferred too, for its maker (one that wrote +inf when +inf is passed on)
                owner = makers[0]
                if positive and not all(only_negative_infinity(t, cache) for t in nonfinite):
                    owner = next(m for m in makers if registry.positive([m]))
                registry.defer(owner, nonfinite, on_behalf=call, inplace=inplace)
                registry.carrying(owner, makers, outside=bool(outside))
            else:  # a -inf no checked call made, passed on: this call is where it came in
                registry.defer(call, nonfinite, external=True, inplace=inplace)
            return Decision.SKIP, []
        if inputs_finite and not only_minus_inf and api_word(call.api) in KEEP_VALUES:  # s[i] = inf after a mask
            registry.let_go(makers, nonfinite)
            return Decision.ORIGIN, []
        if not inputs_finite:  # another input held NaN/+inf already: the overflow is that one's, carried on
            registry.consumed(makers)  # (scores made inf by a real overflow plus a -inf mask: its maker is no origin)
            return Decision.AS_USUAL, []
        # the -inf reached a judged result: its makers are the origin, recorded before this entry
        return (Decision.AFTER_MAKERS, makers) if makers else (Decision.AS_USUAL, [])
    if origin and nonfinite and not registry.full() and guarded_growth(call) and \
            all(only_positive_infinity(t, cache) for t in nonfinite):  # a loss scale's growth, kept only if finite
        registry.defer(call, nonfinite, inplace=inplace, positive=True)
        return Decision.SKIP, []
    if origin and nonfinite and only_minus_inf and not registry.full() and \
            (may_defer(call.api, False) or mask_cast(call.api, inputs, outputs, cache)
             or mask_sum(call.api, inputs, outputs, cache)):
        registry.defer(call, nonfinite, inplace=inplace, positive=positive)
        return Decision.SKIP, []
    return Decision.AS_USUAL, []


#: casts: a cast to float16 of a mask written with a large negative constant gives -inf (:func:`mask_cast`)
CASTS = frozenset({"to", "astype", "half", "bfloat16", "type", "cast", "Cast"})
#: the values masks are written with in place of -inf are this or lower (``-1e9``, ``finfo(float32).min``,
#: an integer dtype's lowest value); an activation that overflows a float16 cast is far above it (a review's
#: finding: a row of one repeated value, -299998, passed for a mask, and its overflow went unrecorded behind
#: a ReLU)
MASK_VALUE = -1e9
#: signed integer dtypes: a mask of theirs holds the dtype's lowest value where it masks (MindSpore 2.10's
#: ``ops.full(shape, float("-inf"))`` is Int64, filled with ``iinfo(int64).min``), which float16 holds as -inf
SIGNED_INTEGER_DTYPES = frozenset({"Int8", "Int16", "Int32", "Int64", "int8", "int16", "int32", "int64"})


def integer_mask(values: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """Where ``values`` (a host array of a signed integer tensor) hold
    their dtype's lowest value (``iinfo.min``): a mask's values, which a
    float16 result holds as -inf; None when they are not signed integers.
    Exactly that value, not any at or below :data:`MASK_VALUE`: a review's
    finding, float16 scores plus an Int64 time penalty of -1.5e9 ms were
    -inf where float16 cannot hold it, a real overflow that passed for a
    mask (a float32 penalty cast to float16 was recorded)."""
    if values is None or values.dtype.kind != "i":
        return None
    return values == np.iinfo(values.dtype).min


def mask_cast(api: str, inputs: list, outputs: list, cache: HostCache) -> bool:
    """A cast (``Tensor.to``, ``astype`` ...) whose -inf outputs all come
    from one and the same finite input value of :data:`MASK_VALUE` or below:
    a mask written with a large negative constant in place of -inf
    (``finfo(float32).min``, which mindtorch writes for
    ``masked_fill(mask, -inf)`` and ``s[mask] = -inf``, or ``-1e9``), which
    the narrower dtype cannot hold. Such a cast is a maker, deferred:
    recorded when its -inf reaches the loss or the gradients. A hunt's
    finding: with MSAdapter, ``masked_fill(mask, -inf)`` then
    ``.to(float16)`` before a softmax was an ORIGIN in a clean step, and
    with ``overflow_nums`` 1 the real NaN of the next step went unchecked.
    The input may be a signed integer mask (:data:`SIGNED_INTEGER_DTYPES`):
    another hunt's, MindSpore 2.10's ``ops.full((n, n), float("-inf"))``
    is Int64 holding ``iinfo(int64).min``, and a causal mask
    ``triu(full(-inf), 1).astype(float16)`` was an ORIGIN in every clean
    step. A +inf (``iinfo.max``, ``70000``) is no mask, nor is a -inf from
    a value above :data:`MASK_VALUE` (``-70000``)."""
    if api_word(api) not in CASTS:
        return False
    source = next((t for t in iter_tensors(inputs)
                   if dtype_name(t) in FLOAT_DTYPES or dtype_name(t) in SIGNED_INTEGER_DTYPES), None)
    result = next((t for t in iter_tensors(outputs) if dtype_name(t) in FLOAT_DTYPES), None)
    if source is None or result is None or not cache.finite(source):
        return False
    before, after = cache.get(source).array, cache.get(result).array
    if before is None or after is None or before.shape != after.shape:
        return False
    values = before[np.isneginf(after)]
    return values.size > 0 and float(values.flat[0]) <= MASK_VALUE and bool((values == values.flat[0]).all())


#: additions: the sum of two masks written with large negative constants gives -inf (:func:`mask_sum`)
SUMS = frozenset({"__add__", "__radd__", "__iadd__", "add", "add_", "Add", "AddExt", "Adds"})


def mask_sum(api: str, inputs: list, outputs: list, cache: HostCache) -> bool:
    """An addition from finite inputs whose -inf outputs each lie where
    every floating tensor input (broadcast to the output's shape) holds
    exactly its dtype's lowest finite value (``finfo.min``: float32's
    -3.4028235e38, float16's -65504): two masks written with that value in
    place of -inf, added together (mindtorch writes it for a causal
    ``masked_fill(mask, -inf)`` and for a padding mask's ``pad[i] = -inf``;
    their sum is -inf where both mask). A maker, deferred as
    :func:`mask_cast`'s cast is. A hunt's finding: a clean attention step
    with both masks was an ORIGIN at ``Tensor.__add__``. A review's: any
    value at or below -1e9 in one input passed real overflows of an
    addition (-2e38 + -2e38) for a mask; every input must be at the lowest
    value there. Or, at a place, a signed integer input holds its
    dtype's lowest value (float16 scores plus an Int64 mask of
    ``iinfo(int64).min``, which float16 holds as -inf: another hunt's
    finding, an ORIGIN at ``Tensor.__add__`` in every clean step), or an
    input of a wider floating dtype than the result holds one mask value
    (:func:`_cast_mask`)."""
    if api_word(api) not in SUMS:
        return False
    result = next((t for t in iter_tensors(outputs) if dtype_name(t) in FLOAT_DTYPES), None)
    after = cache.get(result).array if result is not None else None
    if after is None:
        return False
    places = np.isneginf(after)
    if not places.any():
        return False
    addends, lowest, masked = 0, np.ones(after.shape, bool), np.zeros(after.shape, bool)
    for tensor in iter_tensors(inputs):
        name = dtype_name(tensor)
        if name in SIGNED_INTEGER_DTYPES:
            places_masked = integer_mask(cache.get(tensor).array)
            if places_masked is not None:
                try:
                    masked |= np.broadcast_to(places_masked, after.shape)
                except ValueError:
                    return False
            continue
        if name not in FLOAT_DTYPES or not cache.finite(tensor):
            continue
        values = cache.get(tensor).array
        if values is None or values.dtype.kind != "f":
            return False
        try:
            spread = np.broadcast_to(values, after.shape)
        except ValueError:
            return False
        if after.dtype.kind == "f" and values.dtype.itemsize > after.dtype.itemsize:
            cast = _cast_mask(spread)  # a wider mask the executor cast to the result's dtype (a Cell given float16)
            if cast is not None:
                masked |= cast
                continue
        lowest &= spread == np.finfo(values.dtype).min
        addends += 1
    return bool((masked | (lowest if addends >= 2 else False))[places].all())


def _cast_mask(values: np.ndarray) -> Optional[np.ndarray]:
    """Where ``values`` (an addend of a wider dtype than the addition's
    result) hold one and the same value of :data:`MASK_VALUE` or below, or
    None when they hold none or more than one such value. Inside a Cell
    given float16 (``to_float``, amp O2/O3) MindSpore casts every operator's
    floating inputs to float16 before the kernel, so a float32 additive mask
    of ``finfo(float32).min`` is -inf there, as :func:`mask_cast`'s
    explicit cast makes it (a review's finding: float16 attention scores
    plus the usual float32 mask were an ORIGIN at ``Tensor.__add__`` in a
    clean step, and with ``overflow_nums`` 1 the next step's real overflow
    went unchecked)."""
    low = values <= MASK_VALUE
    if not low.any():
        return None
    found = values[low]
    return low if bool((found == found.flat[0]).all()) else None


def decide_cell(kind: str, call: Any, inputs: list, outputs: list, verdict: Any, cache: HostCache,
                registry: ByDesign, params_finite: Callable[[], bool]) -> tuple[Decision, list]:
    """The by-design verdict of an L0 entry (a ``CellCall`` or a
    ``ParamGradCall``): (what to do, the deferred makers to record first).
    ``verdict``: its plain verdict (``overflow``, ``origin``);
    ``params_finite``: whether the Cell's own Parameters were finite
    (read only when the call may be deferred). The rules are L1's
    (:func:`decide`), a Cell standing for an API: the module docstring,
    "At level L0". May defer the entry in ``registry`` and tell its
    enclosing call (``by_design_inside``)."""
    if kind != "forward":  # the maker's own backward (or its Parameters' gradients) made it from finite gradients
        owner = call if kind == "backward" else getattr(call, "owner", None)
        if verdict.overflow and verdict.origin and owner is not None and registry.deferred(owner):
            return Decision.AFTER_MAKERS, [owner]
        # a Cell that passed a maker's -inf on (a Dense given it): its gradients overflowing from finite ones (the
        # weight's, x^T g) come from that -inf, which reached them: the maker first (a fresh user's finding: a
        # float16 Cell overflowing to -inf, then a Dense: that Dense's parameters_grad was called the origin)
        passed = registry.passed_on_by((call,) if kind == "backward" else getattr(call, "owner_calls", None) or ())
        if verdict.overflow and verdict.origin and passed:
            return Decision.AFTER_MAKERS, passed
        returned = registry.returned_makers() if verdict.overflow and not verdict.origin else []
        if returned:  # a gradient carrying inf/nan while the model's -inf went into the loss: that -inf reached it
            return Decision.AFTER_MAKERS, returned
        return Decision.AS_USUAL, []
    inside = [m for m in getattr(call, "by_design_inside", None) or () if registry.deferred(m)]
    if not verdict.overflow:  # its own code between its sub-Cells consumed their -inf (a log_softmax)
        registry.consumed(inside)
        return Decision.AS_USUAL, []
    registry.alias(getattr(call, "given", None) or ())
    # the -inf of a maker deferred inside an enclosing Cell (or the model), which its code cast or reshaped: also
    # when a Cell between them handed it on (the model casts a float16 Cell's -inf for a SequentialCell head)
    enclosing = [m for holder in _enclosing(call) for m in getattr(holder, "by_design_inside", None) or ()
                 if registry.deferred(m)]
    if enclosing:
        registry.adopt(inputs, enclosing, cache)
    makers = registry.makers_of(inputs, cache)
    outside = outside_minus_infinity(inputs, cache, registry)
    nonfinite = [t for t in iter_tensors(outputs) if not cache.finite(t)]
    only_minus_inf = bool(nonfinite) and all(only_negative_infinity(t, cache) for t in nonfinite)
    model = getattr(call, "is_model", False)
    if makers or outside:
        inputs_finite, outputs_finite = (False, False) if outside is None else \
            judge_excusing(inputs, outputs, cache, registry, outside)
        if inputs_finite and outputs_finite:  # consumed by design (an attention Cell given a -inf mask)
            registry.consumed(makers)
            return Decision.SKIP, []
        if inputs_finite and only_minus_inf and not model and (makers or not registry.full()) and \
                (makers or not trainable_among(call, outside)):
            if makers:  # passed on: deferred too, for its maker
                registry.defer(makers[0], nonfinite, on_behalf=call)
                registry.passed_on(makers[0], call)
                _tell(registry, call, makers[0])
            else:  # a -inf no checked Cell made (a mask built before the loop), passed on: it came in here
                registry.defer(call, nonfinite, external=True)
                _tell(registry, call, call)
            return Decision.SKIP, []
        if not inputs_finite:  # another input held NaN/+inf already: the overflow is that one's, carried on
            registry.consumed(makers)
            return Decision.AS_USUAL, []
        # the -inf reached a judged result (mask - mask is NaN): its makers are the origin, recorded before this
        return (Decision.AFTER_MAKERS, makers) if makers else (Decision.AS_USUAL, [])
    if not verdict.origin or model:
        return Decision.AS_USUAL, []
    if only_minus_inf and params_finite():
        if inside:  # it returns what a sub-Cell made by design (or its own -inf beside it): the same maker's
            registry.defer(inside[0], nonfinite, on_behalf=call)
            _tell(registry, call, inside[0])
            return Decision.SKIP, []
        if getattr(call, "child_overflow", False):
            # a sub-Cell's output already held the -inf (its weights held it, or it overflowed): carried on, as
            # +inf is (a fresh user's finding: the Cell summing a -inf Dense's output was the ORIGIN)
            return Decision.AS_USUAL, []
        if not registry.full() and not getattr(call, "library", False):  # nn.Dense writes no mask: an overflow
            registry.defer(call, nonfinite)
            _tell(registry, call, call)
            return Decision.SKIP, []
    elif inside and params_finite():  # NaN/+inf from finite values: its own construct made it
        call.own_construct = own_construct_beside(call.class_name, inside)
        registry.consumed(inside)
    return Decision.AS_USUAL, []


def _enclosing(call: Any) -> list:
    """L0: the calls enclosing ``call``, innermost first: its parent
    Cells' calls, then the model's."""
    out, node = [], getattr(call, "parent", None)
    while node is not None:
        out.append(node)
        node = getattr(node, "parent", None)
    top = getattr(call, "top", None)
    return out + [top] if top is not None else out


def trainable_among(call: Any, ids: Any) -> bool:
    """L0: one of the tensors whose ``id`` is in ``ids`` is a trainable
    Parameter ``call`` got (as given, or through its gradient hook): an
    update filled it with -inf, which is no mask (as at L1, where its probe
    reads NaN: ``check.probes.TrainableSum``)."""
    def trainable(tensor: Any) -> bool:
        return is_parameter(tensor) and getattr(tensor, "requires_grad", True) is not False

    given = {id(hooked): original for original, hooked in getattr(call, "given", None) or ()}
    for tensor in iter_tensors([call.args, call.kwargs]):
        if id(tensor) in ids and (trainable(tensor) or trainable(given.get(id(tensor)))):
            return True
    return False


def _tell(registry: ByDesign, call: Any, maker: Any) -> None:
    """:func:`tell_enclosing`; a Cell called by no checked Cell (from the
    loss function or the loop, not inside the model given to ``start()``)
    hands its -inf to code outside the Cells: while MindSpore records it
    for a gradient, that -inf goes into the gradient computation, as a
    model's result does (:meth:`ByDesign.returned`). A hunt's finding: a
    policy sub-Cell the loss function called was an ORIGIN in every clean
    step."""
    if getattr(call, "parent", None) is None and getattr(call, "top", None) is None:
        if getattr(call, "grad_mode", False):
            registry.returned([maker])
        return
    tell_enclosing(call, maker)


def tell_enclosing(call: Any, maker: Any) -> None:
    """L0: ``call`` was deferred (for ``maker``): the call that encloses it
    (its parent Cell's, else the model's) now holds a -inf by design made
    inside it (``by_design_inside``), which its own code may consume,
    pass on or compute with."""
    holder = getattr(call, "parent", None) or getattr(call, "top", None)
    if holder is None:
        return
    inside = getattr(holder, "by_design_inside", None)
    if inside is None:
        inside = holder.by_design_inside = []
    if maker not in inside:
        inside.append(maker)


def settle_model(top: Any, cache: HostCache, registry: ByDesign) -> tuple[bool, Optional[str]]:
    """L0, the call of a model given to ``start()`` (a ``TopCall``) in which
    a sub-Cell was deferred (``by_design_inside``): (skip it, the note for
    its own-construct record). Its result finite: its own code consumed
    the -inf (nothing to say). Its non-finite values -inf only from finite
    inputs: it returns the -inf (skipped; the maker is recorded when the
    window closes, nothing having consumed it). NaN or +inf: its own code
    made it, beside the -inf it took: the note names the maker, which is
    not recorded."""
    inside = [m for m in getattr(top, "by_design_inside", None) or () if registry.deferred(m)]
    if not inside:
        return False, None
    nonfinite = [t for t in iter_tensors(top.output) if not cache.finite(t)]
    if not nonfinite:
        registry.consumed(inside)
        return False, None
    inputs_finite = all(cache.finite(t) for t in iter_tensors([top.args, top.kwargs]))
    if all(only_negative_infinity(t, cache) for t in nonfinite):
        # a Softmax Cell may have taken it too: it still reached the result. Only the makers whose -inf is
        # in the result, when they are known (a hunt's finding: a mask a softmax consumed was recorded as
        # the first origin because another mask reached the result)
        reached = [m for m in registry.makers_of(top.output, cache) if m in inside]
        registry.unconsume(reached or inside)
        if getattr(top, "grad_mode", False):
            registry.returned(reached or inside)
        return inputs_finite, None
    registry.consumed(inside)
    return False, by_design_note(inside)


def by_design_note(makers: list) -> str:
    """What an own-construct record adds when the construct also took a
    -inf a sub-Cell made by design."""
    names = ", ".join(getattr(m, "name", "?") for m in makers)
    return (f"; its construct also took the -inf that {names} made by design (a mask, not recorded), which level "
            "L1 tells apart from the API that made the inf/nan")


def own_construct_beside(class_name: str, makers: list) -> str:
    """The record's message of an L0 Cell whose own construct made NaN or
    +inf from finite values, taking a -inf ``makers`` made by design."""
    return (f"inf/nan started in {class_name}.construct itself, not in a sub-Cell: its inputs and Parameters were "
            "finite and its sub-Cells returned finite values or -inf by design; use level L1 to see the API"
            + by_design_note(makers))
