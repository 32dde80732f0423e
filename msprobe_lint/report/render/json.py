"""The JSON report: one strict JSON object (no NaN/Infinity tokens: a
non-finite statistic is the string ``"inf"``, ``"-inf"`` or ``"nan"``),
written in pieces as the records are read (docs/report-format.md)."""
from __future__ import annotations

import json
import math
from typing import Any, Iterator, Optional

from ..analysis.collectives import Received, Start
from ..fmt import fmt, shown_constants
from ..model import Collective, Record
from ..view import Report, ShownGroup


def strict(value: Any) -> Any:
    """``value`` with every non-finite float as a string (``"inf"``, ``"-inf"``, ``"nan"``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return fmt(value)
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def collective_dict(collective: Optional[Collective]) -> Optional[dict]:
    """A record's ``collective`` object as read (``ranks`` a list or null)."""
    if collective is None:
        return None
    return {"api": collective.api, "group": collective.group,
            "ranks": None if collective.ranks is None else list(collective.ranks), "index": collective.index,
            "direction": collective.direction, "inputs_finite": collective.inputs_finite,
            "peer": collective.peer, "root": collective.root}


def record_dict(record: Record, group: Optional[ShownGroup] = None) -> dict:
    """One record as the JSON report writes it (only the tensors that show
    the overflow); with its group, the ranks it stands for and, for a
    received record, what it got through which call."""
    out = {
        "step": record.step, "rank": record.rank,
        "ranks": [record.rank] if group is None else list(group.info.ranks),
        "folder": record.folder, "name": record.name,
        "kind": record.kind, "direction": record.direction, "origin": record.origin, "where": record.where,
        "tensors": [{"where": t.where, "dtype": t.dtype, "shape": t.shape, **strict(t.stats),
                     "nonfinite": t.nonfinite} for t in record.offending()],
        **({"framework": group.dump.framework} if group is not None and group.dump.framework
           and group.dump.framework != "mindspore" else {}),
        "entered": record.entered,
        "sentinel": record.sentinel,
        "nonfinite": record.nonfinite,
        "record_kind": record.record_kind,
        "message": record.message,
        "replay": record.replay,
        "collective": collective_dict(record.collective),
        "received": None,
        "inside": record.inside,
        "written": list(record.written),
        "constants": [{"where": c.where, "type": c.type, "value": c.value} for c in shown_constants(record)],
    }
    if group is not None and record.index in group.info.notes:
        call, verdict = group.info.notes[record.index]
        out["received"] = {"call": call.as_dict(), "from": list(verdict.senders), "likely": list(verdict.likely),
                           "missing_ranks": list(verdict.missing), "guess": verdict.guess,
                           "note": group.notes[record.index]}
    return out


def _started(report: Report) -> Optional[dict]:
    start: Optional[Start] = report.summary.start
    if report.started is None or start is None:
        return None
    out = record_dict(report.started)
    out.update({"how": start.how, "ranks": list(start.ranks),
                "call": None if start.call is None else start.call.as_dict(),
                "best_guess": start.best_guess, "missing_ranks": list(start.missing), "reason": start.reason,
                "also": list(report.summary.also)})
    return out


def _received(item: Received) -> dict:
    call = item.call.as_dict()
    del call["ranks"]  # the group's ranks once per rank would grow with the square of the ranks
    return {"step": item.record.step, "rank": item.rank, "name": item.record.name, "call": call,
            "from": item.source, "senders": list(item.senders)}


def _dump(value: Any) -> str:
    return json.dumps(strict(value), allow_nan=False)


def render_json(report: Report) -> Iterator[str]:
    """``{"dump_path", "summary", "started", "entered", "received", "steps",
    "records", "problems"}`` in pieces: ``records`` are written as their
    steps are read, ``problems`` last (it includes what that reading found)."""
    summary = report.summary
    received = summary.received if not report.show_all else [r for s in summary.steps for r in s.received]
    shown = {id(s) for s in report.shown}
    head = {
        "dump_path": summary.root,
        "summary": {"records": summary.records, "folders": summary.folders, "steps": len(summary.steps),
                    "status": int(report.status), "message": report.line,
                    "turned_off": [{"rank_dir": rank_dir, "step": step, "reason": reason}
                                   for rank_dir, step, reason in summary.turned_off]},
        "started": _started(report),
        "entered": record_dict(report.entered) if report.entered is not None else None,
        "received": [_received(r) for r in received],
        "steps": [{"step": s.step, "folders": s.folders, "records": s.records, "groups": len(s.groups),
                   "ranks": list(s.ranks), "origin": s.origin, "shown": id(s) in shown} for s in summary.steps],
    }
    text = _dump(head)
    yield text[:-1] + ', "records": ['
    first = True
    for section in report.sections:
        for group in section.groups:
            for record in group.dump.records:
                yield ("\n " if first else ",\n ") + _dump(record_dict(record, group))
                first = False
    problems = [{"path": p, "message": m} for p, m in report.problems]
    yield ("\n" if not first else "") + '], "problems": ' + _dump(problems) + "}\n"
