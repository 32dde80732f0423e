"""The unit every stage produces: one problem at one place in one file."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Optional


class Severity(str, Enum):
    """How bad a finding is. ``error`` fails the run (exit 1)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for error, 1 for warning, 2 for info (for sorting)."""
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Diagnostic:
    """One finding.

    Attributes:
        path: the file the finding is in, as the user named it.
        line, column: 1-based position of the offending key or value
            (for script rules, in the script).
        code: the stable rule code, e.g. ``"PL201"``.
        severity: after any re-grading by the user's settings.
        message: one sentence saying what is wrong.
        hint: how to fix it, or None.
        pointer: RFC 6901 JSON pointer into the config, or None for
            findings in a script or about the whole file.
        end_line, end_column: end of the offending range (exclusive column),
            when known.
    """

    path: str
    line: int
    column: int
    code: str
    severity: Severity
    message: str
    hint: Optional[str] = None
    pointer: Optional[str] = None
    end_line: Optional[int] = None
    end_column: Optional[int] = None
    extra: tuple = field(default=(), compare=False)

    def with_severity(self, severity: Severity) -> "Diagnostic":
        """Return a copy graded ``severity``."""
        return replace(self, severity=severity)

    def sort_key(self) -> tuple:
        """Order: file, line, column, code."""
        return (self.path, self.line, self.column, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` shape of one diagnostic."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
            "pointer": self.pointer,
        }


@dataclass(frozen=True)
class Finding:
    """What a rule function yields before positions are known.

    ``pointer`` locates the offending value in the config; ``at`` says
    whether the position is that of the key (``"key"``) or of the value
    (``"value"``). Script rules give ``line``/``column`` and ``path``
    directly instead of a pointer. ``severity`` overrides the rule's default
    for this one finding (e.g. PL202 is a warning when jit_level is unknown).
    """

    code: str
    message: str
    pointer: Optional[str] = None
    hint: Optional[str] = None
    at: str = "value"
    severity: Optional[Severity] = None
    path: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
