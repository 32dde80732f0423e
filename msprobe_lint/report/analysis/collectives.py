"""Across ranks: which rank an overflow started on, followed through the
collective calls that carried it.

A collective call is matched across the ranks that recorded it by (step,
group, index, direction), a Send/Receive by the two ranks as well
(:func:`~.facts.call_key`). For a matched call whose output held inf/nan:

* if some rank's input held inf/nan (its record has ``inputs_finite``
  false; for a Broadcast only the root's input counts, for a Send/Receive
  only the sender's), every rank whose inputs were finite received it from
  that rank, and the search continues on that rank, among its records up to
  that call (recursively, through more collectives);
* if no rank's input held inf/nan and every rank of the group has a folder
  in that step, the call itself is where the overflow started (a reduction
  whose sum overflowed), on all of them;
* if ranks of the group have no folder in that step (the config's ``rank``
  filter, a crashed worker), or have records in it but none of that call
  (they had stopped checking: ``overflow_nums`` reached), or the group's
  ranks were not recorded, or a call that only moves data (AllGather,
  Broadcast...) delivered inf/nan though no input held any, the answer is
  a best guess and says why. A rank that stopped checking is then the
  likely sender: the search continues on it, and the receivers say so.

Within one rank, its first origin counts before a record received later,
and a received record before a later ``entered``. Over the ranks of a step,
the start is the one with the best standing (an origin or a collective that
overflowed, then a best guess, then ``entered``, then a first record whose
cause is not known), then the lowest rank. A rank that received inf/nan is
never named as the origin. msprobe's ``nan_analyze`` (PyTorch only) builds
a similar graph of communication calls across ranks offline.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from probe_format.collectives import collective_semantics, rank_ranges

from ..model import Collective, Record
from .facts import CallKey, RankFacts, RecordRef, call_key, ref

ORIGIN = "origin"            #: a record whose inputs were finite and output not
COLLECTIVE = "collective"    #: a collective call with finite inputs on every rank (or a best guess)
ENTERED = "entered"          #: where a carried overflow came in (data, a Parameter...)
UNKNOWN = "unknown"          #: a first record, cause not known


@dataclass(frozen=True)
class CallInfo:
    """A collective call as the report names it: the API, the group and
    its ranks (None when unknown), the per-group call index and direction;
    ``pair`` the two ranks of a Send/Receive."""

    api: str
    group: str
    index: int
    direction: str
    ranks: Optional[tuple[int, ...]]
    pair: Optional[tuple[int, int]] = None

    def describe(self) -> str:
        """``AllReduce call 3 of group hccl_world_group (ranks 0-1023, forward)``."""
        if self.pair is not None:
            return (f"{self.api} call {self.index} between ranks {self.pair[0]} and {self.pair[1]} "
                    f"(group {self.group}, {self.direction})")
        members = f"ranks {rank_ranges(self.ranks)}, " if self.ranks else ""
        return f"{self.api} call {self.index} of group {self.group} ({members}{self.direction})"

    def as_dict(self) -> dict:
        return {"api": self.api, "group": self.group, "index": self.index, "direction": self.direction,
                "ranks": None if self.ranks is None else list(self.ranks),
                "pair": None if self.pair is None else list(self.pair)}


class Participant(NamedTuple):
    """One rank's record of a call: its position, name and what it says."""

    record: RecordRef
    api: str
    inputs_finite: bool


@dataclass
class Call:
    """One collective call of one step, from the records of every rank that recorded it."""

    info: CallInfo
    root: Optional[int] = None
    records: dict[Optional[int], Participant] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """What a call did: the ranks whose input held inf/nan (``senders``),
    the ranks of the group with no folder in the step or no record of the
    call (``missing``), and, when no rank sent any, why the answer is a
    guess (``guess``, None when the call itself overflowed: a reduction
    with every rank present). ``likely``: the ranks that have records in
    the step but none of this call (they stopped checking before it, so
    probably sent it), when no rank is known to have sent it."""

    senders: tuple[int, ...]
    missing: tuple[int, ...]
    guess: Optional[str]
    likely: tuple[int, ...] = ()

    def note(self, call: CallInfo) -> str:
        """What a received record says about the call, e.g. ``through
        AllReduce call 3 of group g (ranks 0-1023, forward) from rank 512``."""
        head = f"through {call.describe()}"
        if self.senders:
            many = len(self.senders) > 1
            return f"{head} from rank{'s' if many else ''} {rank_ranges(self.senders)}"
        if self.guess is None:
            return f"{head}: no rank's input held inf/nan, so the {call.api} itself overflowed"
        if self.likely:
            return (f"{head}, probably from rank{'s' if len(self.likely) > 1 else ''} {rank_ranges(self.likely)} "
                    f"(best guess: {self.guess})")
        return f"{head}: {self.guess} (best guess)"


