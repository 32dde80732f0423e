"""Sentinel checks: a cheap per-step watch that turns on exact checks.

With ``checks="sentinel"`` (or ``PROBE_CHECKS=sentinel``) nothing is
intercepted and no Cell is hooked. While a window is open,
:class:`GradSentinel` wraps the two MindSpore functions every PyNative
gradient computation runs through (``mindspore.grad``,
``value_and_grad``, ``GradOperation``, ``vjp``, ``TrainOneStepCell``) and
holds what they return: the differentiated function's outputs (the loss)
and the gradients. They are judged when the window closes (or every
``HOLD_CAP`` computations); when one holds inf/nan, one record of kind
``sentinel`` goes to that step's ``overflow.json`` and the debugger runs
exact checks from its next ``start()`` on. It names no call, and it does
not see overflow that reaches neither the loss nor a gradient
(``docs/checks.md``); why it exists and what it costs:
``docs/runtime-design.md``.

Example::

    sentinel = GradSentinel(on_error)
    sentinel.install()
    loss, grads = grad_fn(x, y)          # held, not read
    sentinel.uninstall()
    sentinel.resolve()                   # None, or {"nonfinite": ["gradient of fc.weight"], ...}
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from .check.verdict import HostCache, is_floating, is_tensor, iter_tensors
from .hooks.frames import capture_frames
from .hooks.guard import inside_tool, tool_section
from .hooks.patching import Patches

#: the MindSpore functions every PyNative gradient computation runs through
FORWARD, BACKWARD = "_pynative_func_grad_forward", "_pynative_func_grad_backward"
#: computations (a forward output, a gradient result) held before they are judged within a window
HOLD_CAP = 4


class Held:
    """What one gradient computation returned, kept until the window closes.

    Attributes:
        kind: ``"output"`` (the differentiated function's forward output) or
            ``"gradient"``.
        tensors: (label, tensor) pairs: ``"forward output 0"``, ``"gradient of
            <Parameter name>"`` or ``"gradient w.r.t. input 0"``.
        frames: the caller's frames (``hooks.frames.capture_frames``).
    """

    def __init__(self, kind: str, tensors: list[tuple[str, Any]], frames: tuple) -> None:
        self.kind = kind
        self.tensors = tensors
        self.frames = frames


def _weight_list(weights: Any) -> list:
    """The Parameters a gradient computation was asked for, as a list:
    None -> [], one Parameter -> [it] (never iterated: iterating a tensor
    slices it row by row), a list/tuple/ParameterTuple -> its items."""
    if weights is None or is_tensor(weights):
        return [] if weights is None else [weights]
    return list(weights) if isinstance(weights, (list, tuple)) else []


def _positions(grad_position: Any) -> Optional[list]:
    """``grad_position`` as a list of input positions, or None."""
    if isinstance(grad_position, int) and not isinstance(grad_position, bool):
        return [grad_position]
    if isinstance(grad_position, (list, tuple)) and all(isinstance(p, int) for p in grad_position):
        return list(grad_position)
    return None


def label_gradients(out: Any, weights: Any, grad_position: Any = None) -> list[tuple[str, Any]]:
    """(label, tensor) for each tensor of a gradient result (no dtype is
    read here: the first dtype read of a fresh tensor waits for the device).

    ``out`` is what ``_pynative_func_grad_backward`` returned: the
    gradients w.r.t. the inputs at ``grad_position`` (a tensor for one
    position, else a tuple with one item per position, an item a tensor or
    a tuple for a tuple input), w.r.t. ``weights`` (a tuple in their order),
    or both as ``(inputs' part, weights' part)``. Labels: ``"gradient of
    <Parameter name>"``, ``"gradient w.r.t. input <position>"`` (``"...
    input 1 item 0"`` inside a tuple input); when the layout is not one of
    these, the inputs' gradients are numbered in order.
    """
    params = _weight_list(weights)
    tensors = list(iter_tensors(out))
    n_weights = len(params) if params and len(params) <= len(tensors) else 0
    if n_weights == len(tensors):
        inputs_part: Any = ()
    elif n_weights and isinstance(out, tuple) and len(out) == 2 and len(list(iter_tensors(out[1]))) == n_weights:
        inputs_part = out[0]
    else:
        inputs_part, n_weights = out, 0
    positions = _positions(grad_position)
    labelled: list[tuple[str, Any]] = []
    if is_tensor(inputs_part):
        where = positions[0] if positions and len(positions) == 1 else 0
        labelled.append((f"gradient w.r.t. input {where}", inputs_part))
    elif isinstance(inputs_part, (tuple, list)):
        aligned = positions if positions and len(positions) == len(inputs_part) else None
        for k, item in enumerate(inputs_part):
            where = aligned[k] if aligned else k
            if is_tensor(item):
                labelled.append((f"gradient w.r.t. input {where}", item))
            else:
                labelled.extend((f"gradient w.r.t. input {where} item {j}", t)
                                for j, t in enumerate(iter_tensors(item)))
    for param, tensor in zip(params, tensors[len(tensors) - n_weights:] if n_weights else []):
        labelled.append((f"gradient of {getattr(param, 'name', '?')}", tensor))
    return labelled


class GradSentinel:
    """Wraps MindSpore's gradient entry points while installed and holds
    what they return (see the module docstring).

    Args:
        on_error: called with (where, exception) for a fault inside the
            tool (the wrapped call's result is returned all the same).
        on_device: reduce on the device first (``mindspore.amp.all_finite``)
            and read on the host only when something is not finite; for
            backends other than CPU.
    """

    #: the installed sentinel: one at a time in a process (a second one's
    #: wrappers would wrap the first one's, and their removal would cross)
    _active: Optional["GradSentinel"] = None

    def __init__(self, on_error: Callable[[str, BaseException], None], *, on_device: bool = False) -> None:
        self.on_error = on_error
        self.on_device = on_device
        self._bad: list[str] = []  # labels judged not finite in this window
        self._frames: Optional[tuple] = None
        self._computations = 0
        self.held: list[Held] = []
        self._patches = Patches()
        self._plan: Optional[list[tuple[Any, str, Callable]]] = None

    @property
    def installed(self) -> bool:
        """True while the wrappers are in place."""
        return bool(self._patches)

    def _build_plan(self) -> list[tuple[Any, str, Callable]]:
        from mindspore.ops.composite import base

        if not callable(vars(base).get(FORWARD)):
            return self._executor_plan()
        plan: list[tuple[Any, str, Callable]] = []
        for attr, wrap in ((FORWARD, self._wrap_forward), (BACKWARD, self._wrap_backward)):
            original = vars(base).get(attr)
            if not callable(original):  # pragma: no cover - another MindSpore layout
                raise RuntimeError(f"mindspore.ops.composite.base.{attr} not found: sentinel checks need it "
                                   "(use exact checks with this MindSpore)")
            wrapper = wrap(original)
            for name, module in list(sys.modules.items()):
                if name.startswith("mindspore") and module is not None and vars(module).get(attr) is original:
                    plan.append((module, attr, wrapper))
        return plan

    def _executor_plan(self) -> list[tuple[Any, str, Callable]]:
        """The wrappers for a MindSpore without the two gradient functions
        (2.7: ``GradOperation`` and ``_Grad`` run the forward and call the
        PyNative executor themselves): instance attributes over three methods
        of the one ``mindspore.common.api._pynative_executor``, which every
        module shares: ``end_graph(fn, output, ...)`` gets the differentiated
        function's forward output (also a Cell's with ``set_grad()`` called
        outside a gradient computation), ``grad`` and ``grad_aux(fn, grad_op,
        weights, grad_position, ...)`` return the gradients."""
        from mindspore.common import api

        executor = getattr(api, "_pynative_executor", None)
        plan: list[tuple[Any, str, Callable]] = []
        for attr, wrap in (("end_graph", self._wrap_end_graph), ("grad", self._wrap_backward),
                           ("grad_aux", self._wrap_backward)):
            original = getattr(executor, attr, None)
            if not callable(original):  # pragma: no cover - another MindSpore layout
                raise RuntimeError(f"neither mindspore.ops.composite.base.{FORWARD} nor "
                                   f"mindspore.common.api._pynative_executor.{attr} found: sentinel checks need "
                                   "them (use exact checks with this MindSpore)")
            plan.append((executor, attr, wrap(original)))
        return plan

    def install(self) -> None:
        """Put the wrappers in place (two module globals per MindSpore
        module that holds them; no class is touched).

        Raises:
            RuntimeError: this MindSpore has no such functions, or another
                debugger's sentinel is installed.
        """
        if self._patches:
            return
        if GradSentinel._active is not None and GradSentinel._active is not self:
            raise RuntimeError("another PrecisionDebugger is already started in this process")
        if self._plan is None:
            self._plan = self._build_plan()
        self._patches.apply(self._plan)
        GradSentinel._active = self

    def uninstall(self) -> None:
        """Put the originals back (safe to call twice)."""
        self._patches.remove()
        if GradSentinel._active is self:
            GradSentinel._active = None

    def _wrap_forward(self, original: Callable) -> Callable:
        def forward(fn: Any, *args: Any, **kwargs: Any) -> Any:
            outputs = original(fn, *args, **kwargs)
            if not inside_tool():
                try:
                    tensors = [(f"forward output {i}", t) for i, t in enumerate(iter_tensors(outputs))]
                    self._hold(Held("output", tensors, capture_frames(sys._getframe(1))))
                except Exception as err:
                    self.on_error("in the sentinel's forward wrapper", err)
            return outputs

        forward.__probe_original__ = original  # type: ignore[attr-defined]
        return forward

    def _wrap_end_graph(self, original: Callable) -> Callable:
        def end_graph(fn: Any, output: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(fn, output, *args, **kwargs)
            if not inside_tool():
                try:
                    tensors = [(f"forward output {i}", t) for i, t in enumerate(iter_tensors(output))]
                    self._hold(Held("output", tensors, capture_frames(sys._getframe(1))))
                except Exception as err:
                    self.on_error("in the sentinel's forward wrapper", err)
            return result

        end_graph.__probe_original__ = original  # type: ignore[attr-defined]
        return end_graph

    def _wrap_backward(self, original: Callable) -> Callable:
        def backward(fn: Any, grad_op: Any, weights: Any, *rest: Any) -> Any:
            out = original(fn, grad_op, weights, *rest)
            if not inside_tool():
                try:
                    self._hold(Held("gradient", label_gradients(out, weights, rest[0] if rest else None),
                                    capture_frames(sys._getframe(1))))
                except Exception as err:
                    self.on_error("in the sentinel's backward wrapper", err)
            return out

        backward.__probe_original__ = original  # type: ignore[attr-defined]
        return backward

    def _hold(self, item: Held) -> None:
        """Keep ``item`` until the window closes; after ``HOLD_CAP``
        computations in one window (gradient accumulation, many micro
        batches) judge what is held now, so references to at most
        ``HOLD_CAP`` computations' tensors are kept, never a whole window's."""
        self.held.append(item)
        if len(self.held) >= HOLD_CAP:
            self._judge()

    def _judge(self) -> None:
        """Judge everything held and forget it; what was not finite is
        kept (labels, and the frames of the first computation with one)."""
        held, self.held = self.held, []
        if not held:
            return
        self._computations += len(held)
        section = tool_section()
        section.__enter__()
        try:
            if self.on_device and self._all_finite_on_device(held):
                return
            cache = HostCache()
            for item in held:
                for label, tensor in item.tensors:
                    if not cache.finite(tensor):
                        self._bad.append(label)
                        if self._frames is None:
                            self._frames = item.frames
        finally:
            section.__exit__()

    def resolve(self) -> Optional[dict]:
        """Judge what is still held (one host read per distinct tensor) and
        return what was not finite in the window, or None; starts afresh.

        Returns:
            None, or ``{"nonfinite": [labels, first seen first], "frames":
            frames of the first computation that held one, "computations":
            how many were judged}``.
        """
        self._judge()
        bad, frames, computations = self._bad, self._frames, self._computations
        self._bad, self._frames, self._computations = [], None, 0
        if not bad:
            return None
        return {"nonfinite": list(dict.fromkeys(bad)), "frames": frames or (), "computations": computations}

    @property
    def computations(self) -> int:
        """Gradient-entry calls seen in the window so far (held or judged)."""
        return self._computations + len(self.held)

    def _all_finite_on_device(self, held: list[Held]) -> bool:
        """True when ``mindspore.amp.all_finite`` says every held floating
        tensor is finite (one boolean read back); False when it does not,
        or when that path fails (logged once; the host read decides)."""
        try:
            from mindspore import amp

            tensors = tuple(t for item in held for _, t in item.tensors if is_floating(t))
            return not tensors or bool(amp.all_finite(tensors).asnumpy())
        except Exception as err:
            self.on_device = False
            self.on_error("in the sentinel's device check (the host read is used from now on)", err)
            return False
