"""``--format github``: GitHub Actions workflow commands, one per diagnostic.

``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=PL201 name::message``
(``warning`` for warnings, ``notice`` for infos). The column pair is left
out when a range spans lines. Data and property values are escaped as the
runner requires (``%``, CR and LF; in properties also ``:`` and ``,``),
after the other control characters of a file name or message (a terminal
escape) are shown as ``?`` (textsafe.shown).
Paths are relative to the working folder (where the checkout is) with
forward slashes.
"""
from __future__ import annotations

import os
from pathlib import Path

from ...textsafe import shown
from ..diagnostic import Diagnostic, Severity
from ..engine import Result

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterable

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value (``file=``, ``title=``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _shown(text: str) -> str:
    """``text`` with its control characters shown as ``?`` (a terminal
    escape would colour the workflow log), but for the line breaks, which
    the runner's escaping carries (``%0A``)."""
    return "\n".join("\r".join(shown(part) for part in line.split("\r")) for line in text.split("\n"))


def display_path(path: str) -> str:
    """``path`` relative to the working folder when it lies under it,
    with forward slashes."""
    if os.path.isabs(path):
        try:
            path = os.path.relpath(path)
        except ValueError:  # another drive on Windows
            return Path(path).as_posix()
        if path.startswith(".."):
            return Path(os.path.abspath(path)).as_posix()
    return Path(path).as_posix()


def command(diagnostic: Diagnostic, names: dict[str, str]) -> str:
    """One workflow command line."""
    line, column, end_line, end_column = diagnostic.span()
    props = [("file", _shown(display_path(diagnostic.path))), ("line", str(line))]
    one_line = end_line is None or end_line == line
    if one_line:
        props.append(("col", str(column)))
    if end_line is not None:
        props.append(("endLine", str(end_line)))
        if one_line and end_column is not None:
            props.append(("endColumn", str(end_column)))
    name = names.get(diagnostic.code)
    props.append(("title", f"{diagnostic.code} {name}" if name else diagnostic.code))
    message = _shown(diagnostic.message)
    if diagnostic.hint:
        message += f"\nhelp: {_shown(diagnostic.hint)}"
    head = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{COMMANDS[diagnostic.severity]} {head}::{escape_data(message)}"


def render(results: Iterable[Result], *, color: bool = False) -> str:
    """The workflow commands, one line each (``color`` is ignored); empty
    when there is nothing to report."""
    from ..rules import load_all

    names = {code: info.name for code, info in load_all().items()}
    lines = [command(d, names) for r in results for d in r.diagnostics]
    return "".join(line + "\n" for line in lines)
