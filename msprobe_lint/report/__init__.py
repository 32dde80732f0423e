"""``probe report DUMP_PATH``: the overflows an overflow_check run recorded,
by step and rank, and where the overflow started.

The output formats, the exit statuses and the dump layout it reads are
specified in docs/report-format.md. Library use::

    from msprobe_lint.report import main
    status = main("dump", "json", output="report.json")   # ExitStatus: 0 records, 1 none, 2 unreadable

The package never imports MindSpore nor the lint engine. Its parts:
the layout is :mod:`probe_format` (shared with probe_runtime's writer);
:mod:`.discover` (the step and rank folders, as a stream), :mod:`.reader`
(one folder, tolerant of damage), :mod:`.model` (data), :mod:`.analysis`
(where the overflow started, across ranks through collective calls),
:mod:`.view` (what is shown), :mod:`.render` (text, JSON, HTML),
:mod:`.output` (``--output`` without losing a file) and :mod:`.command`
(the two passes and the exit status).
"""
from __future__ import annotations

from typing import IO, Optional


def main(dump_path: str, fmt: str = "text", out: Optional[IO[str]] = None, err: Optional[IO[str]] = None, *,
         output: Optional[str] = None, force: bool = False, show_all: bool = False) -> int:
    """``probe report``: print the report (or write it to ``output``) and
    return the exit status.

    Args:
        dump_path: the config's dump_path, or one step or rank folder in it.
        fmt: ``text``, ``json`` or ``html`` (one self-contained page).
        out, err: where the report and the warnings go (stdout, stderr).
        output: a file to write the report to instead of ``out``; an
            existing file is refused (exit 2) unless ``force``. No file is
            written when the report itself fails (exit 2), whatever the format.
        show_all: show the records of every step; by default the steps
            after the one where the overflow started are counted, one line each.

    Returns:
        :class:`~msprobe_lint.exit.ExitStatus`: OK (records shown),
        PROBLEMS (no records), USAGE (nothing could be read, or the output
        could not be written).
    """
    from .command import run

    return run(dump_path, fmt, out, err, output=output, force=force, show_all=show_all)
