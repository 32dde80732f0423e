"""What a report shows, ready for the renderers: the summary of the first
pass and the records of the steps shown, read again one step at a time.

By default every step up to the one where the overflow started is shown
(each group of ranks once, with its lowest rank's records and statistics),
and each later step is counted; ``show_all`` shows every step. The records
are read lazily, while a renderer walks :attr:`Report.sections`, so memory
holds one step's groups, not the dump.
"""
from __future__ import annotations

from pathlib import Path

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from .analysis.collectives import COLLECTIVE, ENTERED, ORIGIN
from .analysis.first import summary_line
from .analysis.scan import GroupInfo, StepInfo, Summary
from .discover import RankFolder
from .model import RankDump, Record


@dataclass
class ShownGroup:
    """A group of ranks of a shown step, with its lowest rank's folder read.

    ``number`` counts the groups shown on the page (it makes the HTML
    anchors); ``notes`` says, per record index, what a received record got
    through which call.
    """

    info: GroupInfo
    dump: RankDump
    number: int
    notes: dict[int, str] = field(default_factory=dict)


@dataclass
class Section:
    """One shown step: its counts and groups."""

    step: StepInfo
    groups: list[ShownGroup]


@dataclass
class Report:
    """Everything a renderer needs.

    ``status`` and ``message`` (why nothing could be shown, else None) are
    the command's; ``line`` is the summary sentence; ``started`` the record
    the summary names as the start (an origin or a collective), ``entered``
    the one where the overflow came in, each read whole; ``started_group``
    the number of the shown group holding ``started``. ``problems`` grows
    while ``sections`` is read; ``later`` are the steps counted, not shown.
    """

    summary: Summary
    status: int
    message: Optional[str]
    line: str
    show_all: bool = False
    started: Optional[Record] = None
    entered: Optional[Record] = None
    started_group: Optional[int] = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    shown: list[StepInfo] = field(default_factory=list)
    later: list[StepInfo] = field(default_factory=list)
    _read: Optional[Callable[[RankFolder], RankDump]] = None
    _seen: set = field(default_factory=set)

    @property
    def sections(self) -> Iterator[Section]:
        """The shown steps, each read when it is reached (one step's groups in memory)."""
        number = 0
        for step in self.shown:
            groups = []
            for info in step.groups:
                dump = self._fetch(step.step, info.rank, info.folder)
                notes = {index: verdict.note(call) for index, (call, verdict) in info.notes.items()}
                groups.append(ShownGroup(info, dump, number, notes))
                number += 1
            yield Section(step, groups)

    def _fetch(self, step: Optional[int], rank: Optional[int], folder: str) -> RankDump:
        assert self._read is not None
        dump = self._read(RankFolder(step, rank, folder))
        for problem in dump.problems:
            if problem not in self._seen:
                self._seen.add(problem)
                self.problems.append(problem)
        return dump

    def record_at(self, step: Optional[int], rank: Optional[int], folder: str, index: int) -> Optional[Record]:
        """One record, read whole (with its statistics)."""
        return next((r for r in self._fetch(step, rank, folder).records if r.index == index), None)


def build(summary: Summary, status: int, message: Optional[str], read: Callable[[RankFolder], RankDump], *,
          show_all: bool = False) -> Report:
    """The :class:`Report` of a summary; ``read`` reads one folder whole
    (with statistics, and construct.json for the HTML page)."""
    report = Report(summary, status, message, message or summary_line(summary), show_all,
                    problems=list(summary.problems), _read=read, _seen=set(summary.problems))
    if show_all or summary.first_step is None:
        report.shown = list(summary.steps)
    else:
        report.shown = summary.steps[:summary.first_step + 1]
        report.later = summary.steps[summary.first_step + 1:]
    start = summary.start
    if start is not None:
        record = report.record_at(start.record.step, start.rank, start.record.folder, start.record.index)
        if start.how in (ORIGIN, COLLECTIVE):
            report.started = record
            report.started_group = _group_number(report.shown, start.record.step, start.rank, start.record.folder)
        elif start.how == ENTERED:
            report.entered = record
    return report


def _group_number(steps: list[StepInfo], step: Optional[int], rank: Optional[int],
                  folder: str = "") -> Optional[int]:
    """The page-wide number of the shown group of ``step`` that holds
    ``rank``; of two (msprobe's ``graph/`` and ``pynative/`` folders of one
    step and rank), the one of ``folder``'s variant (a review's finding:
    the ``graph/`` group was marked although ``pynative/``'s origin was the
    start)."""
    number = 0
    found: Optional[int] = None
    parts = Path(folder).parts if folder else ()
    for info in steps:
        for group in info.groups:
            if info.step == step and rank in group.ranks:
                if not group.variant or group.variant in parts:
                    return number
                found = number if found is None else found
            number += 1
    return found
