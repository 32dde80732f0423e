"""Map JSON pointers to line and column, computed only when needed.

Positions come from the json-source-map library (a scan of the text that
records, for every JSON pointer, where its key and value start and end).
It is pure Python and slower than ``json.loads``, so the engine asks for it
only when there is something to report. Its pointers join raw key text with
``/``; we look keys up the same way and fall back to the nearest ancestor
when a key holds escapes. Lines and columns here are 1-based; columns count
characters (code points), not bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Span:
    """1-based start and end (end column exclusive) of a key or value."""

    line: int
    column: int
    end_line: int
    end_column: int


def escape(token: str) -> str:
    """Escape one reference token for an RFC 6901 JSON pointer."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """Undo :func:`escape`."""
    return token.replace("~1", "/").replace("~0", "~")


def pointer(*parts: object) -> str:
    """Build a JSON pointer from keys and indices: ``pointer("rank", 0)``
    -> ``"/rank/0"``."""
    return "".join("/" + escape(str(p)) for p in parts)


def split(ptr: str) -> list[str]:
    """Split a JSON pointer into unescaped tokens."""
    if not ptr:
        return []
    return [unescape(t) for t in ptr.split("/")[1:]]


class PositionMap:
    """Positions of every key and value of one JSON text.

    Built once per file, lazily. ``duplicates`` lists the key spans of every
    repeat of a key within one object (after its first occurrence), with the
    pointer of that key.

    Raises:
        RecursionError: never; documents nested too deep for the scanner get
            an empty map (every lookup falls back to line 1, column 1).
    """

    def __init__(self, text: str):
        self._keys: dict[str, Span] = {}
        self._values: dict[str, Span] = {}
        self.duplicates: list[tuple[str, Span]] = []
        try:
            from json_source_map import handle, types

            entries = handle.value(source=text, current_location=types.Location(0, 0, 0))
        except RecursionError:
            return
        except Exception:  # the library assumes valid JSON; stay silent otherwise
            return
        seen: set[tuple[str, int, str]] = set()
        instances: dict[str, int] = {}
        for raw_ptr, entry in entries:
            value_span = Span(entry.value_start.line + 1, entry.value_start.column + 1,
                              entry.value_end.line + 1, entry.value_end.column + 1)
            if entry.key_start is not None:
                key_span = Span(entry.key_start.line + 1, entry.key_start.column + 1,
                                entry.key_end.line + 1, entry.key_end.column + 1)
                parent, _, key = raw_ptr.rpartition("/")
                marker = (parent, instances.get(parent, 0), key)
                if marker in seen:
                    self.duplicates.append((raw_ptr, key_span))
                seen.add(marker)
                self._keys[raw_ptr] = key_span
            instances[raw_ptr] = instances.get(raw_ptr, 0) + 1
            self._values[raw_ptr] = value_span

    def locate(self, ptr: Optional[str], at: str = "value") -> Span:
        """Span of the key (``at="key"``) or value at ``ptr``; falls back to
        the value, then to the nearest ancestor, then to 1:1."""
        if ptr is None:
            return Span(1, 1, 1, 1)
        tokens = split(ptr)
        while True:
            raw = "".join("/" + escape_raw(t) for t in tokens)
            if at == "key" and raw in self._keys:
                return self._keys[raw]
            if raw in self._values:
                return self._values[raw]
            if raw in self._keys:
                return self._keys[raw]
            if not tokens:
                return Span(1, 1, 1, 1)
            tokens = tokens[:-1]


def escape_raw(token: str) -> str:
    """json-source-map keys are the raw text between the quotes; this
    re-escapes the characters ``json.dumps`` would escape so a decoded key
    finds its raw form in the common cases (quotes and backslashes)."""
    if '"' in token or "\\" in token:
        return token.replace("\\", "\\\\").replace('"', '\\"')
    return token


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset in ``text``."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column
