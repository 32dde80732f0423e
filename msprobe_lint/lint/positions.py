"""Map JSON pointers to line and column, computed only when needed.

Positions come from one iterative scan of the tokens of the text (run only
after ``json.loads`` accepted it) that records, for every JSON pointer, where
its key and value start and end, as character offsets turned into lines
and columns on lookup. It is slower than ``json.loads``, so the engine asks
for it only when there is something to report. It does not recurse (any
nesting depth), keys are decoded (escapes, ``/`` and ``~`` in keys give
proper RFC 6901 pointers), and it keeps at most MAX_RECORDED entries per
depth class so a 10 MiB file cannot exhaust memory; a lookup past that
falls back to the nearest recorded ancestor. Lines are separated by
``\n`` only (as Python's json counts them); lines and columns are 1-based;
columns count characters (code points), not bytes.
"""
from __future__ import annotations

import bisect
import json
import re
from array import array
from collections import namedtuple

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional

# Tokens of a valid JSON text (json.loads has accepted it): strings,
# punctuation, and runs of anything else (numbers, true, NaN, ...); JSON
# whitespace in between is skipped.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[^ \t\n\r{}\[\]:,"]+')
# The same without commas and colons, for the position scan.
_VALUE_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]|[^ \t\n\r{}\[\]:,"]+')
# Keys and values whose positions are kept; past that only containers
# already seen are updated and lookups fall back to an ancestor.
MAX_RECORDED = 200_000


class Span(namedtuple("Span", "line column end_line end_column")):
    """1-based start and end (end column exclusive) of a key or value."""

    __slots__ = ()


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
    pointer of that key; ``previous[i]`` is the character offset of the key
    of the occurrence before ``duplicates[i]`` (the one json.load drops),
    ``first[i]`` that of its first occurrence.

    Never raises: a text the scan cannot read gets an empty map (every
    lookup falls back to line 1, column 1).
    """

    def __init__(self, text: str):
        self._text = text
        self._newlines: Optional[array] = None  # offsets of every "\n", on first use
        self._keys: dict[str, tuple[int, int]] = {}
        self._values: dict[str, tuple[int, int]] = {}
        self.duplicates: list[tuple[str, Span]] = []
        self.previous: list[int] = []
        self.first: list[int] = []
        try:
            self._scan(text)
        except Exception:  # the text is valid JSON (json.loads read it); stay silent if not
            pass

    def _scan(self, text: str) -> None:
        """One iterative pass over the tokens (no recursion, so any depth):
        record the character offsets of keys and values by pointer, at most
        MAX_RECORDED of them (bounded memory on a 10 MiB file; lookups past
        that fall back to an ancestor), and every repeated key."""
        keys, values = self._keys, self._values
        recorded = [0, 0]  # deeper entries, top-level ones: each up to MAX_RECORDED
        # One frame per open container: [is_object, pointer, index or key pointer,
        # keys seen -> offset of their first occurrence (objects), start offset,
        # expecting a key, repeated keys -> offset of their last occurrence].
        stack: list[list] = []
        frame: list = []
        index = 0
        # Commas and colons are not tokens here (finditer steps over them): an
        # array's index counts its values, and in an object a string after a
        # member's value is the next key. A third fewer tokens on a long list.
        for match in _VALUE_TOKEN.finditer(text):
            token = match.group()
            first = token[0]
            if first == "}" or first == "]":
                frame = stack.pop()
                shallow = len(stack) <= 1
                if frame[1] in values or recorded[shallow] < MAX_RECORDED:
                    values[frame[1]] = (frame[4], match.end())
                    recorded[shallow] += 1
                continue
            start = match.start()
            ptr: Optional[str]
            if stack:
                frame = stack[-1]
                if frame[0]:
                    if frame[5]:  # a key
                        end = match.end()
                        key = json.loads(token)
                        ptr = frame[1] + "/" + escape(key)
                        if key in frame[3]:
                            self.duplicates.append((ptr, self._span(start, end)))
                            self.previous.append(frame[6].get(key, frame[3][key]))
                            self.first.append(frame[3][key])
                            frame[6][key] = start
                        else:
                            frame[3][key] = start
                        frame[2] = ptr
                        frame[5] = False
                        shallow = len(stack) <= 1
                        if recorded[shallow] < MAX_RECORDED or ptr in keys:
                            keys[ptr] = (start, end)
                            recorded[shallow] += 1
                        continue
                    frame[5] = True  # the member's value: a key comes next
                    ptr = frame[2]
                else:
                    index = frame[2]
                    frame[2] = index + 1
                    ptr = None  # an array item's pointer: built only when it is recorded
            else:
                ptr = ""
            if first == "{" or first == "[":
                if ptr is None:
                    ptr = frame[1] + "/" + str(index)
                stack.append([first == "{", ptr, 0, {}, start, first == "{", {}])
                continue
            shallow = len(stack) <= 1
            if ptr is None:  # an array item's pointer is new: no need to look it up
                if recorded[shallow] < MAX_RECORDED:
                    values[frame[1] + "/" + str(index)] = (start, match.end())
                    recorded[shallow] += 1
            elif recorded[shallow] < MAX_RECORDED or ptr in values:
                values[ptr] = (start, match.end())
                recorded[shallow] += 1

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset of the text, as
        :func:`line_col` gives them, by a binary search of the newlines
        (a fix per entry of a 100,000-entry list must not count them each
        time)."""
        span = self._span(offset, offset)
        return span.line, span.column

    def _span(self, start: int, end: int) -> Span:
        if self._newlines is None:
            self._newlines = array("q", (m.start() for m in re.finditer("\n", self._text)))
        line = bisect.bisect_left(self._newlines, start)
        end_line = bisect.bisect_left(self._newlines, end)
        column = start - (self._newlines[line - 1] + 1 if line else 0) + 1
        end_column = end - (self._newlines[end_line - 1] + 1 if end_line else 0) + 1
        return Span(line + 1, column, end_line + 1, end_column)

    def offsets(self, ptr: str, at: str = "value") -> Optional[tuple[int, int]]:
        """Character offsets (start, end) of exactly the key or value at
        ``ptr``, or None when it was not recorded (no fallback)."""
        return (self._keys if at == "key" else self._values).get(ptr)

    def locate(self, ptr: Optional[str], at: str = "value") -> Span:
        """Span of the key (``at="key"``) or value at ``ptr``; falls back to
        the value, then to the nearest ancestor, then to 1:1."""
        if ptr is None:
            return Span(1, 1, 1, 1)
        tokens = split(ptr)
        while True:
            raw = "".join("/" + escape(t) for t in tokens)
            if at == "key" and raw in self._keys:
                return self._span(*self._keys[raw])
            if raw in self._values:
                return self._span(*self._values[raw])
            if raw in self._keys:
                return self._span(*self._keys[raw])
            if not tokens:
                return Span(1, 1, 1, 1)
            tokens = tokens[:-1]


def nesting(text: str, beyond: int = 0) -> tuple[int, int]:
    """(the deepest nesting of arrays and objects in ``text``, the offset of
    the first bracket deeper than ``beyond`` levels, or of the deepest one),
    by the token scan (strings skipped; a text that is not valid JSON is
    scanned as far as it goes).

    Example: ``nesting('{"a": [[1]]}')`` is ``(3, 7)``; with ``beyond=1``,
    ``(3, 6)``.
    """
    depth = deepest = where = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "{[":
            depth += 1
            if depth > deepest:
                if not (beyond and deepest > beyond):
                    where = match.start()
                deepest = depth
        elif token in "}]":
            depth -= 1
    return deepest, where


def bracket_error(text: str) -> Optional[tuple[str, int]]:
    """What is wrong with the brackets of ``text``, by the token scan of
    :func:`nesting` (strings skipped): ``(what, offset)`` for a closer with
    nothing open, one of the other kind, or arrays and objects left open
    at the end (offset: the end); None when they balance.

    Example: ``bracket_error('{"a": [[1]')`` is
    ``("the file ends with 2 array(s) or object(s) never closed", 10)``.
    """
    stack: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == "{" or token == "[":
            stack.append(token)
        elif token == "}" or token == "]":
            if not stack:
                return f"{token!r} closes nothing", match.start()
            if (stack.pop() == "{") != (token == "}"):
                return f"{token!r} closes an {'object' if token == ']' else 'array'} it does not match", \
                    match.start()
    if stack:
        return f"the file ends with {len(stack)} array(s) or object(s) never closed", len(text)
    return None


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset in ``text``."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column
