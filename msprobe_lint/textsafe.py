"""Text from a file (a config's line, a name or path from a dump) made safe
to print on a terminal.

A leaf module: the lint reporters and ``probe report`` both import it, and it
imports nothing of the project.
"""
from __future__ import annotations

# Control characters (terminal escapes included), line separators: shown
# as one character each so the caret stays under its column.
_SHOWN = {c: "?" for c in [*range(32), *range(127, 160), 0x2028, 0x2029]}
_SHOWN.update({ord("\t"): " ", ord("\r"): " "})


def shown(text: str) -> str:
    """``text`` safe to print on a terminal: every control character
    (terminal escapes and newlines included) and line separator as ``?``,
    a tab or carriage return as a space, one character for one.

    Example: ``shown("a\\x1b[31mb\\n")`` is ``"a?[31mb?"``.
    """
    return text.translate(_SHOWN)
