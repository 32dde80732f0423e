"""Collective calls: which MindSpore calls are collectives, and what one call says.

Every PyNative entry point of a collective ends in a Primitive call:
``ops.AllReduce()(x)`` runs the ``AllReduce`` primitive,
``mindspore.communication.comm_func.all_reduce`` runs ``InnerCommAllReduce``,
``mindspore.mint.distributed.all_reduce`` and
``mindspore.ops.communication.all_reduce`` run ``DistCommAllReduce`` (which
writes its result into its input and returns a ``(tensor, handle)`` pair),
and so on for the other collectives (MindSpore 2.7 to 2.10,
``ops/operations/comm_ops.py`` and ``ops/auto_generate/gen_ops_prim.py``).
So a collective is recognised by the class of the primitive that runs
(:data:`FORMS`: which collective it is, where its group, its local inputs,
the tensors it writes in place, its root or peer are in the call), whatever
the entry point the user called. Besides, ``nn.DistributedGradReducer``
runs its AllReduces inside a ``construct`` compiled with ``mindspore.jit``,
which no Primitive wrapper sees: its whole call is one collective call
(:func:`reducer_form`).

:func:`describe` reads one call: the group, the group's global ranks
(:func:`group_ranks`, from ``mindspore.communication``, cached per group),
the root of a Broadcast and the peer of a Send/Receive as global ranks.
The names written to the dump come from
:mod:`probe_format`, the record contract ``probe report``
reads with. Nothing here knows an entry, a verdict or a level.

Example::

    form = collective_form(prim)           # Form(api="AllReduce", group=None, data=(0,), ...) or None
    call = describe(form, prim, args, rank=0)
    call.group, call.ranks                 # "hccl_world_group", (0, 1)
    call.key(0)                            # what the per-group call index is counted by
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from probe_format.collectives import (ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, NEIGHBOR_EXCHANGE, RECEIVE,
                                      REDUCE, REDUCE_SCATTER, SEND, collective_object, collective_semantics)

#: the world group's name per communication backend (``GlobalComm.WORLD_COMM_GROUP`` after
#: ``init()``: HCCL on Ascend, NCCL on GPU, MCCL, MindSpore's own, on CPU)
WORLD_GROUPS = frozenset({"hccl_world_group", "nccl_world_group", "mccl_world_group"})

#: where a value is read from: an argument position, or the primitive's attribute of that name
Source = Union[int, str, None]


@dataclass(frozen=True)
class Form:
    """How to read the calls of one primitive class (positions count the
    arguments the primitive's ``__call__`` takes, ``self`` left out).

    Attributes:
        api: the collective's name in the dump (``AllReduce`` ...: a key of
            ``probe_format.collectives.COLLECTIVES``, which says what it does).
        group: where the group is: an argument position, or None for the
            primitive's ``group`` attribute.
        data: the arguments this rank contributes (its local inputs).
        written: the arguments the call writes its result into (the
            ``mint.distributed`` forms); they are its outputs.
        root: Broadcast's root (a rank of the group): position or attribute.
        peer: the other rank of a Send/Receive (a rank of the group).
    """

    api: str
    group: Optional[int] = None
    data: tuple[int, ...] = (0,)
    written: tuple[int, ...] = ()
    root: Source = None
    peer: Source = None

    @property
    def copied(self) -> tuple[int, ...]:
        """Arguments that are local inputs and written in place: copied
        before the call so the inputs are judged on what they held."""
        return tuple(i for i in self.data if i in self.written)


#: primitive class name -> how its calls are read. The ``Inner*`` primitives are what
#: ``communication.comm_func`` runs, the ``DistComm*`` ones what ``mint.distributed`` and
#: ``ops.communication`` run (their first argument is the output buffer, written in place).
FORMS: dict[str, Form] = {
    "AllReduce": Form(ALL_REDUCE),
    "InnerCommAllReduce": Form(ALL_REDUCE, group=2),
    "DistCommAllReduce": Form(ALL_REDUCE, group=2, written=(0,)),
    "AllGather": Form(ALL_GATHER),
    "_HostAllGather": Form(ALL_GATHER),
    "InnerCommAllGather": Form(ALL_GATHER, group=2),
    "DistCommAllGather": Form(ALL_GATHER, group=3, data=(1,), written=(0,)),
    "DistCommAllGatherIntoTensor": Form(ALL_GATHER, group=3, data=(1,), written=(0,)),
    "DistCommAllGatherIntoTensorUneven": Form(ALL_GATHER, group=4, data=(1,), written=(0,)),
    "ReduceScatter": Form(REDUCE_SCATTER),
    "_HostReduceScatter": Form(REDUCE_SCATTER),
    "InnerCommReduceScatter": Form(REDUCE_SCATTER, group=3),
    "DistCommReduceScatter": Form(REDUCE_SCATTER, group=4, data=(1,), written=(0,)),
    "DistCommReduceScatterTensor": Form(REDUCE_SCATTER, group=4, data=(1,), written=(0,)),
    "DistCommReduceScatterTensorUneven": Form(REDUCE_SCATTER, group=5, data=(1,), written=(0,)),
    "Broadcast": Form(BROADCAST, root="root_rank"),
    "DistCommBroadcast": Form(BROADCAST, group=3, written=(0,), root=1),
    "AlltoAll": Form(ALL_TO_ALL),
    "AlltoAllV": Form(ALL_TO_ALL),
    "InnerCommAllToAllV": Form(ALL_TO_ALL, group=1),
    "DistCommAllToAllV": Form(ALL_TO_ALL, group=2, data=(1,), written=(0,)),
    "DistCommAllToAllVSingle": Form(ALL_TO_ALL, group=2, data=(1,), written=(0,)),
    "DistCommAllToAllVC": Form(ALL_TO_ALL, group=2, data=(1,), written=(0,)),
    "NeighborExchange": Form(NEIGHBOR_EXCHANGE),
    "NeighborExchangeV2": Form(NEIGHBOR_EXCHANGE),
    "Send": Form(SEND, peer="rank"),
    "InnerCommIsend": Form(SEND, group=2, peer=1),
    "DistCommIsend": Form(SEND, group=2, peer=1),
    # a Receive's buffer is not an input: what it held is overwritten, whatever it was
    "Receive": Form(RECEIVE, data=(), peer="rank"),
    "InnerCommIrecv": Form(RECEIVE, group=3, data=(), peer=1),
    "DistCommIrecv": Form(RECEIVE, group=3, data=(), written=(0,), peer=2),
    "Reduce": Form(REDUCE),
    "DistCommReduce": Form(REDUCE, group=3, written=(0,)),
}

#: Cell classes whose call is one collective call: their ``construct`` is compiled with
#: ``mindspore.jit`` (MindSpore 2.7 to 2.10), so the AllReduces inside run in a graph
#: no Primitive wrapper sees. Their group is their ``allgather`` primitive's (``nn.wrap.grad_reducer``).
REDUCER_CELLS = ("DistributedGradReducer",)
#: the form of such a call: ``reducer(grads)``, one tuple of gradients in, the reduced tuple out
REDUCER_FORM = Form(ALL_REDUCE)

_FORM_OF_CLASS: dict[type, Optional[Form]] = {}


def collective_form(prim: Any) -> Optional[Form]:
    """The :class:`Form` of a Primitive (or a :data:`REDUCER_CELLS` Cell), or
    None when it is not a collective; decided once per class, by the
    class name (so the class need not be imported: some exist only in some
    releases)."""
    klass = type(prim)
    known = _FORM_OF_CLASS.get(klass, False)
    if known is not False:
        return known  # type: ignore[return-value]
    form = FORMS.get(klass.__name__)
    if form is None and is_reducer_cell(prim):
        form = REDUCER_FORM
    _FORM_OF_CLASS[klass] = form
    return form


def is_reducer_cell(cell: Any) -> bool:
    """``cell`` is a :data:`REDUCER_CELLS` Cell (or of a subclass of one)."""
    return any(k.__name__ in REDUCER_CELLS and k.__module__.startswith("mindspore") for k in type(cell).__mro__)


def reducer_classes() -> list[type]:
    """The :data:`REDUCER_CELLS` classes this MindSpore has (their ``__call__`` is patched)."""
    out = []
    try:
        from mindspore import nn

        for name in REDUCER_CELLS:
            klass = getattr(nn, name, None)
            if isinstance(klass, type):
                out.append(klass)
    except Exception:  # pragma: no cover - MindSpore without nn
        pass
    return out


# -- groups ------------------------------------------------------------------------------
_RANKS: dict[str, tuple[int, ...]] = {}


def lookup_ranks(group: str) -> Optional[tuple[int, ...]]:
    """The global ranks of ``group``, in group-rank order, from
    ``mindspore.communication`` (``get_process_group_ranks``; for the world
    group ``range(get_group_size())``); None when communication is not
    initialised or the group is unknown."""
    try:
        from mindspore.communication.management import GlobalComm, get_group_size

        if not GlobalComm.INITED:
            return None
        if group in WORLD_GROUPS or group == GlobalComm.WORLD_COMM_GROUP:
            return tuple(range(int(get_group_size())))
        try:
            from mindspore.communication.management import get_process_group_ranks

            return tuple(int(r) for r in get_process_group_ranks(group))
        except ImportError:  # pragma: no cover - older MindSpore
            from mindspore.communication.management import get_world_rank_from_group_rank

            return tuple(int(get_world_rank_from_group_rank(group, r)) for r in range(int(get_group_size(group))))
    except Exception:
        return None


def group_ranks(group: str, lookup: Optional[Callable[[str], Optional[tuple[int, ...]]]] = None
                ) -> Optional[tuple[int, ...]]:
    """``lookup(group)`` (:func:`lookup_ranks` by default), asked once per
    group and process once known (a group's members do not change); None
    when unknown."""
    ranks = _RANKS.get(group)
    if ranks is None:
        ranks = (lookup or lookup_ranks)(group)
        if ranks is not None:  # unknown is asked again (communication initialised later)
            _RANKS[group] = ranks
    return ranks


def forget_groups() -> None:
    """Ask :func:`lookup_ranks` again for every group (a group destroyed and made again)."""
    _RANKS.clear()


# -- one call ----------------------------------------------------------------------------
@dataclass(eq=False)
class CollectiveCall:
    """One collective call, as the records describe it.

    Attributes:
        api: ``AllReduce`` ... (probe_format.collectives's names).
        group: the communication group's name.
        ranks: the group's global ranks, None when unknown.
        form: how the call's arguments are read.
        root: Broadcast's root, peer: a Send/Receive's other rank (global ranks, or None).
        index: the per-group call index in the step (set by the caller: :meth:`key`).
        written: the tensors the call wrote its result into (after the call).
    """

    api: str
    group: str
    ranks: Optional[tuple[int, ...]]
    form: Form
    root: Optional[int] = None
    peer: Optional[int] = None
    index: int = 0
    written: list = field(default_factory=list)

    def key(self, rank: Optional[int]) -> Union[str, tuple]:
        """What the call index is counted by in a step: the group, and for a
        Send/Receive the two ranks as well (``rank``: this process's)."""
        if collective_semantics(self.api).point_to_point and self.peer is not None and rank is not None:
            low, high = sorted((rank, self.peer))
            return (self.group, low, high)
        return self.group

    def inputs(self, args: tuple) -> list:
        """This rank's local inputs among ``args`` (the form's ``data``)."""
        return [args[i] for i in self.form.data if i < len(args)]

    def as_record(self, direction: str, inputs_finite: bool) -> dict:
        """The ``collective`` object of an overflow.json record
        (docs/report-format.md): ``{"api", "group", "ranks", "index",
        "direction", "inputs_finite"}``, plus ``peer`` (Send/Receive) or
        ``root`` (Broadcast) when known."""
        return collective_object(self.api, self.group, None if self.ranks is None else list(self.ranks), self.index,
                                 direction, inputs_finite, peer=self.peer, root=self.root)


def describe(form: Form, prim: Any, args: tuple) -> CollectiveCall:
    """Read one call of a collective: its group (the primitive's
    ``group`` attribute, an argument, or the world group), the group's
    ranks, and its root or peer as global ranks (the primitives take ranks
    of the group: ``comm_func`` and ``mint.distributed`` convert a global
    rank to the group's before calling them). Never raises: what cannot be
    read is None."""
    group = _group(form, prim, args)
    ranks = group_ranks(group)
    call = CollectiveCall(form.api, group, ranks, form)
    if form.root is not None:
        call.root = _global(_read(form.root, prim, args), ranks)
    if form.peer is not None:
        call.peer = _global(_read(form.peer, prim, args), ranks)
    return call


def _group(form: Form, prim: Any, args: tuple) -> str:
    value: Any = None
    if form.group is not None and form.group < len(args):
        value = args[form.group]
    if value is None:
        value = _attribute(prim, "group")
    if value is None:  # a reducer Cell: the group of its primitives
        for holder in ("allgather", "allreduce"):
            value = _attribute(getattr(prim, holder, None), "group")
            if value is not None:
                break
    if not isinstance(value, str) or not value:
        value = _world_group()
    return value


def _attribute(prim: Any, name: str) -> Any:
    if prim is None:
        return None
    try:
        value = getattr(prim, name, None)
        if value is None:
            value = (getattr(prim, "attrs", None) or {}).get(name)
        return value
    except Exception:
        return None


def _read(source: Source, prim: Any, args: tuple) -> Any:
    if isinstance(source, int):
        return args[source] if source < len(args) else None
    return _attribute(prim, source) if isinstance(source, str) else None


def _global(value: Any, ranks: Optional[tuple[int, ...]]) -> Optional[int]:
    """A rank of the group as a global rank (itself when the group's ranks are unknown)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if ranks is not None and 0 <= value < len(ranks):
        return ranks[value]
    return value


def _world_group() -> str:
    try:
        from mindspore.communication.management import GlobalComm

        return str(GlobalComm.WORLD_COMM_GROUP)
    except Exception:  # pragma: no cover
        return "hccl_world_group"


def communication_ready() -> bool:
    """``mindspore.communication`` is initialised in this process (collectives can run)."""
    try:
        from mindspore.communication.management import GlobalComm

        return bool(GlobalComm.INITED)
    except Exception:  # pragma: no cover
        return False
