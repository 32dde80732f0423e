"""The ``probe report`` command: two passes over the dump, the exit status,
rendering, writing (see :func:`msprobe_lint.report.main`).

The first pass reads every rank folder once (overflow.json only, or
dump.json's names when there is no overflow.json) into a
:class:`~.analysis.scan.Summary`; the second reads again, whole, only the
folders the report shows (one per group of ranks of the shown steps),
while the report is written.
"""
from __future__ import annotations

import functools
import itertools
import os
import shlex
import sys
from pathlib import Path
from typing import IO, Iterable, Iterator, Optional

from probe_format.layout import parse_rank, parse_step

from ..exit import ExitStatus
from ..textsafe import shown
from .analysis.first import STILL_WRITTEN, lost_folders, lost_sentence, turned_off_sentence
from .analysis.scan import Summary, scan
from .discover import dumps_below, iter_rank_folders
from .output import inside_dump, inside_walked, link_loop, write_output
from .progress import Progress
from .reader import ReadCache, read_folder
from .render import RenderUnavailable
from .view import Report, build

FORMATS = ("text", "json", "html")


def summarise(dump_path: str, *, keep_received: bool = False, progress: Optional[Progress] = None,
              cache: Optional[ReadCache] = None) -> tuple[Summary, ExitStatus, Optional[str]]:
    """The first pass: (summary, exit status, message when nothing can be shown).

    Never raises for bad input: a missing or unreadable dump path is exit
    status USAGE with its message, and every file or folder that could not
    be read is in ``summary.problems``. So are, as warnings that change no
    exit status, the signs of two writers (:func:`writer_problems`), and,
    with ``summary.turned_off``, the rank folders whose debugger turned
    detection off (a dump with no record is then exit status USAGE, no
    all-clear).
    """
    from ..live_writers import read_writers

    writers = read_writers(str(marker_folder(dump_path))) if dump_path else []
    summary, status, message = _summarise(dump_path, keep_received=keep_received, progress=progress, cache=cache,
                                          writers=writers)
    if status != ExitStatus.USAGE or summary.folders or summary.turned_off:
        summary.problems.extend(writer_problems(dump_path, writers))
    return summary, status, message


def marker_folder(dump_path: str) -> Path:
    """The folder of the writer markers of the dump (``msprobe_lint.live_writers``):
    dump_path; for a step or rank folder given, the dump_path above it."""
    root = Path(dump_path)
    for _ in range(2):  # DUMP, DUMP/stepN or DUMP/stepN/rankR
        if (parse_step(root.name)[0] or parse_rank(root.name)[0]) and not any(root.glob(".probe-writer-*.lock")):
            root = root.parent
    return root


def writer_problems(dump_path: str, writers: Optional[list] = None) -> list[tuple[str, str]]:
    """What the writer markers of the dump (``writers``, else read from
    :func:`marker_folder`) say is wrong, as (path, problem): rank folders
    still being written (the report may miss records), rank folders whose
    debugger turned detection off (its records from then on were never
    written), and markers of more than one run (two jobs wrote into one
    dump_path: their records are mixed)."""
    from ..live_writers import read_writers

    root = marker_folder(dump_path)
    if writers is None:
        writers = read_writers(str(root))
    # a live process that turned detection off writes no more records: not "still being written" (a review's
    # finding: the summary said so, as if the rest of the dump would come)
    problems = [(w.path, f"{w.rank_dir} {STILL_WRITTEN} {w.describe()}; the report may miss its "
                         "latest records") for w in writers if w.live and not w.turned_off]
    earlier = earlier_runs(writers)
    problems += [(w.path, f"{w.turned_off_text()}; what it found from then on was not written"
                          + (f" (its process still runs, unchecked: {w.describe()})" if w.live else "")
                          + (f"; an earlier run's marker ({w.describe()}): another run wrote into this dump_path "
                             "after it ended, and the summary is not about it" if w.path in earlier else ""))
                 for w in writers if w.turned_off]
    runs = _runs(writers)
    if len(runs) > 1:
        told = "; ".join(f"{', '.join(w.rank_dir for w in run)} by {run[0].describe()}" for run in runs)
        problems.append((str(root), f"written by {len(runs)} different runs ({told}); the records of different "
                                    "runs are mixed in this report"))
    return problems


def _runs(writers: list) -> list[list]:
    """``writers`` grouped by run (``Writer.same_job``), in the order found."""
    runs: list[list] = []
    for writer in writers:
        for run in runs:
            if run[0].same_job(writer):
                run.append(writer)
                break
        else:
            runs.append([writer])
    return runs


