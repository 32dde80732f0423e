"""What an optimizer holds: the Parameters it updates, its own state, and
the gradients it was given, as (label, tensor) pairs for the judges.

MindSpore facts used: an ``nn.Optimizer`` keeps the Parameters it updates
in ``parameters``; a ``mint.optim`` (``mindspore.experimental.optim``)
optimizer in ``param_groups[i]["params"]``; per-Parameter state is made by
``ParameterTuple.clone(prefix=...)``, which names each clone
``<prefix>.<Parameter name>`` (Adam's ``moment1.fc.weight``).
"""
from __future__ import annotations

from typing import Any


def optimizer_parameters(optimizer: Any) -> list:
    """The Parameters an optimizer updates: ``parameters`` of an
    ``nn.Optimizer``, the ``params`` of each group of a ``mint.optim`` one."""
    params = getattr(optimizer, "parameters", None)
    if params is not None and not callable(params):
        return list(params)
    out: list = []
    for group in getattr(optimizer, "param_groups", None) or []:
        out.extend(group.get("params", []) if isinstance(group, dict) else [])
    return out


def optimizer_state(optimizer: Any) -> list[tuple[str, Any]]:
    """(label, Parameter) for an optimizer's own floating state: every
    Parameter the optimizer Cell holds that is not one it updates (Adam's
    ``moment1``/``moment2``, Momentum's ``moments``, ``global_step``, a
    learning-rate Parameter; ``mint.optim``'s ``exp_avg``...). MindSpore
    names a per-Parameter state ``<prefix>.<Parameter name>``
    (``ParameterTuple.clone(prefix=...)``), labelled here
    ``"Adam moment2 of fc.weight"``; others ``"Adam global_step"``."""
    updated = optimizer_parameters(optimizer)
    names = updated_names(updated)
    return [(state_label(optimizer, param, names), param) for param in state_parameters(optimizer, updated)]


def state_parameters(optimizer: Any, updated: list) -> list:
    """The Parameters :func:`optimizer_state` labels, in its order, without
    their labels (``updated``: :func:`optimizer_parameters`): what is read
    after every step, whose labels only a finding needs
    (:func:`state_label`; reading a Parameter's ``name`` waits for
    MindSpore's pipeline)."""
    ids = {id(p) for p in updated}
    out: list = []
    seen: set[int] = set()
    walk = getattr(optimizer, "parameters_and_names", None)
    if not callable(walk):
        return out
    for _, param in walk():
        if id(param) in ids or id(param) in seen:
            continue
        seen.add(id(param))
        out.append(param)
    return out


def updated_names(updated: list) -> set:
    """The names of the Parameters an optimizer updates (for :func:`state_label`)."""
    return {getattr(p, "name", None) for p in updated}


def state_label(optimizer: Any, param: Any, names: set) -> str:
    """The :func:`optimizer_state` label of ``param``, a state Parameter of
    ``optimizer`` (``names``: :func:`updated_names`)."""
    name = str(getattr(param, "name", "?"))
    prefix, _, rest = name.partition(".")
    kind = type(optimizer).__name__
    return f"{kind} {prefix} of {rest}" if rest in names else f"{kind} {name}"


def labelled_inputs(args: tuple, params: list) -> list:
    """(label, tensor) for the gradients given to an optimizer: ``gradient
    of <Parameter>`` when they line up with its Parameters, else ``input i``."""
    from ..check.verdict import iter_tensors

    tensors = list(iter_tensors(list(args)))
    return [(input_label(i, tensors, params), t) for i, t in enumerate(tensors)]


def input_label(position: int, tensors: list, params: list) -> str:
    """The :func:`labelled_inputs` label of ``tensors[position]`` (``tensors``:
    every tensor given to the optimizer, in order)."""
    from ..check.names import parameter_name

    if len(tensors) == len(params):
        return f"gradient of {parameter_name(params[position])}"
    return f"input {position}"