@dataclass(frozen=True)
class Start:
    """Where an overflow started (or came in) in a step.

    ``how`` is :data:`ORIGIN`, :data:`COLLECTIVE`, :data:`ENTERED` or
    :data:`UNKNOWN`; ``rank`` and ``record`` name it (for a collective, its
    lowest rank's record); ``ranks`` are every rank it started on (a
    collective: the ranks that recorded it); ``call`` the collective;
    ``best_guess`` with ``reason`` when ranks were missing.
    """

    how: str
    rank: Optional[int]
    record: RecordRef
    ranks: tuple = ()
    call: Optional[CallInfo] = None
    best_guess: bool = False
    missing: tuple[int, ...] = ()
    reason: Optional[str] = None

    @property
    def standing(self) -> int:
        """Lower is a stronger answer (see the module docstring)."""
        if self.how == ORIGIN or (self.how == COLLECTIVE and not self.best_guess):
            return 0
        return {COLLECTIVE: 1, ENTERED: 2}.get(self.how, 3)


@dataclass(frozen=True)
class Received:
    """A rank that received inf/nan through a collective call in a step:
    its record, the call, the ranks whose input held inf/nan (``senders``)
    and the one the search followed (``source``, None when no rank sent it)."""

    rank: Optional[int]
    record: RecordRef
    call: CallInfo
    senders: tuple[int, ...]
    source: Optional[int]


class StepCalls:
    """The collective calls of one step, filled one rank folder at a time."""

    def __init__(self) -> None:
        self.calls: dict[CallKey, Call] = {}

    def add(self, record: Record) -> None:
        """Add one record (ignored unless it carries ``collective``)."""
        c: Optional[Collective] = record.collective
        if c is None:
            return
        key = call_key(record.rank, c)
        call = self.calls.get(key)
        if call is None:
            pair = (key[3], key[4]) if len(key) == 5 else None
            call = self.calls[key] = Call(CallInfo(c.api if pair is None else "Send/Receive", c.group, c.index,
                                                   c.direction, c.ranks, pair))
        elif call.info.ranks is None and c.ranks is not None:
            call.info = CallInfo(call.info.api, call.info.group, call.info.index, call.info.direction, c.ranks,
                                 call.info.pair)
        if c.root is not None and call.root is None:
            call.root = c.root
        if record.rank not in call.records:
            call.records[record.rank] = Participant(ref(record), c.api, c.inputs_finite)

    def verdict(self, key: CallKey, present: set) -> Verdict:
        """The :class:`Verdict` of a call; ``present`` the ranks with a folder in the step."""
        call = self.calls[key]
        info = call.info
        members = info.pair if info.pair is not None else info.ranks
        missing = tuple(sorted(r for r in members if r not in present)) if members else ()
        records = call.records
        # ranks with records in the step but none of this call: they had stopped checking there
        silent = tuple(sorted(r for r in members if r in present and r not in records)) if members else ()
        if info.pair is not None:
            senders = [r for r, p in records.items()
                       if not collective_semantics(p.api).receives and not p.inputs_finite]
        elif collective_semantics(info.api).rooted:
            root = records.get(call.root) if call.root is not None else None
            senders = [call.root] if root is not None and not root.inputs_finite else []
        else:
            senders = [r for r, p in records.items() if not p.inputs_finite]
        senders_t = tuple(sorted(r for r in senders if r is not None))
        if senders_t:
            return Verdict(senders_t, missing, None)
        if members is None:
            return Verdict((), (), "the group's ranks were not recorded, so a rank that sent it may be missing "
                                   "from the dump")
        if missing or silent:
            reasons = []
            if missing:
                reasons.append(f"rank{'s' if len(missing) > 1 else ''} {rank_ranges(missing)} of the group "
                               f"{'are' if len(missing) > 1 else 'is'} not in the dump (the config's rank filter, "
                               "or a worker that crashed)")
            if silent:
                reasons.append(f"rank{'s' if len(silent) > 1 else ''} {rank_ranges(silent)} of the group recorded "
                               "nothing of this call: checking had stopped there (overflow_nums reached, or the "
                               "call was outside a checked window)")
            guess = "; ".join(reasons)
            if missing:
                many = len(missing) + len(silent) > 1
                guess += f", so whether {'one of them' if many else 'it'} sent the inf/nan cannot be known"
            return Verdict((), tuple(sorted(missing + silent)), guess, silent)
        if collective_semantics(info.api).reduces:
            return Verdict((), (), None)
        return Verdict((), (), f"no rank's input held inf/nan, and {info.api} only moves data: the record of the "
                               "rank that sent it is missing (was checking stopped by overflow_nums?)")