def earlier_runs(writers: list) -> set[str]:
    """The markers (paths) of a run that had ended before another run of
    this dump_path started: none of its markers is live, and each marker
    of that other run started after all of its own (``started``, UTC ISO
    8601). A review's finding: an earlier run's "detection was turned off",
    in a rank folder the later run does not write, was said as the dump's,
    and a dump with no record was "no all-clear" although the later run
    checked it whole. Such a marker is still warned about."""
    runs = _runs(writers)
    out: set[str] = set()
    for run in runs:
        if any(w.live or not w.started for w in run):
            continue
        last = max(w.started for w in run)
        if any(all(w.started > last for w in other) for other in runs if other is not run):
            out.update(w.path for w in run)
    return out


def _unreachable(path: str) -> Optional[str]:
    """Why ``path`` leads to nothing (words that follow it), or None. A
    soft link loop is said as one (a hunt's finding: ``probe report`` on
    one said "no such file or directory", as ``Path.exists`` does)."""
    loop = link_loop(path)
    if loop:
        return f"{loop}; give the dump_path folder"
    try:
        os.stat(path)
    except FileNotFoundError:
        return "no such file or directory"
    except OSError as err:
        return err.strerror or str(err)
    return None


def _summarise(dump_path: str, *, keep_received: bool, progress: Optional[Progress],
               cache: Optional[ReadCache], writers: list) -> tuple[Summary, ExitStatus, Optional[str]]:
    if not dump_path:  # Path("") is the current folder: `probe report "$UNSET"` would read it unasked
        return Summary(dump_path), ExitStatus.USAGE, ("an empty DUMP_PATH names no folder (an unset variable?); "
                                                      "give the dump_path folder, `.` for the current one")
    root = Path(dump_path)
    unreachable = _unreachable(dump_path)
    if unreachable:
        return Summary(dump_path), ExitStatus.USAGE, f"{dump_path}: {unreachable}"
    if not root.is_dir():
        return Summary(dump_path), ExitStatus.USAGE, f"{dump_path}: not a directory (give the dump_path folder)"
    if not os.access(root, os.R_OK | os.X_OK):
        return Summary(dump_path), ExitStatus.USAGE, f"{dump_path}: permission denied"
    problems: list[tuple[str, str]] = []
    walked: dict[tuple[int, int], str] = {}
    read = functools.partial(read_folder, statistics=False, cache=cache or ReadCache())
    summary = scan(dump_path, iter_rank_folders(root, problems, walked), read, keep_received=keep_received,
                   progress=progress)
    summary.problems[:0] = problems
    summary.walked = walked
    earlier = earlier_runs(writers)  # a run that ended before another one started: warned about, not the dump's
    summary.turned_off = [(w.rank_dir, w.turned_off_step, w.turned_off) for w in writers
                          if w.turned_off and w.path not in earlier]
    if summary.records:
        return summary, ExitStatus.OK, None
    # a tester's finding: a full disk turned detection off, and the report said "nothing overflowed"
    turned = f" {turned_off_sentence(summary)}" if summary.turned_off else ""
    if summary.problems:  # a file, or a folder that might hold one, could not be read
        lost = lost_folders(summary, None)[0]
        if lost:  # a tester's finding: a full disk left tensors only, and the report said "nothing overflowed"
            return summary, ExitStatus.USAGE, (f"{dump_path}: no overflow record could be read (see the warnings "
                                               f"above). {lost_sentence(lost)}{turned}")
        return summary, ExitStatus.USAGE, f"{dump_path}: no dump could be read (see the warnings above){turned}"
    if turned:  # no record, and what the run found after it turned detection off was never written: no all-clear
        return summary, ExitStatus.USAGE, (f"{dump_path}: no overflow record, and no all-clear: probe_runtime "
                                           f"stopped checking.{turned}")
    if summary.folders == 0:
        ran = [w for w in writers if not w.live]
        if ran:  # probe_runtime's markers: its job wrote here and recorded nothing (a fresh user's finding)
            said = [f"{w.rank_dir}: {w.summary}" for w in ran if w.summary]
            if said:  # the run's own all-clear: how many steps, what it did not see (a hunt's finding)
                return summary, ExitStatus.PROBLEMS, (
                    f"{dump_path}: no overflow recorded: probe_runtime checked this dump_path (written by "
                    f"{ran[0].describe()}) and found nothing; its last word, per rank folder: "
                    + " | ".join(said[:8]) + (f" | ... and {len(said) - 8} more" if len(said) > 8 else ""))
            return summary, ExitStatus.PROBLEMS, (
                f"{dump_path}: no overflow recorded: probe_runtime checked this dump_path "
                f"(rank folder(s) {', '.join(w.rank_dir for w in ran)}, written by {ran[0].describe()}) "
                "and found nothing: nothing overflowed "
                "in the steps it checked, if it checked any (its own last line on stderr says how many: \"no "
                "overflow found in N checked step(s)\"; a job that ended before its first start() checked none)")
        below, complete = dumps_below(dump_path)
        if below:  # a hunt's finding: `probe report parent` of parent/run1/step1/rank0 said only "no dump found"
            more = "" if complete else ", and maybe more (the search below is bounded)"
            run_it = f"probe report {shlex.quote(below[0])}"
            return summary, ExitStatus.PROBLEMS, (
                f"{dump_path}: no dump in this folder itself (no step*/rank*/dump.json or overflow.json); found "
                + (f"a dump below it: {below[0]}{more} (run `{run_it}`)" if len(below) == 1 else
                   f"dumps below it: {', '.join(below)}{more} (run `probe report` on one of them, e.g. "
                   f"`{run_it}`)"))
        return summary, ExitStatus.PROBLEMS, (f"{dump_path}: no dump found (no step*/rank*/dump.json or "
                                              "overflow.json): nothing overflowed, or the job wrote elsewhere "
                                              "(check dump_path)")
    return summary, ExitStatus.PROBLEMS, f"{dump_path}: the dumps hold no overflow records"


