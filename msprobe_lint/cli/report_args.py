"""A typer-free reader of a plain ``probe report`` command line.

``probe report`` is run once per job (by hand, at the end of a CI step), so
its start-up is most of its run time on a small dump, and typer's costs
more than the report. :func:`parse_report` understands a ``report ...``
argument list exactly as click would, or declines (None) and leaves it to
the typer command of ``cli/app.py``, which also prints ``--help`` and every
usage error: an unknown or repeated option, a missing or second
DUMP_PATH, an option value that is missing, empty, starts with ``-`` or is
not one of its choices, ``-fjson``-style bundling, shell completion,
Windows. Both end in ``cli.commands.report.main``; tests/cli/test_fast_path.py
checks that both give the same output and exit status.

Example::

    >>> parse_report(["report", "dump", "-f", "json", "--all"])
    ('dump', {'format': 'json', 'show_all': True})
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence

#: the formats of ``--format`` (as ``cli.app.ReportFormat`` lists them)
FORMATS = ("text", "json", "html")
#: option name -> (the value's key, what it takes: "flag", "str" or choices)
OPTIONS: dict = {
    "--format": ("format", FORMATS), "-f": ("format", FORMATS),
    "--output": ("output", "str"), "-o": ("output", "str"),
    "--force": ("force", "flag"),
    "--all": ("show_all", "flag"),
}


def parse_report(args: Sequence[str]) -> Optional[tuple[str, dict[str, Any]]]:
    """``(dump_path, values)`` for a ``report ...`` argument list read as
    click would (values keyed as ``cli.commands.report.main`` takes them:
    ``format``, ``output``, ``force``, ``show_all``); None for anything left
    to typer (see the module docstring)."""
    if not args or args[0] != "report" or os.name == "nt" or os.environ.get("_PROBE_COMPLETE"):
        return None
    paths: list[str] = []
    values: dict[str, Any] = {}
    rest = list(args[1:])
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        if not _encodable(arg):
            return None
        if arg == "--":
            paths.extend(rest[index:])
            break
        if arg == "-" or not arg.startswith("-"):
            paths.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if equals and not name.startswith("--"):
            return None
        if name not in OPTIONS:
            return None
        key, kind = OPTIONS[name]
        if key in values:
            return None
        if kind == "flag":
            if equals:
                return None
            values[key] = True
            continue
        if not equals:
            if index >= len(rest):
                return None
            value = rest[index]
            index += 1
        if not value or value.startswith("-") or not _encodable(value):
            return None
        if isinstance(kind, tuple) and value not in kind:
            return None
        values[key] = value
    if len(paths) != 1 or not paths[0]:
        return None
    return paths[0], values


def _encodable(arg: str) -> bool:
    """False for an argument holding lone surrogates (bytes the file
    system encoding could not decode), which click reports itself."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
