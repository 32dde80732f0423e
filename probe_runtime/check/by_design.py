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
  of the step, and this call as carried;
* the maker's own backward entry overflows (``where(p > 0, log(p), 0)``:
  ``0 * (1 / 0)`` is NaN): the maker is recorded first, likewise;
* the window closes with a gradient computation whose result holds
  inf/nan and no record explains it, or with a maker whose -inf no
  checked call ever took (a forward-only loop returning ``log(0)``: the
  -inf is the result): the makers are recorded then.

A -inf that no checked call made (a mask built with numpy before the
loop, ``Tensor(np.triu(np.full(..., -inf)))``, added to the scores) is
judged the same way: a call taking it that returns finite values
consumes it; one passing it on elementwise is deferred, as the place it
came in; when it reaches a judged result, that call is recorded then,
carried, with ``entered`` saying the -inf came from outside. At L0, a Cell
whose non-finite inputs hold -inf only and whose outputs are finite (an
attention Cell given a -inf mask) consumed it: no record.

Which APIs may make -inf by design, and which pass it on, is data
(:data:`MAKERS`, :data:`PASS_ON`), keyed by the API's name without its
prefix (``Functional.masked_fill`` and ``Tensor.masked_fill`` alike), as
``provenance.JUDGED_OUTPUTS`` is for BatchNorm's workspace outputs. NaN and
+inf are never by design. Level L0 defers nothing: a Cell's output is
judged as it is.

Example::

    registry = ByDesign()
    registry.defer(call, [mask])       # masked_fill's -inf output
    registry.excused(mask, cache)      # True: a consumer sees it as finite
"""
from __future__ import annotations

import enum
from typing import Any, Optional

import numpy as np

from .verdict import FLOAT_DTYPES, HostCache, dtype_name, iter_tensors

#: APIs whose -inf output may be by design (the name after the prefix;
#: MindSpore ``ops``/``mint``/``Tensor`` functions and their primitives)
MAKERS = frozenset({
    "masked_fill", "masked_fill_", "fill", "fill_", "full", "full_like", "where", "log", "log_softmax",
    "MaskedFill", "FillV2", "Fill", "Select", "Log", "LogSoftmax", "FullLike", "Full",
})
#: APIs that pass a by-design -inf on elementwise: their -inf output, made
#: from a by-design input, is by design too
PASS_ON = frozenset({
    "__add__", "__radd__", "__iadd__", "__sub__", "__isub__", "add", "sub", "where", "masked_fill",
    "masked_fill_", "maximum", "minimum", "astype", "to", "float", "half", "cast", "reshape", "view",
    "expand_dims", "unsqueeze", "squeeze", "broadcast_to", "expand", "expand_as", "transpose", "permute",
    "swapaxes", "__getitem__", "tile", "repeat", "contiguous", "clone", "copy", "flatten", "tril", "triu",
    "Add", "Sub", "Select", "MaskedFill", "Maximum", "Minimum", "Cast", "Reshape", "ExpandDims", "Squeeze",
    "BroadcastTo", "Transpose", "StridedSlice", "Tile", "Tril", "Triu", "Identity",
})
#: makers remembered per window at most (their tensors are held until it closes)
MAX_DEFERRED = 16


def api_word(api: str) -> str:
    """``"Functional.masked_fill"`` -> ``"masked_fill"``; ``"Primitive.Log"`` -> ``"Log"``."""
    return api.split(".", 1)[1] if "." in api else api


def only_negative_infinity(tensor: Any, cache: HostCache) -> bool:
    """True when ``tensor`` is floating and its non-finite values are all
    -inf (at least one): no NaN, no +inf."""
    if dtype_name(tensor) not in FLOAT_DTYPES or cache.finite(tensor):
        return False
    array = cache.get(tensor).array
    if array is None or array.size == 0:
        return False
    flat = array.reshape(-1)
    return not bool(np.isnan(flat).any()) and not bool(np.isposinf(flat).any())


class ByDesign:
    """The deferred makers of one window and their -inf tensors.

    Attributes:
        makers: the deferred forward entries, in the order deferred (each
            holds its tensors until recorded or the window closes).
    """

    def __init__(self) -> None:
        self.makers: list = []
        self._tensors: dict[int, tuple[Any, Any]] = {}  # id(tensor) -> (tensor, maker)
        self._calls: set[int] = set()
        self._consumed: set[int] = set()  # makers whose -inf a checked call took and turned finite
        self._external: set[int] = set()  # deferred calls that passed on a -inf no checked call made

    def __bool__(self) -> bool:
        return bool(self.makers)

    def clear(self) -> None:
        """The window closed: let everything go."""
        self.makers, self._tensors, self._calls, self._consumed, self._external = [], {}, set(), set(), set()

    def full(self) -> bool:
        """No more makers are remembered in this window."""
        return len(self.makers) >= MAX_DEFERRED

    def defer(self, maker: Any, tensors: list, on_behalf: Optional[Any] = None, external: bool = False) -> None:
        """Remember ``tensors`` (-inf by design) as made by ``maker``; a
        call passing a maker's -inf on (``on_behalf``: that call) adds its
        outputs under the same maker. ``external``: ``maker`` passed on a
        -inf no checked call made (recorded carried, not as the origin)."""
        if on_behalf is None and id(maker) not in self._calls:
            self.makers.append(maker)
            self._calls.add(id(maker))
            if external:
                self._external.add(id(maker))
        for tensor in tensors:
            self._tensors[id(tensor)] = (tensor, maker)

    def maker_of(self, tensor: Any) -> Optional[Any]:
        """The deferred maker of ``tensor``, or None."""
        hit = self._tensors.get(id(tensor))
        return hit[1] if hit is not None and hit[0] is tensor else None

    def deferred(self, call: Any) -> bool:
        """``call`` is a deferred maker not recorded yet."""
        return id(call) in self._calls

    def external(self, maker: Any) -> bool:
        """``maker`` passed on a -inf that no checked call made."""
        return id(maker) in self._external

    def consumed(self, makers: list) -> None:
        """A checked call took these makers' -inf and returned finite values."""
        self._consumed.update(id(m) for m in makers)

    def unconsumed(self) -> list:
        """The deferred makers whose -inf no checked call turned finite."""
        return [m for m in self.makers if id(m) not in self._consumed]

    def recorded(self, maker: Any) -> None:
        """``maker`` was recorded: not deferred any more (its tensors stay
        by design for the consumers still to be judged)."""
        self._calls.discard(id(maker))
        if maker in self.makers:
            self.makers.remove(maker)

    def excused(self, tensor: Any, cache: HostCache) -> bool:
        """A consumer sees ``tensor`` as finite: it is a deferred maker's
        output and holds -inf only."""
        return self.maker_of(tensor) is not None and only_negative_infinity(tensor, cache)

    def makers_of(self, inputs: Any, cache: HostCache) -> list:
        """The makers of the by-design tensors among ``inputs``, once each, in order."""
        out: list = []
        for tensor in iter_tensors(inputs):
            maker = self.maker_of(tensor)
            if maker is not None and maker not in out and not cache.finite(tensor):
                out.append(maker)
        return out


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


