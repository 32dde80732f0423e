"""Text from a file (a config's line, a name or path from a dump) made safe
to print on a terminal.

A leaf module: the lint reporters and ``probe report`` both import it, and it
imports nothing of the project.
"""
from __future__ import annotations

# Control characters (terminal escapes included), line separators and the
# bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069: a
# name holding U+202E printed the rest of its line reversed, a hunt found):
# shown as one character each so the caret stays under its column.
_SHOWN = {c: "?" for c in [*range(32), *range(127, 160), 0x2028, 0x2029, *range(0x202A, 0x202F),
                           *range(0x2066, 0x206A)]}
_SHOWN.update({ord("\t"): " ", ord("\r"): " "})


def shown(text: str) -> str:
    """``text`` safe to print on a terminal: every control character
    (terminal escapes and newlines included), line separator and
    bidirectional override or isolate as ``?``,
    a tab or carriage return as a space, one character for one.

    Example: ``shown("a\\x1b[31mb\\n")`` is ``"a?[31mb?"``.
    """
    return text.translate(_SHOWN)
