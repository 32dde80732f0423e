"""What ``probe report`` reads from a dump: tensors, records, one step and
rank folder. Data only: the analysis lives in :mod:`.analysis`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from probe_format.collectives import collective_semantics
from probe_format.layout import (BACKWARD, FORWARD, MESSAGE, NOTE_KINDS, OUTSIDE, SENTINEL, UPDATE, direction_of,
                                 entry_kind)


@dataclass
class Tensor:
    """One tensor's statistics in a dump.json entry.

    ``where`` is its place in the entry (``output[0]``, ``input_args[1]``,
    ``weight[0]``); ``dtype`` and ``shape`` as dump.json has them
    (``"Float32"``, ``[2, 4]``); ``stats`` maps Max/Min/Mean/Norm to a float
    (inf and nan included) or None.
    """

    where: str
    dtype: Any
    shape: Any
    stats: dict[str, Any]

    @property
    def nonfinite(self) -> list[str]:
        """Names of the statistics that are inf or nan, e.g. ``["Max", "Mean"]``."""
        return [k for k, v in self.stats.items() if isinstance(v, float) and not math.isfinite(v)]

    @property
    def unstated(self) -> bool:
        """dump.json has no statistic of this tensor (each null or absent)
        although it holds values: a complex tensor (msprobe-format dumps
        keep no statistics for ``Complex64``/``Complex128``; a fresh
        user's ``exp`` of a complex64 overflowed with all four null), an
        unreadable one. Whether it holds inf/nan is not known."""
        if any(v is not None for v in self.stats.values()):
            return False
        return not (isinstance(self.shape, list) and any(d == 0 for d in self.shape))


@dataclass(frozen=True)
class Constant:
    """A non-tensor argument of a dump.json entry that can explain an
    overflow: a Python number or a dtype (``where`` its place,
    ``input_args[1]``; ``type`` as dump.json has it, ``float``, ``int``,
    ``mindspore.dtype``; ``value`` the number or the dtype's name)."""

    where: str
    type: str
    value: Any


@dataclass(frozen=True)
class Collective:
    """The ``collective`` object of a record (docs/report-format.md has the contract).

    ``ranks`` is the group's global ranks (a tuple, shared between records
    of the same group) or None when the runtime did not know them;
    ``index`` the per-group call index in the step; ``inputs_finite``
    whether this rank's local inputs were finite; ``peer`` the other rank
    of a Send/Receive, ``root`` Broadcast's root.
    """

    api: str
    group: str
    ranks: Optional[tuple[int, ...]]
    index: int
    direction: str
    inputs_finite: bool
    peer: Optional[int] = None
    root: Optional[int] = None


@dataclass
class Record:
    """One overflowing entry (or sentinel finding) of one step and rank folder.

    ``index`` is its position in detection order in the folder; ``origin``
    is True (inputs finite, output not), False (carried) or None (unknown:
    a dump without overflow.json); ``where`` the user's ``file:line``.

    Built with named fields (the reader: ``Record(step=..., rank=...,
    folder=..., index=..., name=..., ...)``). A new overflow.json field is
    a field here, its reading in ``reader._interpret`` and, when the report
    shows it, a part of :func:`signature`.
    """

    step: Optional[int]
    rank: Optional[int]
    folder: str
    index: int
    name: str
    origin: Optional[bool]
    where: Optional[str]
    tensors: list[Tensor] = field(default_factory=list)
    #: dump.json has an entry for this record
    has_entry: bool = False
    #: overflow.json's ``entered`` (a dict with a ``message``) on the record where a carried overflow came in
    entered: Optional[dict] = None
    #: a sentinel finding's message (overflow.json kind ``sentinel``: it names no call), else None
    sentinel: Optional[str] = None
    #: a sentinel finding's ``nonfinite``: every label of what held inf/nan
    nonfinite: list[str] = field(default_factory=list)
    #: overflow.json's ``kind`` (``forward``, ``communication``...), None without overflow.json
    record_kind: Optional[str] = None
    #: overflow.json's ``collective`` for a collective call, else None
    collective: Optional[Collective] = None
    #: overflow.json's ``message`` (communication records, and the records that name no call), else None
    message: Optional[str] = None
    #: auto checks: the file:line of the gradient computation whose replay found this record, else None
    replay: Optional[str] = None
    #: overflow.json's ``inside``: the call this one was made in, whose inputs and result were finite
    inside: Optional[str] = None
    #: overflow.json's ``written``: the Parameters the call wrote inf/nan into in place
    written: list[str] = field(default_factory=list)
    #: the numbers and dtypes among the entry's inputs (dump.json), read with the statistics
    constants: list[Constant] = field(default_factory=list)

    @property
    def received(self) -> bool:
        """A collective call whose local inputs were finite and output not
        (this rank received the inf/nan, or the reduction made it); also a
        Receive, and a Broadcast on a rank other than its root, whatever
        their own buffer held (what they output came from the other rank:
        ``receives`` and ``rooted`` in ``probe_format.collectives.COLLECTIVES``)."""
        c = self.collective
        if c is None:
            return False
        semantics = collective_semantics(c.api)
        return c.inputs_finite or semantics.receives or (semantics.rooted and c.root is not None
                                                         and self.rank != c.root)

    @property
    def kind(self) -> str:
        """``API``, ``Cell``, ``Module`` (L0 in the MSAdapter scenario),
        ``kernel`` (level L2), or for a record that names no call its kind
        (``sentinel``, ``outside``, ``update``): what the record names."""
        if self.sentinel is not None:
            return SENTINEL
        if self.record_kind in (OUTSIDE, UPDATE):
            return self.record_kind
        return entry_kind(self.name)

    @property
    def names_call(self) -> bool:
        """The record names a call or Cell (not one of ``NOTE_KINDS``)."""
        return self.sentinel is None and self.record_kind not in NOTE_KINDS

    @property
    def direction(self) -> Optional[str]:
        """``forward``, ``backward``, ``parameters_grad`` or None (from the
        name; a kernel's from its record's ``kind`` when that says
        ``forward`` or ``backward``: a kernel of the gradient computation
        need not be named ``Gradients/...``)."""
        if self.record_kind in (FORWARD, BACKWARD) and entry_kind(self.name) == "kernel":
            return self.record_kind
        return direction_of(self.name)

    @property
    def label(self) -> str:
        """The name without its direction (``Functional.exp.3``, ``Cell.net.fc1.Dense.0``)."""
        parts = self.name.split(".")
        return ".".join(p for p in parts if p not in ("forward", "backward", "parameters_grad")) or self.name

    def offending(self) -> list[Tensor]:
        """The tensors whose statistics hold inf or nan."""
        return [t for t in self.tensors if t.nonfinite]

    def unstated(self) -> list[Tensor]:
        """The tensors dump.json has no statistics of (:attr:`Tensor.unstated`)."""
        return [t for t in self.tensors if t.unstated]


def signature(records: Iterable[Record]) -> tuple:
    """What makes two rank folders show the same, as a hashable value
    compared exactly: each record's name, origin, ``file:line``,
    overflow.json kind, ``entered`` message, sentinel message, ``nonfinite``
    labels, collective call (the group's ranks by count and ends), its
    ``message`` when it names no call (what the report shows for it),
    ``replay``, ``inside`` and ``written``; not its statistics (dump.json),
    step or rank. The one grouping key of the report: the reader computes it
    once per overflow.json content (:attr:`RankDump.signature`), the
    analysis from the records when the reader did not."""
    out = []
    for r in records:
        c = r.collective
        call = None if c is None else (c.api, c.group, c.index, c.direction, c.inputs_finite, c.peer, c.root,
                                       None if c.ranks is None else (len(c.ranks), c.ranks[:1], c.ranks[-1:]))
        out.append((r.name, r.origin, r.where, r.record_kind, r.entered.get(MESSAGE) if r.entered else None,
                    r.sentinel, tuple(r.nonfinite), call, None if r.names_call else r.message, r.replay, r.inside,
                    tuple(r.written)))
    return tuple(out)


@dataclass
class RankDump:
    """What one step and rank folder holds.

    ``readable`` is False when neither dump.json nor overflow.json could be
    read at all; ``problems`` are (path, message) pairs for the files not
    read whole. ``construct`` is construct.json's parent map when it was
    asked for and holds a Cell tree, else None (``construct_problem`` says
    why it could not be read).
    """

    step: Optional[int]
    rank: Optional[int]
    folder: str
    records: list[Record] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    readable: bool = True
    construct: Optional[dict] = None
    construct_problem: Optional[str] = None
    #: dump.json's ``framework`` (``mindspore``; ``mindtorch`` for PyTorch
    #: code on MindSpore, MSAdapter), None when not read or not given
    framework: Optional[str] = None
    #: equal for two folders whose records are the same but for their step,
    #: rank and statistics (see :func:`signature`)
    signature: Optional[tuple] = None
