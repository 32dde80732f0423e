"""The ``probe`` command line: the only code that knows about argv and
typer.

:func:`main` is the console script. A pre-commit hook or a CI step runs
``probe lint`` once per commit, so its start-up time is most of its run
time, and typer (which builds pydantic adapters for every option) costs
more than the lint itself. So ``main`` reads a plain ``probe lint``
command line itself (``cli.lint_args.parse_lint``, with the meaning click
gives it) and runs ``cli.lint.run_lint``, the same body the typer command
runs; a plain ``probe report`` likewise (``cli.report_args.parse_report``,
then ``cli.commands.report.main``); anything else (other commands, ``--help``, an argument list it does
not recognise exactly, shell completion) goes to the typer application in
``cli.app``, loaded only then.

Example::

    python -m msprobe_lint lint --isolated config.json
"""
from __future__ import annotations

import sys

from ..exit import ExitStatus

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run ``probe`` with ``argv`` (default: the process's arguments) and
    exit with its status; never a traceback for Ctrl+C or a closed pipe."""
    for stream in (sys.stdout, sys.stderr):
        try:  # a path with non-ASCII letters must not crash a report on a non-UTF-8 terminal
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _dispatch(args)
    except KeyboardInterrupt:
        sys.stderr.write("probe: interrupted\n")
        status = ExitStatus.INTERRUPTED
    except BrokenPipeError:  # the reader went away (probe lint | head): as click does, exit 1 quietly
        sys.stdout = _QuietFlush(sys.stdout)
        sys.stderr = _QuietFlush(sys.stderr)
        status = ExitStatus.PROBLEMS
    sys.exit(status)


def _dispatch(args: list[str]) -> int:
    """The exit status of ``probe ARGS``: the fast ``probe lint``,
    ``probe report`` and ``--version`` here, everything else through typer."""
    if args in (["--version"], ["-V"]):
        from .messages import version_line

        sys.stdout.write(version_line() + "\n")
        return ExitStatus.OK
    problem = _cwd_problem()
    if problem:
        from .messages import fail

        return fail(problem)
    if args and args[0] == "report":
        from .report_args import parse_report

        report = parse_report(args)
        if report is not None:
            from .commands.report import main as run_report

            dump_path, options = report
            return run_report(dump_path, options.pop("format", "text"), **options)
    from .lint_args import parse_lint

    parsed = parse_lint(args)
    if parsed is None:
        from .app import run_app

        return run_app(args)
    paths, values = parsed
    from ..lint.options import LintOptions
    from .lint import run_lint

    format = values.pop("format", "text")
    output = values.pop("output", None)
    fixing = {key: values.pop(key, False) for key in ("force", "fix", "unsafe_fixes", "diff", "show_files")}
    for key in ("select", "ignore", "extend_select", "exclude", "extend_exclude"):
        if key in values:
            values[key] = tuple(values[key])
    return run_lint(paths, LintOptions(**values), format=format, output=output, **fixing)


def _cwd_problem() -> Optional[str]:
    """What is wrong with the current folder (a message for ``probe:
    error:``), or None: every command resolves relative paths (a config's
    ``dump_path``, pyproject.toml's lookup) against it, so a folder deleted
    under the shell (``mkdir x && cd x && rmdir ../x``) is a usage error,
    not a traceback."""
    import os

    try:
        os.getcwd()
    except FileNotFoundError:
        return "the current folder no longer exists (it was deleted); cd to an existing folder and run probe again"
    except OSError as err:
        return f"cannot read the current folder: {err.strerror or err}"
    return None


class _QuietFlush:
    """Wraps a stream whose reader went away so the final flush at exit
    stays silent (what click does on a broken pipe)."""

    def __init__(self, wrapped: Any):
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except BrokenPipeError:
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