def decide(kind: str, call: Any, inputs: list, outputs: list, origin: bool, cache: HostCache,
           registry: ByDesign) -> tuple[Decision, list]:
    """The by-design verdict of an L1 entry that overflowed: (what to do,
    the deferred makers to record first). ``origin``: its plain verdict
    (finite inputs, non-finite output). May defer the entry in
    ``registry`` (the rules: the module docstring)."""
    if kind != "forward":
        if registry.deferred(call):  # its own backward overflowed: the -inf it made reached the gradients
            return Decision.AFTER_MAKERS, [call]
        return Decision.AS_USUAL, []
    makers = registry.makers_of(inputs, cache)
    outside = outside_minus_infinity(inputs, cache, registry)
    nonfinite = [t for t in iter_tensors(outputs) if not cache.finite(t)]
    only_minus_inf = all(only_negative_infinity(t, cache) for t in nonfinite)
    if makers or outside:
        inputs_finite, outputs_finite = (False, False) if outside is None else \
            judge_excusing(inputs, outputs, cache, registry, outside)
        if inputs_finite and outputs_finite:  # consumed by design (a softmax over a -inf mask)
            registry.consumed(makers)
            return Decision.SKIP, []
        if inputs_finite and only_minus_inf and may_defer(call.api, True) and (makers or not registry.full()):
            if makers:  # passed on: deferred too, for its maker
                registry.defer(makers[0], nonfinite, on_behalf=call)
            else:  # a -inf no checked call made, passed on: this call is where it came in
                registry.defer(call, nonfinite, external=True)
            return Decision.SKIP, []
        # the -inf reached a judged result: its makers are the origin, recorded before this entry
        return (Decision.AFTER_MAKERS, makers) if makers else (Decision.AS_USUAL, [])
    if origin and nonfinite and only_minus_inf and may_defer(call.api, False) and not registry.full():
        registry.defer(call, nonfinite)
        return Decision.SKIP, []
    return Decision.AS_USUAL, []


def consumed_by_cell(inputs: list, outputs: list, cache: HostCache) -> bool:
    """L0: a Cell whose non-finite inputs hold -inf only and whose outputs
    are finite consumed a -inf made by design (an attention Cell given a
    -inf mask)."""
    if not all(cache.finite(t) for t in iter_tensors(outputs)):
        return False
    bad = [t for t in iter_tensors(inputs) if not cache.finite(t)]
    return bool(bad) and all(only_negative_infinity(t, cache) for t in bad)
