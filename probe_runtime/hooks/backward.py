"""Gradients of a call's tensors through ``mindspore.ops.HookBackward``.

A wrapper (L1) or a Cell hook (L0) passes the tensors it wants gradients
for through one ``HookBackward``; in the backward pass its hook receives
the gradients with respect to them. Values and gradients are unchanged (the
hook returns None); the hook only keeps references. The hook is reached
through a small list (a "box") that the owner empties when its window
closes, so a ``HookBackward`` node MindSpore keeps alive does not keep the
tool's entries alive. The tensors handed back keep the instance attributes
of those they stand for (:func:`carry_attributes`: a layer such as
MSAdapter's mindtorch needs its ``_device`` on every tensor). Why ``HookBackward`` and not ``Tensor.register_hook``,
and what it costs: ``docs/runtime-design.md``.

Example::

    boxes: list = []
    args = through_hook(ops.HookBackward, on_input_grads, args, [0, 1], boxes)
    ...                # the call runs on the hooked args; backward fires on_input_grads
    release(boxes)     # window closed: the hooks do nothing from now on
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence

from .precision import cast_by_mixed_precision, outside_mixed_precision

#: MindSpore releases on which a ``HookBackward`` instance may be reused with
#: another hook function set before each use (:class:`HookMaker`): in a
#: synchronous process each use keeps the function set when it ran
#: (tests/runtime/test_runtime_hook_maker.py checks it on every release the
#: suite runs on: 2.7.0 and 2.10.0). Outside this range a fresh instance is
#: made per use.
SHARED_HOOK_RELEASES = ("2.7.0", "2.10.999")


class HookMaker:
    """``make(hook)`` gives a ``mindspore.ops.HookBackward`` primitive whose
    hook, for the next use, is ``hook``: what :func:`through_hook` takes as
    ``hook_backward``.

    Making a ``HookBackward`` per use (a ``Primitive`` built, its attributes
    set) cost about 30 us of the 100 us a hooked tensor costs in a
    synchronous process (benchmarks/README.md); one instance per thread
    with ``set_hook_fn`` before each use gives the same gradients and hook
    calls, since each use keeps the function set when it ran, but only
    while the process runs synchronously (``pynative_synchronize``, as
    checked windows on CPU do): with the asynchronous pipeline the function
    is read when the operator runs, later, and every use would get the
    last one set. So the instance is shared only when that setting is on
    at the moment of the call, on the releases of
    :data:`SHARED_HOOK_RELEASES`; otherwise ``make`` is ``HookBackward``
    itself.

    Args:
        hook_backward: ``mindspore.ops.HookBackward``.
        version: ``mindspore.__version__``.
    """

    def __init__(self, hook_backward: Any, version: str) -> None:
        self.hook_backward = hook_backward
        self.shared = _release_in(version, SHARED_HOOK_RELEASES)
        self._setting = synchronize_setting() if self.shared else None
        self._local = threading.local()
        self._kind: Any = None

    def __call__(self, hook: Callable[..., None]) -> Any:
        if not self.shared or not self._synchronous():
            return self.hook_backward(hook)
        prim = getattr(self._local, "prim", None)
        if prim is None:
            from mindspore.ops.operations.debug_ops import HookType

            self._kind = HookType.HookBackward
            prim = self._local.prim = self.hook_backward(hook)
            return prim
        prim.set_hook_fn(hook, self._kind)
        return prim

    def _synchronous(self) -> bool:
        """``pynative_synchronize`` is on now (about 1 us to read)."""
        try:
            context, key = self._setting  # type: ignore[misc]
            return bool(context.get_param(key))
        except Exception:
            return False


def synchronize_setting() -> Any:
    """MindSpore's context object and the ``pynative_synchronize`` key (read
    with ``context.get_param(key)``, written with ``set_param``), or None.
    The private setter is used because the public
    ``set_context(pynative_synchronize=...)`` logs a deprecation warning on
    every call since MindSpore 2.5 and ``mindspore.runtime.launch_blocking()``
    cannot be undone."""
    try:
        from mindspore import context as ms_context
        from mindspore._c_expression import ms_ctx_param

        return ms_context._context(), ms_ctx_param.pynative_synchronize
    except Exception:  # pragma: no cover - other MindSpore layouts
        return None


def _release_in(version: str, bounds: tuple[str, str]) -> bool:
    """``bounds[0] <= version <= bounds[1]`` as release numbers; False for a
    version that does not parse."""
    try:
        from packaging.version import Version

        return Version(bounds[0]) <= Version(version) <= Version(bounds[1])
    except Exception:
        return False


def through_hook(hook_backward: Any, hook: Callable[..., None], items: Sequence[Any],
                 positions: list[int], boxes: Optional[list] = None) -> list:
    """``items`` (a list copy) with the tensors at ``positions`` passed
    through one ``hook_backward(...)`` (``mindspore.ops.HookBackward`` or a
    :class:`HookMaker`): in
    the backward pass ``hook`` receives the gradients w.r.t. them. Values
    and dtypes are unchanged, also inside a Cell given a precision
    (``to_float``: :mod:`.precision`); the call waits once for the PyNative
    pipeline.

    ``hook`` is reached through a one-item list appended to ``boxes``: the
    owner empties those lists when its window closes (:func:`release`).
    MindSpore keeps a ``HookBackward`` node alive as long as a tensor of its
    autograd graph lives when no gradient ever ran through it (the first
    Cell's input, fed with data): a loss the user keeps would otherwise keep
    the hook, its entry and every tensor the entry holds."""
    box = [hook]

    def hook_fn(*grads: Any) -> None:
        if box:
            box[0](*grads)

    if boxes is not None:
        boxes.append(box)
    tensors = [items[i] for i in positions]
    hooked = hook_backward(hook_fn)(*tensors)
    if not isinstance(hooked, (tuple, list)):
        hooked = (hooked,)
    if cast_by_mixed_precision(tensors, hooked):  # inside a Cell given a precision: the values must not change
        hooked = outside_mixed_precision(hook_backward(hook_fn), *tensors)
        if not isinstance(hooked, (tuple, list)):
            hooked = (hooked,)
    out = list(items)
    for i, tensor in zip(positions, hooked):
        carry_attributes(items[i], tensor)
        out[i] = tensor
    return out


def carry_attributes(source: Any, target: Any) -> None:
    """Give ``target`` (a tensor made by the tool, handed back to user code
    in place of ``source``) the instance attributes of ``source`` it lacks.

    A layer over MindSpore keeps its own state on each tensor: MSAdapter's
    mindtorch sets ``_device`` on every tensor it makes and fails without it
    (``ValueError: Tensor must have device``). Plain MindSpore tensors have
    no instance attributes, so this costs one dictionary read. A
    ``mindspore.Parameter``'s attributes (its name, its initialisation
    state) describe the Parameter itself and are never copied onto the
    tensor that stands for its value. Never raises.
    """
    try:
        own = getattr(source, "__dict__", None)
        if not own or source is target or _is_mindspore_parameter(source):
            return
        theirs = target.__dict__
        for name, value in own.items():
            if name not in theirs:
                theirs[name] = value
    except Exception:  # a tensor-like without a writable __dict__: nothing to carry
        return


_PARAMETER_CLASSES: dict[type, bool] = {}


def _is_mindspore_parameter(obj: Any) -> bool:
    """``obj``'s class is (or derives from) ``mindspore``'s ``Parameter``
    (decided once per class)."""
    klass = type(obj)
    known = _PARAMETER_CLASSES.get(klass)
    if known is None:
        known = any(k.__name__ == "Parameter" and k.__module__.startswith("mindspore") for k in klass.__mro__)
        _PARAMETER_CLASSES[klass] = known
    return known


def hook_gradients(hook_backward: Any, items: Sequence[Any], positions: list[int], boxes: Optional[list],
                   deliver: Callable[[tuple], None], on_fault: Callable[[BaseException], None]) -> list:
    """The gradient hook both levels put on a call's inputs or outputs:
    :func:`through_hook` with a hook that hands the gradients (a tuple, as
    ``HookBackward`` gives them) to ``deliver`` and a fault in it to
    ``on_fault`` (the level's never-break-training policy: L1 turns that
    API's checks off, L0 that part of its hooks), never into the backward
    pass.

    Example::

        args = hook_gradients(ops.HookBackward, args, [0], boxes,
                              deliver=lambda grads: sink.on_grad_inputs(call, list(grads)),
                              on_fault=lambda err: log(err))
    """
    def hook(*grads: Any) -> None:
        try:
            deliver(grads)
        except Exception as err:
            on_fault(err)

    return through_hook(hook_backward, hook, items, positions, boxes)


def data_positions(items: Sequence[Any], positions: list[int], derived: Optional[dict] = None) -> list[int]:
    """The positions among ``positions`` whose tensor depends on no
    ``Parameter`` as far as the tool can tell: a leaf of the autograd graph
    that is not a ``Parameter`` (data fed to the model, a constant made
    outside the differentiated function), or a tensor in ``derived``
    (``id -> tensor``: what the caller knows was computed from such data
    alone, e.g. the batch cast to float16 before the first layer).

    Why: one ``HookBackward`` over a call's inputs makes MindSpore compute
    the gradient of every one of them as soon as one needs it: the
    gradient w.r.t. the batch that the first convolution or matmul takes
    with its weight, which training never computes (on a small CNN that
    backward kernel was about a third of the step; a fresh user's float16
    batch, cast before the first matmul, got a gradient that overflowed
    and was reported although training never made it). L1 gives data
    inputs a hook of their own, which MindSpore never calls unless the
    gradient is asked for. Setting a tensor apart is never wrong, only a
    hook more: its hook still fires when its gradient is computed.

    A leaf is read through MindSpore's private ``Tensor._is_leaf`` (2.10;
    about 0.4 us) or, where that is missing (2.7), ``_has_auto_grad()``
    being False (no autograd node made it). Never raises ([] on a fault)."""
    try:
        found = []
        for i in positions:
            item = items[i]
            if derived and derived.get(id(item)) is item:
                found.append(i)
                continue
            leaf = getattr(item, "_is_leaf", None)
            if leaf is None:  # MindSpore 2.7: a method
                made = getattr(item, "_has_auto_grad", None)
                leaf = callable(made) and made() is False
            if leaf is True and not _is_mindspore_parameter(item):
                found.append(i)
        return found
    except Exception:
        return []


def release(boxes: list) -> None:
    """Cut the hooks made through :func:`through_hook` with ``boxes`` off
    from what they refer to (they do nothing from now on)."""
    for box in boxes:
        box.clear()
    boxes.clear()


def register_grad_hook(tensor: Any, hook: Callable[[Any], Any]) -> Any:
    """``tensor.register_hook(hook)`` (``hook(grad)`` in the backward
    pass), through MindSpore's own mechanism when a layer replaced the
    method: mindtorch's ``Tensor.register_hook`` forwards to a ``_data``
    attribute its Parameters do not have (``AttributeError``), while the
    layer's gradients are MindSpore's. Returns the handle (``remove()``).

    Raises:
        What MindSpore raises for a tensor that takes no hook.
    """
    method = getattr(type(tensor), "register_hook", None)
    if method is not None and (getattr(method, "__module__", "") or "").startswith("mindspore"):
        return tensor.register_hook(hook)
    from mindspore._c_expression import TensorPy
    from mindspore.common.hook_handle import _TensorHookHandle

    handle = _TensorHookHandle(tensor)
    handle.id = TensorPy.register_hook(tensor, hook)
    return handle
