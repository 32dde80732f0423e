"""The summary sentence: where the overflow started.

It names the earliest step whose records name a call (a later step's
origin or ``entered`` never outranks an earlier step: once a step has
inf/nan, the steps after it carry it on), and in it, across ranks
(:mod:`.collectives`): the first origin, else a collective whose inputs
were finite on every rank, else a best guess, else where the overflow came
in (``entered``), else the first record ("where it started is not known").
Sentinel findings of an earlier step come first (``Then: ...``).
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

from probe_format.collectives import rank_ranges
from probe_format.layout import OUTSIDE, UPDATE, direction_of, entry_kind, parse_step

from ...live_writers import PREFIX as WRITER_PREFIX
from ...live_writers import SUFFIX as WRITER_SUFFIX
from ..fmt import place_of, step_text
from ..reader import CUT_SHORT, FALLBACK, LOST
from .collectives import COLLECTIVE, ENTERED, ORIGIN, Start
from .facts import RecordRef
from .scan import Summary

#: at most this many rank spans are listed in the summary sentence
MAX_SPANS = 8


def ranks_text(ranks: Iterable[Optional[int]], limit: int = MAX_SPANS) -> str:
    """``rank 3`` or ``ranks 0-511, 513-1023``; after ``limit`` spans, ``and N more``.
    The rank of a job that was not distributed (None, the folder ``rank``)
    is ``rank``, as in the group headers: ``ranks rank, 0-3``, ``rank``
    alone (a hunt's finding: it was counted but left out of the list)."""
    given = set(ranks)
    numbers = sorted(r for r in given if r is not None)
    if not numbers:
        return "rank" if None in given else "no rank"
    spans = (["rank"] if None in given else []) + rank_ranges(numbers).split(", ")
    shown = ", ".join(spans[:limit]) + (f" and {len(spans) - limit} more spans" if len(spans) > limit else "")
    return f"rank{'s' if len(numbers) + (None in given) != 1 else ''} {shown}"


def describe_ref(record: RecordRef) -> str:
    """``Functional.exp.3.forward (API, forward) at train.py:31``; a nested
    call names the call it was made inside (``Primitive.Square.0.forward
    (API, forward) inside Functional.clip_by_global_norm.0.forward at
    train.py:40``), a call that wrote inf/nan into Parameters names them
    (``..., writing inf/nan into Parameter bn.moving_variance``)."""
    kind = entry_kind(record.name)
    inside = f" inside {record.inside}" if record.inside else ""
    where = f" at {record.where}" if record.where else ""
    written = f", writing inf/nan into Parameter {', '.join(record.written)}" if record.written else ""
    direction = record.direction or direction_of(record.name)
    return f"{record.name} ({kind}, {direction or 'direction unknown'}){inside}{where}{written}"


def _start_sentence(start: Start, why_unknown: str) -> str:
    here = place_of(start.record.step, start.rank)
    if start.how == ORIGIN:
        return f"Overflow started in {here}: {describe_ref(start.record)}."
    if start.how == COLLECTIVE and start.call is not None:
        call = start.call.describe()
        if not start.best_guess:
            return (f"Overflow started in {call} in {step_text(start.record.step)}, on "
                    f"{ranks_text(start.ranks)}: no rank's input held inf/nan, so the {start.call.api} itself "
                    f"overflowed ({start.record.name} at {start.record.where or 'file:line unknown'}).")
        return (f"Overflow came in through {call} in {here}: {describe_ref(start.record)}; best guess: "
                f"{start.reason}.")
    if start.how == ENTERED and start.record.kind == OUTSIDE and start.record.message:
        return f"Overflow outside the checked calls in {here}: {start.record.message}."
    if start.how == ENTERED and start.record.kind == UPDATE and start.record.message:
        return f"Overflow made by an optimizer step in {here}: {start.record.message}."
    if start.how == ENTERED and start.record.message:
        return f"Overflow entered in {here}: {start.record.message}."
    return (f"First recorded overflow in {here}: {describe_ref(start.record)}; where it started is not known "
            f"({start.reason or why_unknown}).")


def _cut_short_at(summary: Summary, folder: str) -> Optional[int]:
    """How many records were read from ``folder``'s overflow.json when it
    was cut short after them (a job killed while writing it), else None."""
    records = os.path.normpath(os.path.join(folder, "overflow.json"))
    for path, problem in summary.problems:
        match = CUT_SHORT.match(problem)
        if match is not None and os.path.normpath(path) == records:
            return int(match.group(1))
    return None


def _unread_up_to(summary: Summary, step: Optional[int], *, fallback: bool = False, partly: bool = False,
                  besides: str = "") -> list[str]:
    """The folders (``step3/rank``, or ``step3``) of the files and folders
    that could not be read in a step up to ``step`` (any step when the
    start's step is unknown), where records may be hidden; a problem
    outside a step folder counts too, a dump.json beside a readable
    overflow.json does not (only statistics are missing there). With
    ``fallback`` the folders of the overflow.json files that could not be
    read beside a dump.json (whose entries were read instead, without
    origin marks) instead; without, those are left out. With ``partly``
    only the folders whose overflow.json (or an msprobe dump's dump.json)
    was cut short after some records (read in part), without, those are
    left out; ``besides``: such a
    folder is left out either way when it is this one (the start's, when
    it is a marked origin: the records it lost came after it in that
    rank's step, so they cannot move it)."""
    out: list[str] = []
    cut = os.path.normpath(os.path.join(besides, "overflow.json")) if besides else None
    root = os.path.normpath(summary.root) if summary.root else ""
    unread = {os.path.normpath(path) for path, _ in summary.problems}
    for path, problem in summary.problems:
        if problem.endswith(FALLBACK) != fallback:
            continue
        cut_short = CUT_SHORT.match(problem) is not None
        if cut_short != partly or cut_short and cut is not None and os.path.normpath(path) == cut:
            continue
        if os.path.basename(path) == "stack.json":  # only file:line are missing: no record is hidden
            continue
        if os.path.basename(path).startswith(WRITER_PREFIX):  # a live run's marker: read, said apart (_writing)
            continue
        if problem.endswith(LOST):  # tensors whose records were never written: said apart (lost_folders)
            continue
        records = os.path.join(os.path.dirname(path), "overflow.json")
        if os.path.basename(path) == "dump.json" and os.path.normpath(records) not in unread \
                and os.path.isfile(records):  # the records were read; only their statistics are missing
            continue
        rel = os.path.relpath(os.path.normpath(path), root) if root else path
        parts = rel.split(os.sep)
        # the step folder wherever it sits: step3/rank0, rank0/step3 (ranks first), graph/step3/rank0 (msprobe's
        # split by execution mode); a hunt found later steps of the last two named as places the overflow began
        steps = [number for is_step, number in map(parse_step, parts) if is_step and number is not None]
        if steps and step is not None and steps[0] > step:
            continue
        if steps and len(parts) > 1 and parts[-1].endswith(".json"):  # a file in a rank folder: name the folder
            rel = os.path.join(*parts[:-1])
        if rel not in out:
            out.append(rel)
    return out


def lost_folders(summary: Summary, step: Optional[int], *, besides: str = "") -> tuple[list[str], bool]:
    """(the rank folders, ``step3/rank``, in a step up to ``step`` (any
    step when it is None) whose ``dump_tensor_data`` holds tensors of
    records that were never written (``reader.LOST``); whether ``besides``
    is one of them, left out of the list: the start's folder when the
    start is a marked origin, whose records are written in the order they
    are found, the tensors first, so the records lost there came after
    it)."""
    out: list[str] = []
    own = False
    root = os.path.normpath(summary.root) if summary.root else ""
    for path, problem in summary.problems:
        if not problem.endswith(LOST):
            continue
        folder = os.path.dirname(os.path.normpath(path))
        if besides and folder == os.path.normpath(besides):
            own = True
            continue
        rel = os.path.relpath(folder, root) if root else folder
        steps = [number for is_step, number in map(parse_step, rel.split(os.sep)) if is_step and number is not None]
        if steps and step is not None and steps[0] > step:
            continue
        if rel == ".":  # the dump path given is that rank folder itself
            rel = os.path.basename(folder) or folder
        if rel not in out:
            out.append(rel)
    return out, own


def _listed(folders: list[str]) -> str:
    """The first three of ``folders``, and how many more."""
    return ", ".join(folders[:3]) + (f" and {len(folders) - 3:,} more" if len(folders) > 3 else "")


def lost_sentence(folders: list[str]) -> str:
    """What the summary says of rank folders holding tensors whose records
    were never written (``reader.LOST``)."""
    return (f"Records lost (tensors without their records, see the warnings): {_listed(folders)}; the overflow "
            "may have started there.")


def turned_off_sentence(summary: Summary, *, may: bool = True) -> str:
    """What the summary says of the rank folders whose debugger turned
    detection off (``Summary.turned_off``): ``Detection was turned off in
    rank (step 3): cannot write the dump (...). What it found after that is
    not in this report; the overflow may have started there.`` (``may``:
    that last part), or "" when none did."""
    said = [f"in {rank_dir}{f' (step {step})' if step is not None else ''}: {reason}"
            for rank_dir, step, reason in summary.turned_off]
    if not said:
        return ""
    more = len(said) - 3
    return ("Detection was turned off " + "; ".join(said[:3]) + (f"; and in {more:,} more rank folder(s), see the "
                                                                  "warnings" if more > 0 else "")
            + ". What it found after that is not in this report" + ("; the overflow may have started there."
                                                                     if may else "."))


def _turned_off_may_hide(summary: Summary, start: Start) -> bool:
    """A rank folder turned detection off where the start's overflow may
    have begun: in a step before the start's, or in the start's step on
    another rank (or on its own when the start is no marked origin). A
    rank's records before it turned off were all written (it turns off at
    the first write that fails), so a later step hides nothing earlier."""
    step = start.record.step
    own = f"rank{'' if start.rank is None else start.rank}"
    for rank_dir, turned, _ in summary.turned_off:
        if turned is None or step is None or turned < step:
            return True
        if turned == step and not (start.how == ORIGIN and rank_dir == own):
            return True
    return False


#: the words of a live writer's warning (``command.writer_problems``)
STILL_WRITTEN = "is still being written by"


def _writing(summary: Summary) -> list[str]:
    """The rank folders (``rank0``) a live run is still writing, from its
    writer marker's problem (``msprobe_lint.live_writers``): its records
    read so far are in the report, what it has not written yet is not."""
    out = []
    for path, problem in summary.problems:
        name = os.path.basename(path)
        if name.startswith(WRITER_PREFIX) and name.endswith(WRITER_SUFFIX) and STILL_WRITTEN in problem:
            folder = name[len(WRITER_PREFIX):-len(WRITER_SUFFIX)]
            if folder not in out:
                out.append(folder)
    return out


def summary_line(summary: Summary) -> str:
    """One sentence (or a few) naming where the overflow started.

    Example: ``Overflow started in step0/rank1: Functional.exp.3.forward
    (API, forward) at train.py:31. 1 rank received it through collective
    calls: rank 0.``
    """
    parts: list[str] = []
    if summary.sentinel is not None:
        step, rank, message = summary.sentinel
        parts.append(f"Sentinel checks saw inf/nan in {place_of(step, rank)}: {message}.")
    start = summary.start
    if start is None:
        lost = lost_folders(summary, None)[0]
        if lost:  # records were shown (else the command's message says why nothing was), none naming a call
            parts.append(lost_sentence(lost))
        if summary.turned_off:
            parts.append(turned_off_sentence(summary))
        if not parts:
            return "No overflow recorded."
        return " ".join(parts)
    marks_lost = _unread_up_to(summary, start.record.step, fallback=True)
    why = "no record is marked as the origin" if summary.origins_known else \
        "overflow.json not read, see the warnings; its records have no origin marks" if marks_lost else \
        "no overflow.json: a dump without origin marks"
    sentence = _start_sentence(start, why)
    if marks_lost and summary.origins_known:
        sentence += (f" Without origin marks (overflow.json not read, see the warnings): {', '.join(marks_lost[:3])}"
                     f"{f' and {len(marks_lost) - 3:,} more' if len(marks_lost) > 3 else ''}; the overflow may "
                     "have started there.")
    # Only a marked origin stays the start whatever followed it in its folder: an origin among the records lost
    # after an entered or unmarked one would have been the start instead (a review's finding).
    safe = start.record.folder if start.how == ORIGIN else ""
    cut = _cut_short_at(summary, safe) if safe else None
    if cut is not None:
        sentence += (f" Its overflow.json was cut short after {cut:,} record(s) (see the warnings): the records "
                     "lost came later in that step on that rank.")
    unread = _unread_up_to(summary, start.record.step)
    if unread:
        sentence += (f" Not read (see the warnings): {', '.join(unread[:3])}"
                     f"{f' and {len(unread) - 3:,} more' if len(unread) > 3 else ''}; the overflow may have "
                     "started there.")
    writing = _writing(summary)
    if writing:  # a hunt's finding: a live run's marker was "not read; the overflow may have started there"
        sentence += (f" Still being written by a live run (see the warnings): {', '.join(writing[:3])}"
                     f"{f' and {len(writing) - 3:,} more' if len(writing) > 3 else ''}; what it has not "
                     "written yet is not in this report.")
    lost, own = lost_folders(summary, start.record.step, besides=safe)
    if own:
        sentence += (" Its dump_tensor_data holds tensors of records never written (see the warnings): the records "
                     "lost came later in that step on that rank.")
    if lost:  # a tester's finding: a step left with tensors only (a full disk) was passed over in silence
        sentence += " " + lost_sentence(lost)
    partly = _unread_up_to(summary, start.record.step, partly=True, besides=safe)
    if partly:
        sentence += (f" Read in part (a file cut short, see the warnings): {', '.join(partly[:3])}"
                     f"{f' and {len(partly) - 3:,} more' if len(partly) > 3 else ''}; the overflow may have "
                     "started in the records lost there.")
    if summary.turned_off:  # a tester's finding: a full disk turned detection off, and the report was all-clear
        sentence += " " + turned_off_sentence(summary, may=_turned_off_may_hide(summary, start))
    if summary.also:
        sentence += f" It also started on its own on {ranks_text(summary.also)}."
    receivers = [r.rank for r in summary.received]
    if receivers:
        count = len(set(receivers))
        sentence += (f" {count:,} rank{'s' if count != 1 else ''} received inf/nan through collective calls: "
                     f"{ranks_text(receivers)}.")
    if parts:
        return f"{parts[0]} Then: {sentence}"
    return sentence
