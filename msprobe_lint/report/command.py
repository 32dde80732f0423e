"""The ``probe report`` command: read, decide the exit status, render,
write (see :func:`msprobe_lint.report.main`)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, Optional

from ..exit import ExitStatus
from ..textsafe import shown
from .discover import iter_rank_folders
from .model import Dump
from .output import write_output
from .reader import read_folder


def read_dump(dump_path: str, *, construct: bool = False) -> Dump:
    """Every record under ``dump_path``, sorted by step, rank and detection
    order. Never raises for bad input: what cannot be read is listed in
    ``problems``. With ``construct``, the construct.json of each folder is
    kept (for the HTML page)."""
    dump = Dump(dump_path)
    for folder in iter_rank_folders(Path(dump_path), dump.problems):
        dump.folders += 1
        rank = read_folder(folder, construct=construct)
        dump.problems.extend(rank.problems)
        if not rank.readable:
            dump.unreadable_folders += 1
            continue
        dump.records.extend(rank.records)
        if construct:
            dump.constructs[rank.folder] = (rank.construct, rank.construct_problem)
    return dump


def report(dump_path: str, *, construct: bool = False) -> tuple[Dump, ExitStatus, Optional[str]]:
    """(dump, exit status, message when nothing could be shown)."""
    root = Path(dump_path)
    if not root.exists():
        return Dump(dump_path), ExitStatus.USAGE, f"{dump_path}: no such file or directory"
    if not root.is_dir():
        return Dump(dump_path), ExitStatus.USAGE, f"{dump_path}: not a directory (give the dump_path folder)"
    if not os.access(root, os.R_OK | os.X_OK):
        return Dump(dump_path), ExitStatus.USAGE, f"{dump_path}: permission denied"
    dump = read_dump(dump_path, construct=construct)
    if dump.records:
        return dump, ExitStatus.OK, None
    if dump.problems:  # a file, or a folder that might hold one, could not be read
        return dump, ExitStatus.USAGE, f"{dump_path}: no dump could be read (see the warnings above)"
    if dump.folders == 0:
        return dump, ExitStatus.PROBLEMS, (f"{dump_path}: no dump found (no step*/rank*/dump.json or overflow.json): "
                                           "nothing overflowed, or the job wrote elsewhere (check dump_path)")
    return dump, ExitStatus.PROBLEMS, f"{dump_path}: the dumps hold no overflow records"


def run(dump_path: str, fmt: str = "text", out: Optional[IO[str]] = None, err: Optional[IO[str]] = None, *,
        output: Optional[str] = None, force: bool = False) -> int:
    """The body of :func:`msprobe_lint.report.main` (same arguments)."""
    out = out or sys.stdout
    err = err or sys.stderr
    dump, status, message = report(dump_path, construct=fmt == "html")
    if fmt == "html":
        from .render.html import HtmlUnavailable, render_html

        try:
            text = render_html(dump, status, message)
        except HtmlUnavailable as missing:
            err.write(f"probe: error: {missing}\n")
            return ExitStatus.USAGE
    elif fmt == "json":
        from .render.json import render_json

        text = render_json(dump, status, message)
    else:
        from .render.text import render_text

        text = render_text(dump) if dump.records else ""
    unwritten = output is not None and status == ExitStatus.USAGE  # no file: stderr says why, JSON too
    if fmt != "json" or unwritten:
        for path, problem in dump.problems:
            err.write(shown(f"probe: warning: {path}: {problem}") + "\n")
        if not dump.records:
            err.write(shown(f"probe: {'error' if status == ExitStatus.USAGE else 'note'}: {message}") + "\n")
    if output is None:
        out.write(text)
        return status
    if text and not unwritten:  # a failed report leaves no file that looks like one
        failure = write_output(text, output, force=force)
        if failure:
            err.write(f"probe: error: {failure}\n")
            return ExitStatus.USAGE
    return status
