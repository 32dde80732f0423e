"""What one rank folder says about where its overflow came from: its first
origin, its first received record, its first ``entered``, kept small so a
whole step's worth fits in memory while the records themselves do not."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from probe_format.collectives import collective_semantics
from probe_format.layout import OUTSIDE, UPDATE

from ..model import Collective, RankDump, Record, signature

#: a collective call within one step: (group, index, direction) or, for
#: Send/Receive, (group, index, direction, lower rank, higher rank)
CallKey = tuple


@dataclass
class RecordRef:
    """Enough of a record to name it: its folder, its position in detection
    order (``index``), its name and ``file:line``, for an ``entered``
    record the message, the call it was made inside (``inside``) and the
    Parameters it wrote inf/nan into (``written``)."""

    folder: str
    step: Optional[int]
    rank: Optional[int]
    index: int
    name: str
    where: Optional[str]
    message: Optional[str] = None
    inside: Optional[str] = None
    written: tuple[str, ...] = ()
    #: overflow.json's ``kind`` of an ``outside`` or ``update`` record (it names no call), else None
    kind: Optional[str] = None
    #: ``forward``, ``backward``, ``parameters_grad`` or None (``Record.direction``)
    direction: Optional[str] = None


def ref(record: Record) -> RecordRef:
    """The :class:`RecordRef` of a record."""
    if record.record_kind in (OUTSIDE, UPDATE):
        return RecordRef(record.folder, record.step, record.rank, record.index, record.name, record.where,
                         record.message, kind=record.record_kind)
    message = record.entered.get("message") if record.entered else None
    return RecordRef(record.folder, record.step, record.rank, record.index, record.name, record.where, message,
                     record.inside, tuple(record.written), direction=record.direction)


def call_key(rank: Optional[int], collective: Collective) -> CallKey:
    """The key that matches the same collective call across ranks (the
    step is implied): (group, index, direction), and the two ranks for a
    Send/Receive with a ``peer``."""
    if collective_semantics(collective.api).point_to_point and collective.peer is not None and rank is not None:
        low, high = sorted((rank, collective.peer))
        return (collective.group, collective.index, collective.direction, low, high)
    return (collective.group, collective.index, collective.direction)


@dataclass
class RankFacts:
    """The facts of one rank folder that the cross-rank analysis needs.

    ``first`` is the first record that names a call (or says the overflow
    lies outside the checked calls or came from an optimizer update);
    ``origin`` the first origin (a received record never is one);
    ``received`` the first record of a collective whose local inputs were
    finite, with its call; ``entered`` the first record with an ``entered``
    message, or an ``outside``/``update`` record. ``received_keys``
    holds every received record as (index, call), ``records`` counts them all.
    """

    rank: Optional[int]
    folder: str
    records: int = 0
    first: Optional[RecordRef] = None
    origin: Optional[RecordRef] = None
    received: Optional[tuple[RecordRef, CallKey]] = None
    entered: Optional[RecordRef] = None
    received_keys: list[tuple[int, CallKey]] = field(default_factory=list)


def rank_facts(dump: RankDump) -> RankFacts:
    """The :class:`RankFacts` of one folder's records."""
    facts = RankFacts(dump.rank, dump.folder, len(dump.records))
    for record in dump.records:
        if record.sentinel is not None:
            continue
        if record.record_kind in (OUTSIDE, UPDATE):  # names no call, but says where the overflow came from
            facts.first = facts.first or ref(record)
            facts.entered = facts.entered or ref(record)
            continue
        if facts.first is None:
            facts.first = ref(record)
        if record.collective is not None and record.received:
            key = call_key(record.rank, record.collective)
            facts.received_keys.append((record.index, key))
            if facts.received is None:
                facts.received = (ref(record), key)
        elif record.origin and facts.origin is None:
            facts.origin = ref(record)
        if record.entered is not None and facts.entered is None:
            facts.entered = ref(record)
    return facts


def fingerprint(dump: RankDump) -> tuple:
    """What makes two rank folders show the same (:func:`~..model.signature`):
    the reader's :attr:`~msprobe_lint.report.model.RankDump.signature` when
    it has one (computed once per overflow.json content), else computed from
    the records. Kept only while its step is read."""
    return dump.signature if dump.signature is not None else signature(dump.records)
