"""The text report: per step and group of ranks, one line per record in
execution order with the statistics that show the overflow; a count line
per later step; then the summary line."""
from __future__ import annotations

from typing import Iterator

from ...textsafe import shown
from ..fmt import fmt, no_inf_nan_shown, place_of, rank_name, record_notes, shape, step_text
from ..model import Record
from ..view import Report, ShownGroup

MARKS = {True: "ORIGIN ", False: "carried", None: "?      "}
INDENT = " " * 11


#: dump.json frameworks said in the folder header (MindSpore's own is not)
FRAMEWORK_NOTES = {"mindtorch": "PyTorch code on MindSpore (MSAdapter, framework mindtorch)"}


def _header(group: ShownGroup, step) -> str:
    info = group.info
    variant = f"{info.variant}/" if info.variant else ""
    framework = FRAMEWORK_NOTES.get(group.dump.framework or "")
    said = f"  {framework}" if framework else ""
    if len(info.ranks) == 1:
        return f"{variant}{place_of(step, info.rank)}  ({info.folder}){said}"
    count = len(info.ranks)
    return (f"{variant}{step_text(step)}/ranks {info.ranks.text()}  ({count:,} ranks with the same records; "
            f"statistics of {rank_name(info.rank)}: {info.folder}){said}")


def _record_lines(record: Record, note: str | None) -> Iterator[str]:
    if not record.names_call:  # what held inf/nan, and the user's line (gradient computation, optimizer)
        yield f"  {record.kind.upper()}  {record.where or 'file:line unknown'}"
        yield f"{INDENT}{record.sentinel or record.message or ''}"
        if record.nonfinite:
            yield f"{INDENT}held inf/nan: {', '.join(record.nonfinite)}"
        return
    mark = "received" if record.received else MARKS[record.origin]
    yield (f"  {mark}  {record.label}  {record.kind}  {record.direction or '-'}  "
           f"{record.where or 'file:line unknown'}")
    if note is not None:
        yield f"{INDENT}{note}"
    for line in record_notes(record):
        yield f"{INDENT}{line}"
    if record.entered is not None:
        yield f"{INDENT}entered: {record.entered['message']}"
    if record.replay is not None:
        yield f"{INDENT}found by running the gradient computation at {record.replay} again (auto checks)"
    bad = record.offending()
    for tensor in bad:
        stats = " ".join(f"{k}={fmt(v)}" for k, v in tensor.stats.items())
        yield f"{INDENT}{tensor.where}  {tensor.dtype} {shape(tensor)}  {stats}"
    if not bad:
        yield INDENT + no_inf_nan_shown(record)


def render_text(report: Report) -> Iterator[str]:
    """The text report in pieces (nothing when there are no records).
    Names and paths from the dump have their control characters shown as ``?``."""
    summary = report.summary
    if not summary.records:
        return
    first = True
    for section in report.sections:
        for group in section.groups:
            lines = [] if first else [""]
            first = False
            lines.append(_header(group, section.step.step))
            for record in group.dump.records:
                lines.extend(_record_lines(record, group.notes.get(record.index)))
            yield "".join(shown(line) + "\n" for line in lines)
    if report.later:
        lines = ["", "Later steps, counted (--all shows their records):"]
        for step in report.later:
            groups = len(step.groups)
            line = (f"  {step_text(step.step)}: {step.records:,} record{'s' if step.records != 1 else ''} in "
                    f"{step.folders:,} folder{'s' if step.folders != 1 else ''}")
            if step.ranks.spans:
                line += f", {step.ranks.label()}"
            if step.folders > 1:
                line += f" ({groups:,} group{'s' if groups != 1 else ''} of ranks)"
            if step.origin is not None:
                line += f"; an overflow started there too: {step.origin}"
            lines.append(line)
        yield "".join(shown(line) + "\n" for line in lines)
    n, folders = summary.records, sum(step.folders for step in summary.steps)
    yield "\n" + shown(f"{n:,} record{'s' if n != 1 else ''} in {folders:,} step/rank folder"
                       f"{'s' if folders != 1 else ''}. {report.line}") + "\n"
