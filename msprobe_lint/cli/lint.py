"""The body of ``probe lint``: check the option combination, lint (or fix),
render, write. Both parsers end here: the typer-free one of
``cli/__init__.py`` and the typer command of ``cli/app.py``.

Each step is a small function (as check-jsonschema's ``main_command``
builds a reporter and a checker, then executes): :func:`check_usage`,
:func:`show_files`, :func:`lint_or_fix`, :func:`report`, :func:`emit`.
Usage errors print ``probe: error: ...`` and give exit status 2.

Example::

    from msprobe_lint.lint.options import LintOptions
    status = run_lint(["config.json"], LintOptions(isolated=True), format="json")
"""
from __future__ import annotations

import os
import sys

from ..exit import ExitStatus
from ..textsafe import shown
from .messages import fail

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional


def run_lint(paths: list[str], options: Any, *, format: str = "text", output: Optional[str] = None,
             force: bool = False, fix: bool = False, unsafe_fixes: bool = False, diff: bool = False,
             show_files: bool = False) -> int:
    """Lint, print or write the report, return the exit status.

    ``fix`` applies the safe fixes (``unsafe_fixes`` the unsafe ones too),
    reports on stderr what was fixed, then reports what remains; ``diff``
    prints the fixes as a unified diff instead and writes nothing (status
    1 when there is something to fix, else that of the plain lint). With
    ``fix``, standard input's fixed text goes to stdout and the report to
    stderr (or ``output``). ``show_files`` prints what would be linted and
    why instead (text, or a JSON object for ``--format json``).

    An existing ``output`` is replaced only when it holds an earlier
    output of ``probe lint`` (a report in any format, a diff, a file
    listing) or nothing, or with ``force`` (:mod:`.lint_output`); never
    when it is a file being linted or read by the lint, or an msprobe
    config."""
    from ..lint.options import UsageError

    if output == "-":
        output = None
    problem = check_usage(paths, output, format=format, fix=fix, unsafe_fixes=unsafe_fixes, diff=diff,
                          show_files=show_files, force=force)
    if problem:
        return fail(problem)
    read = next((f for f in _read_besides(paths, options) if _overwrites(f, output)), None) if output else None
    if read is not None:  # a fresh user's training script was replaced by the report
        return fail(f"--output {output} is read by the lint ({read}: the training script or the settings); "
                    "it would be overwritten (choose another file)")
    refused = _overwrite_refusal(output, force)  # after the refusals --force does not lift, which say more
    if refused:
        return fail(refused)
    try:
        if show_files:
            text, status = list_files(paths, options, format)
        else:
            run, outcomes = lint_or_fix(paths, options, fix=fix, unsafe=unsafe_fixes, diff=diff)
            if any(_overwrites(result.path, output) for result in run.results):
                return fail(f"--output {output} is one of the files being linted; it would be overwritten")
            text, status = report(paths, run, outcomes, format=format, output=output, fix=fix, diff=diff)
            fixed_stdin = [o for o in outcomes if o.stdin] if fix and not diff else []
            if fixed_stdin:  # the input, fixed where it could be, on stdout as a filter would; the report on stderr
                _write_stdout([o.after for o in fixed_stdin])
                if output is None:
                    sys.stderr.write(text)
                    sys.stderr.flush()
                    return status
    except UsageError as err:
        return fail(str(err))
    refused = _overwrite_refusal(output, force)  # asked again: a file may have appeared there while the lint ran
    if refused:
        return fail(refused)
    return emit(text, output) or status


def _overwrite_refusal(output: Optional[str], force: bool) -> Optional[str]:
    """Why the existing file ``output`` must not be replaced, or None
    (:func:`.lint_output.overwrite_refusal`)."""
    if output is None:
        return None
    from .lint_output import overwrite_refusal

    return overwrite_refusal(output, force=force)


