"""Text from a file or a dump, made safe to print on a terminal.

A leaf module: the lint's text reporter and ``probe report`` both print
names and lines that come from files the user did not write by hand, and a
control character in them (an ANSI escape, a newline in a key) must not
reach the terminal as such.
"""
from __future__ import annotations

# Control characters (terminal escapes included), line separators: shown
# as one character each so a caret under a line stays under its column.
_SHOWN = {c: "?" for c in [*range(32), *range(127, 160), 0x2028, 0x2029]}
_SHOWN.update({ord("\t"): " ", ord("\r"): " "})


def shown(text: str) -> str:
    """``text`` safe to print on a terminal: every control character
    (terminal escapes and newlines included) and line separator as ``?``,
    a tab or carriage return as a space, one character for one.

    Example::

        >>> shown("a\\x1b[31mb\\tc")
        'a?[31mb c'
    """
    return text.translate(_SHOWN)
