"""Collective calls in the checker: what their verdict reads, and what a
received inf/nan means for the Cells around them.

A collective call (an entry whose ``collective`` is a
``hooks.collectives.CollectiveCall``) is judged on its local inputs (the
tensors this rank contributes: :func:`collective_tensors`) against what it
returned and what it wrote into. When those inputs were finite and the
output is not, this rank received the inf/nan from another rank, or the
reduction itself overflowed: the entry is never an origin on its own (only
``probe report`` over all ranks can tell which), and its record has kind
``communication`` (``probe_format``). At L0 the Cells
enclosing such a call carry the overflow: :func:`pass_up` tells each
enclosing Cell's call what happened inside it, and :func:`through_collective`
gives the ``entered`` of a Cell whose only non-finite result came in
through a collective inside it.

Example::

    inputs, outputs = collective_tensors(call)       # forward entry of a collective
    verdict = judge(inputs, outputs, cache)
    received = verdict.origin                         # local inputs finite, output not
"""
from __future__ import annotations

from typing import Any, Optional

from probe_format.collectives import received_message
from probe_format.layout import BACKWARD, FORWARD, PARAMETERS_GRAD, SOURCE_COLLECTIVE
from probe_format.records import entered_object

#: attributes set on an L0 Cell's call (forward, backward): the first received collective entry
#: inside it, and whether an overflow started inside it (an origin or a Cell that carried one)
RECEIVED_INSIDE = {FORWARD: "received_inside", BACKWARD: "received_inside_backward"}
STARTED_INSIDE = {FORWARD: "started_inside", BACKWARD: "started_inside_backward"}


def collective_of(kind: str, call: Any) -> Any:
    """The ``CollectiveCall`` of a forward or backward entry, else None."""
    if kind == PARAMETERS_GRAD:
        return None
    return getattr(call, "collective", None)


def collective_tensors(call: Any) -> tuple[list, list]:
    """What a collective's forward verdict reads: (its local inputs, what
    it returned and what it wrote into). Output buffers it only writes
    (``mint.distributed``'s first argument) are not inputs, nor is a
    Receive's buffer."""
    collective = call.collective
    return [collective.inputs(call.args)], [list(collective.written), call.output]


def entry_name(kind: str, call: Any) -> str:
    """The dump.json name of ``call``'s ``kind`` entry."""
    return call.name if kind == FORWARD else call.backward_name


def pass_up(kind: str, call: Any, origin: bool, received: bool) -> None:
    """After an entry whose inputs were finite and output not was judged:
    tell the enclosing Cell's call (``call.parent``, L0) whether the
    overflow came in through a collective (``received``) or started inside
    (``origin``, or a Cell that carried one that started inside it)."""
    parent = getattr(call, "parent", None)
    if parent is None or kind not in RECEIVED_INSIDE:
        return
    received_key, started_key = RECEIVED_INSIDE[kind], STARTED_INSIDE[kind]
    if received:
        if getattr(parent, received_key, None) is None:
            setattr(parent, received_key, (kind, call))
        return
    if origin or getattr(call, started_key, False):
        setattr(parent, started_key, True)
        return
    inside = getattr(call, received_key, None)
    if inside is not None and getattr(parent, received_key, None) is None:
        setattr(parent, received_key, inside)


def through_collective(kind: str, call: Any) -> Optional[dict]:
    """The ``entered`` of an L0 Cell entry whose inputs were finite and
    output not, when the inf/nan came in through a collective call inside
    it and nothing inside started an overflow: ``{"entry": <the
    collective's entry>, "input": null, "source": "collective", ...,
    "message"}``; else None."""
    if kind not in RECEIVED_INSIDE or not hasattr(call, "ancestry"):
        return None
    if getattr(call, STARTED_INSIDE[kind], False):
        return None
    inside = getattr(call, RECEIVED_INSIDE[kind], None)
    if inside is None:
        return None
    inner_kind, inner = inside
    name = entry_name(inner_kind, inner)
    c = inner.collective
    message = (f"inf/nan came in through {name}, a collective call inside {entry_name(kind, call)}: "
               + received_message(c.api, c.group, None if c.ranks is None else list(c.ranks)))
    return entered_object(name, input=None, source=SOURCE_COLLECTIVE, message=message)