def check_usage(paths: list[str], output: Optional[str], *, format: str, fix: bool, unsafe_fixes: bool,
                diff: bool, show_files: bool, force: bool = False) -> Optional[str]:
    """What is wrong with this combination of options (a message for
    ``probe: error:``), or None."""
    if force and output is None:
        return "--force replaces an existing --output file; it goes with --output"
    if any(_overwrites(p, output) for p in paths):
        return f"--output {output} is one of the files being linted; it would be overwritten"
    if unsafe_fixes and not (fix or diff):
        return "--unsafe-fixes goes with --fix or --diff"
    if diff and format != "text":
        return f"--diff prints a unified diff; --format {format} does not apply to it"
    if output is not None and _holds_a_config(output):
        return f"--output {output} holds an msprobe config; it would be overwritten (choose another file)"
    if show_files and (fix or diff):
        return "--show-files lints nothing; it does not go with --fix or --diff"
    if show_files and format not in ("text", "json"):
        return f"--show-files lists files as text or --format json; --format {format} reports findings"
    return None


def list_files(paths: list[str], options: Any, format: str) -> tuple[str, int]:
    """``--show-files``: (the listing, exit status 2 when something could
    not be read, else 0). Text as project.discovery.show_files writes it,
    or for ``--format json`` ``{"files": [{"path", "action", "reason",
    "folder"}]}``."""
    from ..lint.inputs import list_files as candidates_of

    candidates = candidates_of(paths, options)
    status = ExitStatus.USAGE if any(c.action == "unreadable" for c in candidates) else ExitStatus.OK
    if format != "json":
        from ..project.discovery import show_files

        return show_files(candidates), status
    import json

    files = [{"path": c.path, "action": c.action, "reason": c.reason, "folder": c.folder} for c in candidates]
    return json.dumps({"files": files}, indent=2, ensure_ascii=False) + "\n", status


def lint_or_fix(paths: list[str], options: Any, *, fix: bool, unsafe: bool, diff: bool) -> tuple[Any, list]:
    """The LintRun, and the FixOutcome of each file when fixing
    (``--fix``, or ``--diff`` which writes nothing)."""
    if fix or diff:
        from ..lint.fixing import fix_paths

        return fix_paths(paths, options, unsafe=unsafe, write=not diff)
    from ..lint.api import lint_paths

    return lint_paths(paths, options), []


def report(paths: list[str], run: Any, outcomes: list, *, format: str, output: Optional[str], fix: bool,
           diff: bool) -> tuple[str, int]:
    """(the report, the exit status): the findings in ``format``, or the
    unified diff for ``--diff``; what was fixed goes to stderr."""
    folders = [p for p in paths if p != "-" and os.path.isdir(p)]
    if folders and not run.results:  # a mistyped path or an exclude too wide should not pass silently
        sys.stderr.write(f"probe: warning: no msprobe config found in {shown(', '.join(folders))}; "
                         "--show-files lists what was skipped and why\n")
    status = run.status
    report_on_stderr = fix and not diff and output is None and any(o.stdin for o in outcomes)
    if (fix or diff) and not (report_on_stderr and format != "text"):  # keep a JSON report parseable
        left = [d for r in run.results for d in r.diagnostics]
        _say_fixed(outcomes, diff, remaining=len(left), unsafe=sum(d.fix is not None and not d.fix.safe for d in left))
    if diff:
        if any(o.applied for o in outcomes) and status != ExitStatus.USAGE:
            status = ExitStatus.PROBLEMS
        return "".join(outcome.diff() for outcome in outcomes), status
    from ..lint.reporters import get

    return get(format)(run.results, color=output is None and sys.stdout.isatty()), status


