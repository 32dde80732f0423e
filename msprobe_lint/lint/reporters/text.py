"""Human output: ``path:line:col: CODE severity: message`` (``CODE [*]``
when a safe fix exists), then the source line with a caret under the
offending key or value, a ``help:`` line for the hint and a ``fix:`` (or
``unsafe fix:``) line for the fix; a summary at the end, with how many
findings ``--fix`` (and ``--unsafe-fixes``) would resolve. Colour (through rich) only on a terminal,
and never when NO_COLOR is set.
"""
from __future__ import annotations

import os

from ..diagnostic import Diagnostic, Severity
from ..engine import Result
from ...textsafe import shown

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterable, Optional

STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.INFO: "bold cyan"}


def _columns(text: str) -> int:
    """Terminal columns ``shown(text)`` takes: a wide (CJK, emoji)
    character takes two, a combining one none (``wcwidth``, imported only
    for text that is not ASCII); one a character where it cannot tell."""
    if text.isascii():
        return len(text)
    from wcwidth import wcswidth

    width = wcswidth(shown(text))
    return width if width >= 0 else len(text)


class _Sources:
    """Reads each file's lines once, on demand, tolerant of bad bytes."""

    def __init__(self, results: Iterable[Result] = ()) -> None:
        self._cache: dict[str, list[str]] = {}
        for result in results:  # the text each file was linted as, when known
            if result.source is not None:
                self._cache[result.path] = self._lines(result.source)
            elif result.unreadable:  # PL006: nothing to quote, and reading it again could block
                self._cache[result.path] = []

    @staticmethod
    def _lines(text: str) -> list[str]:
        # Lines end at "\n" only, as the positions count them (not at
        # "\r", "\u2028" or the other breaks str.splitlines knows).
        text = text.removeprefix("\ufeff")
        return [line.removesuffix("\r") for line in text.split("\n")]

    def line(self, path: str, number: int) -> Optional[str]:
        if path not in self._cache:
            from ..loader import read_bytes, wide_encoding

            raw, _ = read_bytes(path)  # never a pipe or a device: opening it could block or never end
            # a UTF-16/32 file (PL004) read as UTF-8 is noise: nothing to quote
            self._cache[path] = [] if raw is None or wide_encoding(raw) else \
                self._lines(raw.decode("utf-8", errors="replace"))
        lines = self._cache[path]
        return lines[number - 1] if 0 < number <= len(lines) else None


def _snippet(diagnostic: Diagnostic, sources: _Sources) -> list[tuple[str, str]]:
    """(text, style) lines under the headline."""
    out: list[tuple[str, str]] = []
    source = sources.line(diagnostic.path, diagnostic.line)
    if source is not None and len(source) <= 400:
        gutter = f"{diagnostic.line:>4} | "
        out.append((gutter + shown(source), ""))
        width = 1
        if diagnostic.end_line == diagnostic.line and diagnostic.end_column:
            width = max(1, diagnostic.end_column - diagnostic.column)
        width = min(width, max(1, len(source) - diagnostic.column + 1))
        before = source[:diagnostic.column - 1]
        pad, carets = _columns(before), max(1, _columns(source[len(before):len(before) + width]))
        out.append((" " * (len(gutter) - 2) + "| " + " " * pad + "^" * carets, STYLES[diagnostic.severity]))
    if diagnostic.hint:
        out.append(("     = help: " + shown(diagnostic.hint), "green"))
    if diagnostic.fix is not None:
        label = "fix" if diagnostic.fix.safe else "unsafe fix"
        out.append((f"     = {label}: {shown(diagnostic.fix.description)}", "green"))
    return out


def fix_summary(diagnostics: Iterable[Diagnostic]) -> Optional[str]:
    """``[*] N fixable with --fix ...``, or None when nothing is fixable."""
    from ..fixes.edits import counts

    safe, unsafe = counts(diagnostics)
    if not safe and not unsafe:
        return None
    if not safe:
        return f"{unsafe} fixable with --fix --unsafe-fixes (review those: they may not be what you meant)."
    more = f"; {unsafe} more with --fix --unsafe-fixes" if unsafe else ""
    return f"[*] {safe} fixable with --fix{more}."


def render(results: Iterable[Result], *, color: bool = False) -> str:
    """The text report (ANSI colour codes only when ``color``)."""
    results = list(results)
    sources = _Sources(results)
    lines: list[tuple[str, str]] = []
    counts = {s: 0 for s in Severity}
    for result in results:
        for d in result.diagnostics:
            counts[d.severity] += 1
            mark = " [*]" if d.fix is not None and d.fix.safe else ""
            lines.append((f"{shown(d.path)}:{d.line}:{d.column}: {d.code}{mark} {d.severity.value}: "
                          f"{shown(d.message)}", STYLES[d.severity]))
            lines.extend(_snippet(d, sources))
    folders = sum(1 for r in results if r.folder)
    files = len(results) - folders
    if any(counts.values()):
        parts = [f"{n} {s.value}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
        flagged = sum(1 for r in results if not r.folder and r.diagnostics)
        unread = f"{folders} folder{'s' if folders != 1 else ''} that could not be read"
        where = f"{files} file{'s' if files != 1 else ''}"
        if flagged < files:
            where = f"{flagged} of {where}"
        if folders:
            where = unread if not flagged else f"{where} and {unread}"  # not "0 of 1 file and ..."
        lines.append((f"Found {', '.join(parts)} in {where}.", "bold"))
        fixable = fix_summary(d for r in results for d in r.diagnostics)
        if fixable:
            lines.append((fixable, "bold"))
    else:
        lines.append((f"All checks passed ({files} file{'s' if files != 1 else ''}).", "bold green"))
    if not color or os.environ.get("NO_COLOR"):
        return "\n".join(text for text, _ in lines) + "\n"
    from io import StringIO

    from rich.console import Console
    from rich.text import Text

    buffer = StringIO()
    console = Console(file=buffer, force_terminal=True, highlight=False, soft_wrap=True, width=10_000)
    for text, style in lines:
        console.print(Text(text, style=style))
    return buffer.getvalue()
