"""The overflow dump layout: folder and file names, the keys of
``overflow.json`` records and their kinds.

probe_runtime's writer writes with these names and ``probe report`` reads
with them; docs/report-format.md describes the layout for people. The
statistics files follow msprobe's format (mindstudio-probe 8.x, "dump.json
file description" in its MindSpore dump docs); ``overflow.json`` is this
project's own index of the overflowing entries.

Layout::

    DUMP_PATH/[graph|pynative/]step{N}/rank{R}/   (``rank`` alone: not distributed)
        dump.json        {"task", "level", "framework", "dump_data_dir", "data": {entry name: statistics}}
        stack.json       {"0": [[entry name], [stack lines]], ...}
        construct.json   {entry name: parent Cell entry or null}   ({} at L1)
        overflow.json    [record, ...] in detection order
        dump_tensor_data/{entry name}.{input|output}.{n}.npy

This module is a leaf: it imports nothing of the project, so the runtime
can import it without the report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# -- files -------------------------------------------------------------------------------

DUMP_FILE = "dump.json"
STACK_FILE = "stack.json"
CONSTRUCT_FILE = "construct.json"
OVERFLOW_FILE = "overflow.json"
TENSOR_DATA_DIR = "dump_tensor_data"
#: msprobe puts mindspore.jit parts of a run under ``graph/`` and the rest under ``pynative/``
MODE_DIRS = ("graph", "pynative")

STEP_PATTERN = re.compile(r"^step(\d+)$")
#: ``rank`` alone (no number) is the folder of a job that was not distributed
RANK_PATTERN = re.compile(r"^rank(\d*)$")

# -- overflow.json: one record per overflowing entry (or sentinel finding) ---------------

NAME = "name"            #: the dump.json key, e.g. ``Functional.exp.0.forward``
ORIGIN = "origin"        #: true: inputs finite, output not (the overflow started there)
WHERE = "where"          #: the user's ``file:line`` that made the call, or null
KIND = "kind"            #: one of KINDS
STEP = "step"            #: the step number
RANK = "rank"            #: the rank, or null when not distributed
ENTERED = "entered"      #: where a carried overflow came in (the ENTERED_* keys), first record of a step
MESSAGE = "message"      #: a sentence for people (records that name no call, communication records)
NONFINITE = "nonfinite"  #: records that name no call: labels of what held inf/nan
REPLAY = "replay"        #: auto checks: found by running the gradient computation at this file:line again
COLLECTIVE = "collective"  #: collective calls: the COLLECTIVE_* keys
#: a call made inside another intercepted call (L1): that outer call's entry name, e.g.
#: ``Functional.clip_by_global_norm.0.forward``. The outer call's inputs and result were finite (it is
#: not in dump.json): it masked the overflow this call made
INSIDE = "inside"
#: the names of the Parameters the call (L1) or Cell (L0) wrote inf/nan into in place (finite before
#: it, not after), e.g. ``["bn.moving_variance"]``; dump.json's entry has their values after the call
#: under WRITTEN_ENTRY
WRITTEN = "written"

# record kinds (``kind``)
FORWARD = "forward"
BACKWARD = "backward"
PARAMETERS_GRAD = "parameters_grad"
SENTINEL = "sentinel"              #: inf/nan seen by sentinel checks: no call named, no dump.json entry
COMMUNICATION = "communication"    #: a collective call whose local inputs were finite and output not
#: a gradient computation (or the optimizer) received inf/nan that no checked call or Cell explains: the
#: overflow lies outside what the level checks (L0: the loss code outside the model); no dump.json entry
OUTSIDE = "outside"
#: Parameters held inf/nan right after an optimizer step whose gradients were finite; no dump.json entry
UPDATE = "update"
KINDS = (FORWARD, BACKWARD, PARAMETERS_GRAD, SENTINEL, COMMUNICATION, OUTSIDE, UPDATE)
#: kinds of records that name no call (no dump.json entry; ``name`` is the kind itself; ``message`` and
#: ``nonfinite`` say what held inf/nan and where)
NOTE_KINDS = (SENTINEL, OUTSIDE, UPDATE)
#: the ``name`` of a sentinel record
SENTINEL_NAME = "sentinel"

# ``entered``: {"entry", "input", "source", "parameter", "at_start", "message"}
ENTERED_ENTRY = "entry"            #: the entry whose input held inf/nan
ENTERED_INPUT = "input"            #: which input, e.g. ``input_args[0]``, or null
ENTERED_SOURCE = "source"          #: ``outside`` (made outside the checked window), ``parameter`` or ``collective``
ENTERED_PARAMETER = "parameter"    #: the Parameter's name, or null
ENTERED_AT_START = "at_start"      #: the Parameter held inf/nan at start()
SOURCE_OUTSIDE = "outside"
SOURCE_PARAMETER = "parameter"
#: L0: a Cell's inf/nan came in through a collective call inside it (``entry`` names that call)
SOURCE_COLLECTIVE = "collective"

# -- collective calls ---------------------------------------------------------------------
#
# The record of a collective call (one of, AllGather, ReduceScatter, Broadcast, AlltoAll,
# NeighborExchange, Send, Receive, Reduce: COLLECTIVES below), whatever the MindSpore entry point: an ``ops`` Primitive,
# ``communication.comm_func``, ``mint.distributed``) carries ``collective``:
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


# -- dump.json (msprobe's format) --------------------------------------------------------

DATA = "data"                                #: dump.json's object of entries
#: probe_runtime's key in a forward entry (not msprobe's): the values an in-place call left in the
#: Parameters it may write, after the call, keyed like their values before it (L1: ``input_args[4]``,
#: the position of the copy made before the call; L0: the Parameter's name under ``parameters``)
WRITTEN_ENTRY = "written"
STATS = ("Max", "Min", "Mean", "Norm")       #: per-tensor statistics; null where msprobe has none
DIRECTIONS = (FORWARD, BACKWARD, PARAMETERS_GRAD)  #: the last or second-to-last part of an entry name


def step_dir(step: int) -> str:
    """The folder name of a step: ``step_dir(3) == "step3"``."""
    return f"step{step}"


def rank_dir(rank: Optional[int]) -> str:
    """The folder name of a rank: ``rank_dir(1) == "rank1"``, ``rank_dir(None) == "rank"`` (not distributed)."""
    return "rank" if rank is None else f"rank{rank}"


def parse_step(name: str) -> tuple[bool, Optional[int]]:
    """(is a step folder name, its number): ``parse_step("step3") == (True, 3)``."""
    match = STEP_PATTERN.match(name)
    return (True, int(match.group(1))) if match else (False, None)


def parse_rank(name: str) -> tuple[bool, Optional[int]]:
    """(is a rank folder name, its number or None): ``parse_rank("rank") == (True, None)``."""
    match = RANK_PATTERN.match(name)
    if not match:
        return False, None
    return True, int(match.group(1)) if match.group(1) else None


def direction_of(name: str) -> Optional[str]:
    """``forward``, ``backward`` or ``parameters_grad`` from an entry name
    (``Functional.exp.3.forward``, ``Cell.fc.Dense.backward.0``,
    ``Cell.fc.Dense.parameters_grad``), else None."""
    parts = name.split(".")
    for part in reversed(parts[-2:]):
        if part in DIRECTIONS:
            return part
    return None