def report(dump_path: str, *, html: bool = False, show_all: bool = False,
           progress: Optional[Progress] = None) -> Report:
    """Both passes, ready to render: the first now, the second while the
    report's sections are walked."""
    cache = ReadCache()
    try:
        summary, status, message = summarise(dump_path, keep_received=show_all, progress=progress, cache=cache)
    finally:
        if progress is not None:
            progress.close()
    read = functools.partial(read_folder, statistics=True, construct=html, cache=cache)
    return build(summary, status, message, read, show_all=show_all)


def render(report_: Report, fmt: str) -> Iterator[str]:
    """The report in ``fmt`` as text pieces.

    Raises:
        RenderUnavailable: ``html`` without Jinja2.
    """
    if fmt == "html":
        from .render.html import render_html

        return render_html(report_)
    if fmt == "json":
        from .render.json import render_json

        return render_json(report_)
    from .render.text import render_text

    return render_text(report_)


def _warn(err: IO[str], problems: Iterable[tuple[str, str]]) -> None:
    for path, problem in problems:
        err.write(shown(f"probe: warning: {path}: {problem}") + "\n")


def run(dump_path: str, fmt: str = "text", out: Optional[IO[str]] = None, err: Optional[IO[str]] = None, *,
        output: Optional[str] = None, force: bool = False, show_all: bool = False) -> int:
    """The body of :func:`msprobe_lint.report.main` (same arguments)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if force and output is None:  # a fresh user's finding: --force without -o was taken silently
        err.write("probe: error: --force replaces an existing --output file; it goes with --output\n")
        return ExitStatus.USAGE
    refused = inside_dump(output, dump_path) if output is not None and dump_path else None  # "": refused below
    loop = link_loop(output) if output is not None and not refused else None
    if loop:  # said before the dump is read, as a file inside it is
        refused = f"cannot write {output}: it {loop}"
    if refused:
        err.write(shown(f"probe: error: {refused}") + "\n")
        return ExitStatus.USAGE
    result = report(dump_path, html=fmt == "html", show_all=show_all, progress=Progress(err))
    status = ExitStatus(result.status)
    try:
        pieces = render(result, fmt)
    except RenderUnavailable as missing:
        err.write(f"probe: error: {missing}\n")
        return ExitStatus.USAGE
    unwritten = output is not None and status == ExitStatus.USAGE  # no file: stderr says why, JSON too
    warn = fmt != "json" or unwritten
    if warn:
        _warn(err, result.problems)
    if not result.summary.records and (warn or status == ExitStatus.USAGE):  # an error is said on stderr too
        err.write(shown(f"probe: {'error' if status == ExitStatus.USAGE else 'note'}: {result.message}") + "\n")
    before = len(result.problems)
    pieces = iter(pieces)
    first = next(pieces, None)
    if first is None:  # the text report of a dump with no records: nothing at all, no file either
        pass
    elif output is None:
        out.write(first)
        for piece in pieces:
            out.write(piece)
    elif not unwritten:  # a failed report leaves no file that looks like one
        failure = inside_walked(output, result.summary.walked) or \
            write_output(itertools.chain((first,), pieces), output, force=force)
        if failure:
            err.write(shown(f"probe: error: {failure}") + "\n")
            return ExitStatus.USAGE
    if warn:
        _warn(err, result.problems[before:])  # found while the shown folders were read again
    return status
