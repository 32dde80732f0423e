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

from typing import Any, Callable, Optional, Sequence


def through_hook(hook_backward: Any, hook: Callable[..., None], items: Sequence[Any],
                 positions: list[int], boxes: Optional[list] = None) -> list:
    """``items`` (a list copy) with the tensors at ``positions`` passed
    through one ``hook_backward(...)`` (``mindspore.ops.HookBackward``): in
    the backward pass ``hook`` receives the gradients w.r.t. them. Values
    are unchanged; the call waits once for the PyNative pipeline.

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
    hooked = hook_backward(hook_fn)(*[items[i] for i in positions])
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