class StepResolver:
    """Finds where the overflow of one step started, over its ranks.

    Args:
        facts: the :class:`~.facts.RankFacts` of every rank folder of the step, by rank.
        calls: the step's collective calls.
    """

    def __init__(self, facts: dict[Optional[int], RankFacts], calls: StepCalls) -> None:
        self.facts = facts
        self.calls = calls
        self.present = set(facts)
        self._verdicts: dict[CallKey, Verdict] = {}
        self._memo: dict[tuple, tuple[Start, Optional[int]]] = {}

    def verdict(self, key: CallKey) -> Verdict:
        """The verdict of a call of this step (computed once)."""
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = self.calls.verdict(key, self.present)
        return found

    def _call_start(self, key: CallKey, verdict: Verdict) -> Start:
        call = self.calls.calls[key]
        ranks = tuple(sorted(call.records, key=_order))  # the folder `rank` (None) too, named `rank`
        lowest = min(call.records, key=lambda r: -1 if r is None else r)
        return Start(COLLECTIVE, lowest, call.records[lowest].record, ranks, call.info,
                     best_guess=verdict.guess is not None, missing=verdict.missing, reason=verdict.guess)

    def cause(self, rank: Optional[int], limit: Optional[int] = None,
              path: tuple = ()) -> tuple[Start, Optional[int]]:
        """(where the overflow on ``rank`` came from, looking only at its
        records up to index ``limit``; the sender followed when it came
        through a collective, else None)."""
        memo = (rank, limit)
        if memo in self._memo:
            return self._memo[memo]
        facts = self.facts[rank]

        def before(found: Optional[RecordRef]) -> Optional[RecordRef]:
            return found if found is not None and (limit is None or found.index <= limit) else None

        origin, entered = before(facts.origin), before(facts.entered)
        received = facts.received if facts.received and before(facts.received[0]) else None
        result: tuple[Start, Optional[int]]
        if origin is not None and (received is None or origin.index < received[0].index):
            result = (Start(ORIGIN, rank, origin, (rank,)), None)
        elif received is not None and (entered is None or received[0].index <= entered.index):
            result = self._through(rank, received, path)
        elif entered is not None:
            result = (Start(ENTERED, rank, entered, (rank,)), None)
        else:
            first = before(facts.first) or facts.first
            assert first is not None  # a folder with named records
            result = (Start(UNKNOWN, rank, first, (rank,)), None)
        self._memo[memo] = result
        return result

    def _through(self, rank: Optional[int], received: tuple[RecordRef, CallKey],
                 path: tuple) -> tuple[Start, Optional[int]]:
        record, key = received
        verdict = self.verdict(key)
        senders = verdict.senders or verdict.likely
        if not senders:
            return self._call_start(key, verdict), None
        best: Optional[tuple[Start, Optional[int]]] = None
        call = self.calls.calls[key]
        for sender in senders:
            if sender == rank or sender in path or sender not in self.facts or self.facts[sender].first is None:
                continue  # (no record naming a call: a rank whose only finding is a sentinel one has none to follow)
            took_part = call.records.get(sender)  # a likely sender has no record of the call: all its records count
            start, _ = self.cause(sender, None if took_part is None else took_part.record.index, path + (rank,))
            if best is None or (start.standing, _order(start.rank)) < (best[0].standing, _order(best[0].rank)):
                best = (start, sender)
        if best is None:
            if not verdict.senders:  # the likely senders are on the path too: the call is the answer
                return self._call_start(key, verdict), None
            # every sender is already on the path: a cycle of records
            return Start(UNKNOWN, rank, record, (rank,), reason="the collectives form a cycle"), None
        return best

    def resolve(self) -> tuple[Optional[Start], list[Optional[int]], list[Received]]:
        """(the start of the step, the other ranks where an overflow started
        on its own, the ranks that received inf/nan with the call each
        first received it through)."""
        starts: list[Start] = []
        received: list[Received] = []
        for rank in sorted(self.facts, key=_order):
            facts = self.facts[rank]
            if facts.first is None:
                continue  # sentinel records only
            start, source = self.cause(rank)
            starts.append(start)
            first_received = facts.received
            if first_received is not None and _through_first(facts):
                record, key = first_received
                verdict = self.verdict(key)
                senders = verdict.senders or verdict.likely
                if senders:  # else the call itself is the answer (or a best guess), no rank sent it
                    received.append(Received(rank, record, self.calls.calls[key].info, senders, source))
        if not starts:
            return None, [], received
        best = min(starts, key=lambda s: (s.standing, _order(s.rank), s.record.index))
        also = sorted({s.rank for s in starts if s.how == ORIGIN and s.rank != best.rank}, key=_order)
        return best, also, received

    def notes(self, facts: RankFacts) -> dict[int, tuple[CallInfo, Verdict]]:
        """The call and verdict of each received record of a rank, by record index."""
        return {index: (self.calls.calls[key].info, self.verdict(key)) for index, key in facts.received_keys}


def _through_first(facts: RankFacts) -> bool:
    """The rank's first cause is a received record (not an earlier origin or ``entered``)."""
    if facts.received is None:
        return False
    at = facts.received[0].index
    if facts.origin is not None and facts.origin.index < at:
        return False
    return not (facts.entered is not None and facts.entered.index < at)


def _order(rank: Optional[int]) -> int:
    return -1 if rank is None else rank
