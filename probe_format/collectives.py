"""Collective calls in the dump: the keys of a record's ``collective``
object, the names of the collectives, and the one table of what each does
(:data:`COLLECTIVES`: reduces, rooted, point-to-point), read by the
runtime's primitive forms and the replay and by the report's cross-rank
analysis alike; the ``message`` of a ``communication`` record."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# -- collective calls ---------------------------------------------------------------------
#
# The record of a collective call (AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll,
# NeighborExchange, Send, Receive, Reduce: :data:`COLLECTIVES`, whatever the MindSpore entry point:
# an ``ops`` Primitive, ``communication.comm_func``, ``mint.distributed``) carries ``collective``
# (:func:`collective_object` builds it):
#
#   {"api": "AllReduce", "group": "hccl_world_group", "ranks": [0, 1] or null when unknown,
#    "index": <int>, "direction": "forward" | "backward", "inputs_finite": <bool>,
#    "peer": <int, only for Send/Receive>, "root": <int, only for Broadcast>}
#
# * ``index``: the per-group call index in this step, counted from 0 in call order, the same
#   on every rank for the same collective call. For Send/Receive it counts the calls between
#   the same two ranks in the group in the step. ``probe report`` matches calls across ranks
#   on (step, group, index, direction) (Send/Receive: step, group, the two ranks, index,
#   direction), so a backward record may carry its forward call's index or a count of its
#   own, as long as every rank does the same.
# * ``inputs_finite``: this rank's local inputs were finite.
# * ``peer``: the other rank (global rank) of a Send or Receive; ``root``: Broadcast's root.
#
# When ``inputs_finite`` is true and the output holds inf/nan, the record has ``kind``
# ``communication``, ``origin`` false and a ``message`` such as "received inf/nan through
# AllReduce (group hccl_world_group, ranks 0-1) from another rank, or the reduction itself
# overflowed: see `probe report` over all ranks". When the inputs held inf/nan the record keeps
# its usual kind (forward/backward) with ``origin`` false and the ``collective`` object.
# Records without ``collective`` (msprobe's, older probe_runtime dumps) are plain records.

COLLECTIVE_API = "api"                    #: e.g. ``AllReduce`` (one of COLLECTIVE_APIS, or another name)
COLLECTIVE_GROUP = "group"                #: the communication group, e.g. ``hccl_world_group``
COLLECTIVE_RANKS = "ranks"                #: the group's global ranks, or null when unknown
COLLECTIVE_INDEX = "index"                #: per-group call index in the step (see above)
COLLECTIVE_DIRECTION = "direction"        #: ``forward`` or ``backward``
COLLECTIVE_INPUTS_FINITE = "inputs_finite"  #: this rank's local inputs were finite
COLLECTIVE_PEER = "peer"                  #: Send/Receive: the other global rank
COLLECTIVE_ROOT = "root"                  #: Broadcast: the root's global rank

ALL_REDUCE = "AllReduce"
ALL_GATHER = "AllGather"
REDUCE_SCATTER = "ReduceScatter"
BROADCAST = "Broadcast"
ALL_TO_ALL = "AlltoAll"
NEIGHBOR_EXCHANGE = "NeighborExchange"
SEND = "Send"
RECEIVE = "Receive"
#: MindSpore's Reduce (the result only on the destination rank; the runtime records no root for it)
REDUCE = "Reduce"


@dataclass(frozen=True)
class CollectiveSemantics:
    """What one collective does, as the runtime and the report need it.

    Attributes:
        api: its name in the dump (``collective.api``), e.g. ``AllReduce``.
        reduces: it computes from the ranks' data (a sum of finite values
            can overflow); the others only move data.
        rooted: one root rank's data goes to the others; the record carries
            ``root``, and a rank other than the root received what it output.
        point_to_point: between two ranks; the record carries ``peer`` and
            ``probe report`` matches the call on the pair of ranks.
        receives: what it outputs is another rank's data, whatever its own
            buffer held (a Receive).
        class_words: words that mark a Primitive class issuing it wherever
            it is defined (fused kernels: ``MatmulAllReduce...``; the auto
            checks' replay refuses them). Empty where the name is also a
            plain operator's (``Reduce`` in ``ReduceSum``, ``Broadcast`` in
            ``BroadcastTo``).
    """

    api: str
    reduces: bool = False
    rooted: bool = False
    point_to_point: bool = False
    receives: bool = False
    class_words: tuple[str, ...] = ()


#: the collectives, by ``api``: the one table the API lists below, the runtime's primitive forms
#: (probe_runtime.hooks.collectives) and the report's cross-rank analysis read
COLLECTIVES: dict[str, CollectiveSemantics] = {s.api: s for s in (
    CollectiveSemantics(ALL_REDUCE, reduces=True, class_words=("AllReduce",)),
    CollectiveSemantics(ALL_GATHER, class_words=("AllGather",)),
    CollectiveSemantics(REDUCE_SCATTER, reduces=True, class_words=("ReduceScatter",)),
    CollectiveSemantics(BROADCAST, rooted=True),
    CollectiveSemantics(ALL_TO_ALL, class_words=("AlltoAll", "AllToAll")),
    CollectiveSemantics(NEIGHBOR_EXCHANGE, class_words=("NeighborExchange",)),
    CollectiveSemantics(SEND, point_to_point=True, class_words=("Isend", "ISendIRecv")),
    CollectiveSemantics(RECEIVE, point_to_point=True, receives=True, class_words=("Irecv", "ISendIRecv")),
    CollectiveSemantics(REDUCE, reduces=True),
)}
#: what an ``api`` the table does not name is taken to do: move data, between the group's ranks
_UNKNOWN = CollectiveSemantics("")


def collective_semantics(api: str) -> CollectiveSemantics:
    """The :data:`COLLECTIVES` row of ``api``; for a name it does not hold
    (another release's collective) a row that only moves data."""
    return COLLECTIVES.get(api) or _UNKNOWN


COLLECTIVE_APIS = tuple(COLLECTIVES)
#: collectives that compute (a sum of finite values can overflow); the others only move data
REDUCING_APIS = tuple(s.api for s in COLLECTIVES.values() if s.reduces)
#: point-to-point calls: matched by the pair of ranks
P2P_APIS = tuple(s.api for s in COLLECTIVES.values() if s.point_to_point)
#: collectives with a root rank (the record's ``root``)
ROOTED_APIS = tuple(s.api for s in COLLECTIVES.values() if s.rooted)
#: words that mark a Primitive class issuing a collective, whatever module defines it
COLLECTIVE_CLASS_WORDS = tuple(dict.fromkeys(w for s in COLLECTIVES.values() for w in s.class_words))


def collective_object(api: str, group: str, ranks: Optional[list[int]], index: int, direction: str,
                      inputs_finite: bool, *, peer: Optional[int] = None, root: Optional[int] = None) -> dict:
    """The ``collective`` object of a record: ``{"api", "group", "ranks",
    "index", "direction", "inputs_finite"}``, plus ``peer`` for a
    point-to-point call and ``root`` for a rooted one when known (the
    table says which; others' are left out).

    Example: ``collective_object("Send", "g", [0, 1], 0, "forward", True, peer=1)["peer"] == 1``.
    """
    item: dict = {COLLECTIVE_API: api, COLLECTIVE_GROUP: group, COLLECTIVE_RANKS: ranks, COLLECTIVE_INDEX: index,
                  COLLECTIVE_DIRECTION: direction, COLLECTIVE_INPUTS_FINITE: bool(inputs_finite)}
    semantics = collective_semantics(api)
    if semantics.point_to_point and peer is not None:
        item[COLLECTIVE_PEER] = peer
    if semantics.rooted and root is not None:
        item[COLLECTIVE_ROOT] = root
    return item


def rank_ranges(ranks) -> str:
    """Ranks as compact ranges, ascending: ``rank_ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"``
    (duplicates dropped; an empty list gives ``""``)."""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ", ".join(parts)


def received_message(api: str, group: str, ranks: Optional[list[int]]) -> str:
    """The ``message`` of a ``communication`` record (``ranks``: the
    group's, or None when unknown).

    Example: ``received_message("AllReduce", "hccl_world_group", [0, 1])`` is "received inf/nan
    through AllReduce (group hccl_world_group, ranks 0-1) from another rank, or the reduction
    itself overflowed: see `probe report` over all ranks".
    """
    members = f", ranks {rank_ranges(ranks)}" if ranks else ""
    reduced = ", or the reduction itself overflowed" if api in REDUCING_APIS else ""
    return (f"received inf/nan through {api} (group {group}{members}) from another rank{reduced}: "
            "see `probe report` over all ranks")
