"""The first pass over a dump: every rank folder read once, in step order,
reduced to a summary whose size grows with the number of steps and of
distinct groups of ranks, not with the records.

Per step it keeps the rank folders' facts and collective calls only until
the step ends; then the step becomes a :class:`StepInfo`: its counts, its
groups of ranks whose records are the same (same names, origins,
``file:line``, kinds, messages and collective calls, and the same ranks
they received inf/nan from), and, for the first step with records naming
a call, where the overflow started (:mod:`.collectives`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from ..discover import RankFolder
from ..model import RankDump
from .collectives import CallInfo, Received, Start, StepCalls, StepResolver, Verdict
from .facts import RankFacts, fingerprint, rank_facts

#: a received record's note: the call and what it did
Note = tuple[CallInfo, Verdict]


@dataclass(frozen=True)
class RankSet:
    """A set of ranks kept as ascending spans (so 4,096 ranks take one
    pair), and whether it holds the rank of a job that was not distributed
    (``unnumbered``: the folder ``rank`` alone)."""

    spans: tuple[tuple[int, int], ...] = ()
    unnumbered: bool = False

    @classmethod
    def of(cls, ranks: Iterable[Optional[int]]) -> "RankSet":
        """``RankSet.of([0, 1, 2, 5]).spans == ((0, 2), (5, 5))``."""
        given = list(ranks)
        numbers = sorted({r for r in given if r is not None})
        unnumbered = any(r is None for r in given)
        spans: list[tuple[int, int]] = []
        for r in numbers:
            if spans and spans[-1][1] == r - 1:
                spans[-1] = (spans[-1][0], r)
            else:
                spans.append((r, r))
        return cls(tuple(spans), unnumbered)

    def __len__(self) -> int:
        return sum(b - a + 1 for a, b in self.spans) + (1 if self.unnumbered else 0)

    def __contains__(self, rank: object) -> bool:
        if rank is None:
            return self.unnumbered
        return isinstance(rank, int) and any(a <= rank <= b for a, b in self.spans)

    def __iter__(self):
        if self.unnumbered:
            yield None
        for a, b in self.spans:
            yield from range(a, b + 1)

    def label(self) -> str:
        """``rank 3``, ``ranks 0-511, 513-1023``, or ``rank`` (a job that was not distributed)."""
        if not self.spans:
            return "rank" if self.unnumbered else "no rank"
        return f"rank{'s' if len(self) > 1 else ''} {self.text()}"

    def text(self) -> str:
        """``0-511, 513-1023`` (``rank`` for the rank of a job that was not distributed)."""
        parts = (["rank"] if self.unnumbered else []) + [str(a) if a == b else f"{a}-{b}" for a, b in self.spans]
        return ", ".join(parts)


@dataclass
class GroupInfo:
    """Rank folders of one step whose records are the same.

    ``ranks`` the ranks of the group; ``folder`` and ``rank`` are the
    lowest rank's, whose records and statistics the report shows;
    ``variant`` the ``graph``/``pynative`` part of the path, if any;
    ``records`` how many each folder holds; ``notes`` what each received
    record (by index) got through which call.
    """

    ranks: RankSet
    folder: str
    rank: Optional[int]
    variant: str
    records: int
    notes: dict[int, Note] = field(default_factory=dict)


@dataclass
class StepInfo:
    """One step: its folder and record counts and its groups of ranks."""

    step: Optional[int]
    folders: int = 0
    records: int = 0
    groups: list[GroupInfo] = field(default_factory=list)
    #: the ranks that received inf/nan through a collective in this step
    received: list[Received] = field(default_factory=list)
    #: every rank with records in the step
    ranks: RankSet = RankSet()
    #: the first origin record of the step's lowest rank that has one (its name), or None: a later step
    #: with one had an overflow that started there, not only inf/nan carried over from before
    origin: Optional[str] = None


@dataclass
class Summary:
    """What the first pass found under a dump path.

    ``start`` is where the overflow started in ``first_step`` (the earliest
    step with records naming a call), ``also`` the other ranks where it
    started on their own there, ``received`` the ranks that received it
    there; ``sentinel`` the first record of the dump when it is a sentinel
    finding (step, rank, message).
    """

    root: str
    steps: list[StepInfo] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    folders: int = 0
    unreadable_folders: int = 0
    records: int = 0
    first_step: Optional[int] = None  # index into steps
    start: Optional[Start] = None
    also: list[Optional[int]] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    sentinel: Optional[tuple[Optional[int], Optional[int], str]] = None
    #: some record carries an origin mark (false when every dump lacks overflow.json)
    origins_known: bool = False
    #: every folder walked, soft links followed: (st_dev, st_ino) -> the path it was reached by
    walked: dict[tuple[int, int], str] = field(default_factory=dict, repr=False)
    #: the rank folders whose debugger turned detection off for good, from its dump_path marker
    #: (``live_writers.Writer.turned_off``): (rank folder, step or None, why), by rank folder
    turned_off: list[tuple[str, Optional[int], str]] = field(default_factory=list)


class _Step:
    """The rank folders of the step being read."""

    def __init__(self, step: Optional[int]) -> None:
        self.info = StepInfo(step)
        self.facts: dict[Optional[int], RankFacts] = {}
        self.calls = StepCalls()
        #: (rank, folder, variant, fingerprint, records) per folder
        self.folders: list[tuple[Optional[int], str, str, tuple, int]] = []


class Scanner:
    """Builds a :class:`Summary` from rank folders given in step order.

    Args:
        root: the dump path as the user gave it.
        keep_received: keep the ``received`` list of every step (``--all``),
            not only of the first step with records.
    """

    def __init__(self, root: str, *, keep_received: bool = False) -> None:
        self.summary = Summary(root)
        self.keep_received = keep_received
        self._step: Optional[_Step] = None

    def add(self, folder: RankFolder, dump: RankDump) -> None:
        """Add one read folder (from :func:`~msprobe_lint.report.reader.read_folder`)."""
        summary = self.summary
        summary.folders += 1
        summary.problems.extend(dump.problems)
        if not dump.readable:
            summary.unreadable_folders += 1
            return
        if not dump.records:
            return
        if self._step is None or self._step.info.step != folder.step:
            self._finish()
            self._step = _Step(folder.step)
        step = self._step
        records = dump.records
        summary.records += len(records)
        if summary.sentinel is None and summary.records == len(records) and records[0].sentinel is not None:
            summary.sentinel = (dump.step, dump.rank, records[0].sentinel)
        if not summary.origins_known:
            summary.origins_known = any(r.origin is not None for r in records)
        step.info.folders += 1
        step.info.records += len(records)
        facts = rank_facts(dump)
        if dump.rank not in step.facts or _silent(step.facts[dump.rank]) and not _silent(facts):
            # A second folder of a rank (msprobe's graph/ and pynative/ split) answers only when the first
            # says nothing of where the overflow came from: the order between the two is not recorded, so
            # with both telling, the first one (graph/) answers (a hunt's finding: pynative/'s origin was
            # ignored beside a graph/ kernel record that was not one)
            step.facts[dump.rank] = facts
            for record in records:
                if record.collective is not None:
                    step.calls.add(record)
        step.folders.append((dump.rank, dump.folder, folder.variant, fingerprint(dump), len(records)))

    def finish(self) -> Summary:
        """The summary, once every folder was added."""
        self._finish()
        return self.summary

    def _finish(self) -> None:
        step, self._step = self._step, None
        if step is None:
            return
        summary = self.summary
        resolver = StepResolver(step.facts, step.calls)
        named = any(f.first is not None for f in step.facts.values())
        if named and summary.first_step is None:
            summary.first_step = len(summary.steps)
            summary.start, summary.also, summary.received = resolver.resolve()
            if self.keep_received:
                step.info.received = summary.received
        elif named and self.keep_received:
            step.info.received = resolver.resolve()[2]
        groups: dict[tuple, tuple[list, GroupInfo]] = {}
        for rank, folder, variant, print_, count in step.folders:
            facts = step.facts.get(rank)
            notes = resolver.notes(facts) if facts is not None and facts.folder == folder else {}
            key = (variant, print_, tuple(sorted((i, n[1]) for i, n in notes.items())))
            found = groups.get(key)
            if found is None:
                groups[key] = ([rank], GroupInfo(RankSet(), folder, rank, variant, count, notes))
            else:
                found[0].append(rank)
                if (-1 if rank is None else rank) < (-1 if found[1].rank is None else found[1].rank):
                    found[1].rank, found[1].folder = rank, folder
        for ranks, group in groups.values():
            group.ranks = RankSet.of(ranks)
        step.info.groups = sorted((g for _, g in groups.values()),
                                  key=lambda g: (-1 if g.rank is None else g.rank, g.variant))
        step.info.ranks = RankSet.of(step.facts)
        step.info.origin = next((facts.origin.name for _, facts in sorted(
            step.facts.items(), key=lambda item: -1 if item[0] is None else item[0]) if facts.origin is not None), None)
        summary.steps.append(step.info)


def _silent(facts: RankFacts) -> bool:
    """The folder names no origin, no received and no entered record."""
    return facts.origin is None and facts.received is None and facts.entered is None


def scan(root: str, folders: Iterable[RankFolder], read: Callable[[RankFolder], RankDump], *,
         keep_received: bool = False, progress: Optional[Callable[[RankFolder, int], None]] = None) -> Summary:
    """Read every folder once with ``read`` and summarise.

    Args:
        root: the dump path.
        folders: rank folders in step order (:func:`~msprobe_lint.report.discover.iter_rank_folders`).
        read: reads one folder (statistics are not needed here).
        keep_received: keep every step's ``received`` list, not only the first's.
        progress: called after each folder with it and the records so far.
    """
    scanner = Scanner(root, keep_received=keep_received)
    for folder in folders:
        scanner.add(folder, read(folder))
        if progress is not None:
            progress(folder, scanner.summary.records)
    return scanner.finish()
