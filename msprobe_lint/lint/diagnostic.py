"""The unit every stage produces: one problem at one place in one file.

The value types are named tuples (immutable, compared and hashed by
value), which cost a fraction of dataclasses to define at start-up.
"""
from __future__ import annotations

from collections import namedtuple
from enum import Enum

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any


class Severity(str, Enum):
    """How bad a finding is. ``error`` fails the run (exit 1)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for error, 1 for warning, 2 for info (for sorting)."""
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Edit(namedtuple("Edit", "start end text line column end_line end_column pointer",
                      defaults=(1, 1, 1, 1, None))):
    """One text replacement in a config file.

    Attributes:
        start, end: character (code point) offsets into the file's decoded
            text, a byte-order mark counted as one character; ``end`` is
            exclusive, ``start == end`` inserts.
        text: the new text for ``[start, end)``.
        line, column, end_line, end_column: the same range as 1-based
            lines and columns (code points, end exclusive; lines end at
            ``\\n``), for reporters and editors.
        pointer: the JSON pointer of the key or value edited, or None.
    """

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` shape of one edit."""
        return {"pointer": self.pointer, "start": self.start, "end": self.end, "line": self.line,
                "column": self.column, "end_line": self.end_line, "end_column": self.end_column,
                "text": self.text}


class Fix(namedtuple("Fix", "description edits safe writes removes", defaults=(True, (), ()))):
    """An exact replacement that resolves a diagnostic.

    Attributes:
        description: what the fix does, e.g. ``rename 'overflow_number' to
            'overflow_nums'``.
        edits: non-overlapping edits, applied all together or not at all.
        safe: True when the fix only writes what the user plainly meant
            (``probe lint --fix`` applies it); False when it changes what
            the job does (applied only with ``--unsafe-fixes``). A fix
            removing an object that holds anything is never safe.
        writes: JSON pointers of the keys the fix creates (a renamed or
            moved key; a value replaced in place is not listed: the key
            stays the user's).
        removes: JSON pointers of the members or items it removes. ``--fix``
            never applies a removal covering what an earlier fix of the same
            run wrote (edits.fix_text).
    """

    __slots__ = ()

    @property
    def applicability(self) -> str:
        """``"safe"`` or ``"unsafe"``."""
        return "safe" if self.safe else "unsafe"

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` shape of one fix."""
        return {"description": self.description, "applicability": self.applicability,
                "edits": [e.to_dict() for e in self.edits]}


class FixSpec(namedtuple("FixSpec", "description ops safe", defaults=(True,))):
    """A fix as a rule states it, in terms of the parsed config (the
    engine turns it into a :class:`Fix` with text offsets).

    ``ops`` is a tuple of operations, each a tuple:

    * ``("value", pointer, json_text)``: replace the value at ``pointer``
      with ``json_text`` (already JSON-encoded);
    * ``("key", pointer, new_key)``: rename the key at ``pointer``;
    * ``("remove", pointer)``: remove the object member or array item at
      ``pointer`` together with the comma that separates it;
    * ``("move", pointer, location)``: move the object member at
      ``pointer`` into the top-level object (``location`` ``""``) or the
      top-level section ``location`` (created in place when absent);
    * ``("remove-member-at", offset)``: remove the object member whose
      key starts at character ``offset`` of the parsed text (a repeated
      key, which no pointer can name);
    * ``("text", start, end, new_text)``: replace characters ``[start,
      end)`` of the file's decoded text (without a byte-order mark); the
      only operation resolved in a file that does not parse (PL008);
    * ``("bom",)``: remove the file's byte-order mark.
    """

    __slots__ = ()


def remove(ptr: str, description: str, *, safe: bool = True) -> FixSpec:
    """The fix removing the key (with its value) or list item at ``ptr``."""
    return FixSpec(description, (("remove", ptr),), safe)


def json_text(value: Any) -> str:
    """``value`` as JSON text for a fix to write: non-ASCII kept as it is,
    but a lone surrogate (``"\\ud800"`` in the file, or a byte a
    surrogateescape decoding kept) written as its ``\\uXXXX`` escape, so the
    text stays encodable as UTF-8 and reads back as the same value.

    Raises:
        TypeError, ValueError: as ``json.dumps`` for a value JSON cannot
            hold.
    """
    import json

    text = json.dumps(value, ensure_ascii=False)
    if any("\ud800" <= c <= "\udfff" for c in text):
        text = "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def set_value(ptr: str, value: Any, description: str, *, safe: bool = True) -> FixSpec:
    """The fix replacing the value at ``ptr`` with ``value`` (a Python
    value, written as JSON with non-ASCII kept, lone surrogates escaped:
    :func:`json_text`)."""
    return FixSpec(description, (("value", ptr, json_text(value)),), safe)


class Diagnostic(namedtuple("Diagnostic", "path line column code severity message hint pointer end_line end_column "
                                        "extra fix", defaults=(None, None, None, None, (), None))):
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
        fix: the exact replacement that resolves it, when the rule knows
            one (see :class:`Fix`), else None.
        extra: anything a caller attaches (not compared).

    Two diagnostics are equal when everything but ``extra`` and ``fix`` is.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Diagnostic) and self[:10] == other[:10]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:10])

    def with_severity(self, severity: Severity) -> "Diagnostic":
        """Return a copy graded ``severity``."""
        return self._replace(severity=severity)

    def sort_key(self) -> tuple:
        """Order: file, line, column, code."""
        return (self.path, self.line, self.column, self.code, self.message)

    def span(self) -> tuple:
        """(line, column, end_line, end_column) as reporters show them: an
        empty range on one line (PL004's byte-order mark, before line 1,
        column 1) is one character, as for any point."""
        end_column = self.end_column
        if self.end_line == self.line and end_column is not None and end_column == self.column:
            end_column += 1
        return self.line, self.column, self.end_line, end_column

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` shape of one diagnostic."""
        line, column, end_line, end_column = self.span()
        return {
            "path": self.path,
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
            "pointer": self.pointer,
            "fix": self.fix.to_dict() if self.fix else None,
        }


class Finding(namedtuple("Finding", "code message pointer hint at severity path line column fix end_line end_column",
                         defaults=(None, None, "value", None, None, None, None, None, None, None))):
    """What a rule function yields before positions are known.

    ``pointer`` locates the offending value in the config; ``at`` says
    whether the position is that of the key (``"key"``) or of the value
    (``"value"``). Script rules give ``line``/``column`` and ``path``
    directly instead of a pointer, and ``end_line``/``end_column`` (end
    exclusive) when they know where the problem ends. ``severity`` overrides the rule's default
    for this one finding (e.g. PL202 is a warning when jit_level is unknown).
    ``fix`` is the replacement the rule knows, if any (see :class:`FixSpec`).
    """

    __slots__ = ()
