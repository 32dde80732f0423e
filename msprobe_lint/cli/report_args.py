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

from .argv import read_argv

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
    if not args or args[0] != "report":
        return None
    read = read_argv(args[1:], OPTIONS.get)
    if read is None:
        return None
    paths, options = read
    values: dict[str, Any] = {}
    for key, kind, value in options:
        if key in values or (isinstance(kind, tuple) and value not in kind):
            return None
        values[key] = value
    if len(paths) != 1 or not paths[0]:
        return None
    return paths[0], values