def emit(text: str, output: Optional[str]) -> Optional[int]:
    """Print ``text``, or write it to ``output``; the exit status of a
    usage error when the file cannot be written, else None.

    ``output`` is written through a temporary file in its folder, renamed
    over it once complete (a failure leaves the old report as it was); a
    lone surrogate (a file name's undecodable byte, a ``"\\ud800"`` in a
    config) is written as its ``\\uXXXX`` escape, which JSON reads back.
    A path that is not a regular file (``/dev/stdout``, a pipe) is written
    in place."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return None
    data = text.encode("utf-8", "backslashreplace")
    from ..report.output import link_loop

    loop = link_loop(output)
    if loop:  # said as probe report says it, not as the raw "Too many levels of symbolic links"
        return fail(f"cannot write {output}: it {loop}")
    try:
        if os.path.exists(output) and not os.path.isfile(output):
            with open(output, "wb") as handle:
                handle.write(data)
        else:
            _replace(output, data)
    except OSError as err:
        return fail(f"cannot write {output}: {err.strerror or err}")
    return None


def _replace(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same
    folder (the mode of the file it replaces, else what the umask gives a
    new file), then renamed over ``path`` (through a soft link, the file
    it points to).

    Raises:
        OSError: the folder is not writable, the disk is full...
    """
    import tempfile

    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(prefix=".probe-", suffix=".tmp", dir=os.path.dirname(target))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _read_besides(paths: list[str], options: Any) -> list[str]:
    """The files the lint reads besides the configs: ``--script``,
    ``--config-file``, and the pyproject.toml whose ``[tool.probe-lint]``
    applies with the script it names (none when those settings cannot be
    read: the lint itself then says why)."""
    files = [getattr(options, "script", None), getattr(options, "config_file", None)]
    from ..lint.inputs import settings_start
    from ..lint.options import UsageError, find_project

    try:
        project = find_project(options, settings_start(paths, options))
    except UsageError:
        project = None
    if project is not None:
        files += [str(project.path), project.script]
    return [f for f in files if f]


def _overwrites(path: str, output: Optional[str]) -> bool:
    """True when writing ``output`` would replace the file ``path``."""
    return (output is not None and path != "-" and os.path.exists(path) and os.path.exists(output)
            and os.path.samefile(path, output))


def _write_stdout(texts: list[str]) -> None:
    """Texts on stdout as bytes, lone surrogates (undecodable input bytes)
    restored as they came in."""
    out = getattr(sys.stdout, "buffer", None)
    for text in texts:
        if out is None:
            sys.stdout.write(text)
        else:
            sys.stdout.flush()
            out.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.flush()


def _holds_a_config(output: str) -> bool:
    """True when the file ``output`` exists and is an msprobe config: a
    JSON object that sniff.looks_like_msprobe takes for one (a report must
    not replace a config, even one not being linted)."""
    if not os.path.isfile(output):
        return False
    from ..lint.loader import read_bytes
    from ..project.sniff import looks_like_msprobe

    raw, _ = read_bytes(output)
    if raw is None or not looks_like_msprobe(raw):
        return False
    import json

    try:  # a text report quotes a config's lines; only a JSON object is one
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json.loads reads
        return False


def _say_fixed(outcomes: list, diff: bool, remaining: int = 0, unsafe: int = 0) -> None:
    """On stderr: per file, what ``--fix`` fixed (or why not); for
    ``--diff``, how many findings it would fix, or that it has nothing to
    show while ``remaining`` findings are left (``unsafe`` of them with an
    unsafe fix not asked for)."""
    from ..lint.fixing import fixes_named

    for outcome in outcomes:
        if outcome.skipped:
            sys.stderr.write(f"probe: {shown(outcome.path)}: {shown(outcome.skipped)}\n")
        if outcome.applied and not diff:
            codes = shown(fixes_named(outcome.applied))
            sys.stderr.write(f"{shown(outcome.path)}: fixed {len(outcome.applied)}: {codes}\n")
    changed = sum(bool(o.applied) for o in outcomes)
    fixes = sum(len(o.applied) for o in outcomes)
    if diff and changed:
        sys.stderr.write(f"Would fix {fixes} finding{'s' if fixes != 1 else ''} in {changed} "
                         f"file{'s' if changed != 1 else ''}.\n")
    elif diff and unsafe:
        sys.stderr.write(f"No safe fix to show; {unsafe} finding{'s' if unsafe != 1 else ''} "
                         f"{'have' if unsafe != 1 else 'has'} an unsafe fix (add --unsafe-fixes to see "
                         f"{'them' if unsafe != 1 else 'it'}).\n")
    elif diff and remaining:
        sys.stderr.write(f"No fix to show; {remaining} finding{'s' if remaining != 1 else ''} left "
                         "(run probe lint without --diff to see them).\n")
    sys.stderr.flush()
