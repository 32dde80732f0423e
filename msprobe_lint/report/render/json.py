"""The JSON report: one strict JSON object (no NaN/Infinity tokens: a
non-finite statistic is the string ``"inf"``, ``"-inf"`` or ``"nan"``)."""
from __future__ import annotations

import json
import math
from typing import Any, Optional

from ..analysis.first import entered, started, summary_line
from ..fmt import fmt
from ..model import Dump, Record


def strict(value: Any) -> Any:
    """``value`` with every non-finite float as a string (``"inf"``, ``"-inf"``, ``"nan"``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return fmt(value)
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def record_dict(record: Record) -> dict:
    """One record as the JSON report writes it (only the tensors that show the overflow)."""
    return {
        "step": record.step, "rank": record.rank, "folder": record.folder, "name": record.name,
        "kind": record.kind, "direction": record.direction, "origin": record.origin, "where": record.where,
        "tensors": [{"where": t.where, "dtype": t.dtype, "shape": t.shape, **strict(t.stats),
                     "nonfinite": t.nonfinite} for t in record.offending()],
        "entered": record.entered,
        "sentinel": record.sentinel,
        "nonfinite": record.nonfinite,
    }


def render_json(dump: Dump, status: int, message: Optional[str] = None) -> str:
    """``{"dump_path", "records", "started", "entered", "problems", "summary"}``
    as one line-broken JSON text (docs/report-format.md)."""
    first, came = started(dump.records), entered(dump.records)
    payload = {
        "dump_path": dump.root,
        "records": [record_dict(r) for r in dump.records],
        "started": record_dict(first) if first else None,
        "entered": record_dict(came) if came else None,
        "problems": [{"path": p, "message": m} for p, m in dump.problems],
        "summary": {"records": len(dump.records), "folders": dump.folders, "status": status,
                    "message": message or summary_line(dump)},
    }
    return json.dumps(strict(payload), indent=1, allow_nan=False) + "\n"
