"""``--format json``: one object, ``{"diagnostics": [...], "summary": {...}}``.

Each diagnostic has path, line, column (1-based), end_line, end_column,
code, severity, message, hint (or null), pointer (JSON pointer, or null
for script findings) and fix (or null): ``{"description", "applicability":
"safe"|"unsafe", "edits": [{"pointer", "start", "end", "line", "column",
"end_line", "end_column", "text"}]}``, offsets in characters of the file's
text (a byte-order mark counted), lines and columns as the diagnostic's.
Strict JSON: no NaN or Infinity.
"""
from __future__ import annotations

import json

from ..engine import Result

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterable


def summary(results: list[Result]) -> dict:
    """Counts per severity, files checked and files unreadable, and the
    findings a ``--fix`` (``fixable``) and only a ``--fix --unsafe-fixes``
    (``unsafe_fixable``) would resolve."""
    from ..fixes.edits import counts as fix_counts

    counts = {"error": 0, "warning": 0, "info": 0}
    for result in results:
        for diagnostic in result.diagnostics:
            counts[diagnostic.severity.value] += 1
    safe, unsafe = fix_counts(d for r in results for d in r.diagnostics)
    return {"files": len(results), "unreadable": sum(r.unreadable for r in results), **counts,
            "fixable": safe, "unsafe_fixable": unsafe}


def render(results: Iterable[Result], *, color: bool = False) -> str:
    """The JSON report."""
    results = list(results)
    body = {
        "diagnostics": [d.to_dict() for r in results for d in r.diagnostics],
        "summary": summary(results),
    }
    return json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
