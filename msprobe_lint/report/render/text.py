"""The text report: per step and rank, one line per record in execution
order, the statistics that show the overflow, then the summary line."""
from __future__ import annotations

from ...textsafe import shown
from ..analysis.first import summary_line
from ..fmt import fmt, place, shape
from ..model import Dump

MARKS = {True: "ORIGIN ", False: "carried", None: "?      "}


def render_text(dump: Dump) -> str:
    """The whole text report (empty when there are no records). Names and
    paths from the dump have their control characters shown as ``?``."""
    lines: list[str] = []
    current = None
    for record in dump.records:
        here = place(record)
        if here != current:
            current = here
            if lines:
                lines.append("")
            lines.append(f"{here}  ({record.folder})")
        if record.sentinel is not None:  # names no call: what held inf/nan, and the user's gradient line
            lines.append(f"  SENTINEL  {record.where or 'file:line unknown'}")
            lines.append(f"           {record.sentinel}")
            if record.nonfinite:
                lines.append(f"           held inf/nan: {', '.join(record.nonfinite)}")
            continue
        lines.append(f"  {MARKS[record.origin]}  {record.label}  {record.kind}  {record.direction or '-'}  "
                     f"{record.where or 'file:line unknown'}")
        if record.entered is not None:
            lines.append(f"           entered: {record.entered['message']}")
        bad = record.offending()
        for tensor in bad:
            stats = " ".join(f"{k}={fmt(v)}" for k, v in tensor.stats.items())
            lines.append(f"           {tensor.where}  {tensor.dtype} {shape(tensor)}  {stats}")
        if not bad:
            lines.append("           " + ("no statistics in dump.json" if not record.has_entry
                                         else "no inf/nan in the recorded statistics"))
    if dump.records:
        n = len(dump.records)
        groups = len({place(r) for r in dump.records})
        lines.append("")
        lines.append(f"{n} record{'s' if n != 1 else ''} in {groups} step/rank folder{'s' if groups != 1 else ''}. "
                     + summary_line(dump))
    return "\n".join(shown(line) for line in lines) + "\n"
