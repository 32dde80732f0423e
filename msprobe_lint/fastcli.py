"""The ``probe`` console script: ``probe lint`` without loading typer.

A pre-commit hook or a CI step runs ``probe lint`` once per commit, so its
start-up time is most of its run time, and typer (which builds pydantic
adapters for every option before the command body runs) costs more than
the lint itself. :func:`main` therefore reads the arguments of a plain
``probe lint`` here, with the same meaning click gives them, and hands
anything else to the typer application in cli.py unchanged: other
commands, ``--help``, an unknown or repeated option, an option value that
is empty, starts with ``-`` or is not one of its choices, ``-fjson``-style
bundling, shell completion, Windows. Whatever is not recognised here is
therefore handled (and, for a mistake, reported) by typer exactly as
before; what is recognised runs :func:`run_lint`, the body cli.lint itself
calls. tests/test_fastcli.py checks that both paths give the same output
and exit status, and that :data:`LINT_OPTIONS` matches the options cli.py
declares.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Any, Optional, Sequence

from .exit import ExitStatus

# option -> (LintOptions field or "format"/"output", kind); kind is "flag",
# "str", "multi" (repeatable), "posint" (integer >= 1) or a tuple of choices.
LINT_OPTIONS: dict[str, tuple[str, Any]] = {
    "--format": ("format", ("text", "json", "sarif", "github")),
    "-f": ("format", ("text", "json", "sarif", "github")),
    "--output": ("output", "str"),
    "-o": ("output", "str"),
    "--framework": ("framework", ("mindspore", "msadapter", "pytorch")),
    "--mode": ("mode", ("pynative", "graph")),
    "--jit-level": ("jit_level", ("O0", "O1", "O2")),
    "--mindspore-version": ("mindspore_version", "str"),
    "--world-size": ("world_size", "posint"),
    "--msprobe-version": ("msprobe_version", "str"),
    "--script": ("script", "str"),
    "--check-fs": ("check_fs", "flag"),
    "--cwd": ("cwd", "str"),
    "--isolated": ("isolated", "flag"),
    "--strict": ("strict", "flag"),
    "--select": ("select", "multi"),
    "--ignore": ("ignore", "multi"),
    "--extend-select": ("extend_select", "multi"),
    "--config-file": ("config_file", "str"),
    "--only-msprobe": ("only_msprobe", "flag"),
    "--fix": ("fix", "flag"),
    "--unsafe-fixes": ("unsafe_fixes", "flag"),
    "--diff": ("diff", "flag"),
    "--exclude": ("exclude", "multi"),
    "--extend-exclude": ("extend_exclude", "multi"),
    "--follow-symlinks": ("follow_symlinks", "flag"),
    "--show-files": ("show_files", "flag"),
    "--stdin-filename": ("stdin_filename", "str"),
}
_POSINT = re.compile(r"[1-9][0-9]{0,8}")


def parse_lint(args: Sequence[str]) -> Optional[tuple[list[str], dict[str, Any]]]:
    """``(paths, values)`` for a ``lint ...`` argument list this module
    understands exactly as click would; None for anything else."""
    if not args or args[0] != "lint" or os.name == "nt" or os.environ.get("_PROBE_COMPLETE"):
        return None
    paths: list[str] = []
    values: dict[str, Any] = {}
    rest = list(args[1:])
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
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
        spec = LINT_OPTIONS.get(name)
        if spec is None:
            return None
        field, kind = spec
        if kind == "flag":
            if equals or field in values:
                return None
            values[field] = True
            continue
        if not equals:
            if index >= len(rest):
                return None
            value = rest[index]
            index += 1
        if not value or value.startswith("-"):
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        if kind == "multi":
            values.setdefault(field, []).append(value)
            continue
        if field in values:
            return None
        if isinstance(kind, tuple):
            if value not in kind:
                return None
        elif kind == "posint":
            if not _POSINT.fullmatch(value):
                return None
            values[field] = int(value)
            continue
        values[field] = value
    if not (paths or values.get("stdin_filename")) or any(not path for path in paths):
        return None
    return paths, values


def _fail(message: str, status: int = ExitStatus.USAGE) -> int:
    sys.stderr.write(f"probe: error: {message}\n")
    sys.stderr.flush()
    return status


def run_lint(paths: list[str], options: Any, *, format: str = "text", output: Optional[str] = None,
             fix: bool = False, unsafe_fixes: bool = False, diff: bool = False, show_files: bool = False) -> int:
    """Lint, print or write the report, return the exit status (the body
    of ``probe lint``; usage errors print ``probe: error: ...`` and give 2).

    ``fix`` applies the safe fixes (``unsafe_fixes`` the unsafe ones too),
    reports on stderr what was fixed, then reports what remains; ``diff``
    prints the fixes as a unified diff instead and writes nothing (status
    1 when there is something to fix, else that of the plain lint). With
    ``fix``, standard input's fixed text goes to stdout and the report to
    stderr (or ``output``). ``show_files`` prints what would be linted and
    why instead (text, or a JSON object for ``--format json``)."""
    from .lint.api import UsageError, fix_paths, lint_paths, list_files

    if output == "-":
        output = None

    def overwrites(path: str) -> bool:
        return (output is not None and path != "-" and os.path.exists(path) and os.path.exists(output)
                and os.path.samefile(path, output))

    if any(overwrites(p) for p in paths):
        return _fail(f"--output {output} is one of the files being linted; it would be overwritten")
    if unsafe_fixes and not (fix or diff):
        return _fail("--unsafe-fixes goes with --fix or --diff")
    if diff and format != "text":
        return _fail(f"--diff prints a unified diff; --format {format} does not apply to it")
    if output is not None and _holds_a_config(output):
        return _fail(f"--output {output} holds an msprobe config; it would be overwritten (choose another file)")
    try:
        if show_files:
            if fix or diff:
                return _fail("--show-files lints nothing; it does not go with --fix or --diff")
            candidates = list_files(paths, options)
            status: int = ExitStatus.USAGE if any(c.action == "unreadable" for c in candidates) else ExitStatus.OK
            text = _show_files(candidates, format)
        else:
            outcomes: list = []
            if fix or diff:
                run, outcomes = fix_paths(paths, options, unsafe=unsafe_fixes, write=not diff)
            else:
                run = lint_paths(paths, options)
            if any(overwrites(result.path) for result in run.results):
                return _fail(f"--output {output} is one of the files being linted; it would be overwritten")
            from .lint.reporters import get

            folders = [p for p in paths if p != "-" and os.path.isdir(p)]
            if folders and not run.results:  # a mistyped path or an exclude too wide should not pass silently
                sys.stderr.write(f"probe: warning: no msprobe config found in {', '.join(folders)}; "
                                 "--show-files lists what was skipped and why\n")
            status = run.status
            report_on_stderr = fix and not diff and output is None and any(o.stdin for o in outcomes)
            if (fix or diff) and not (report_on_stderr and format != "text"):  # keep a JSON report parseable
                _say_fixed(outcomes, diff, remaining=sum(len(r.diagnostics) for r in run.results))
            if diff:
                text = "".join(outcome.diff() for outcome in outcomes)
                if any(o.applied for o in outcomes) and status != ExitStatus.USAGE:
                    status = ExitStatus.PROBLEMS
            else:
                text = get(format)(run.results, color=output is None and sys.stdout.isatty())
            fixed_stdin = [o for o in outcomes if o.stdin] if fix and not diff else []
            if fixed_stdin:  # the input, fixed where it could be, on stdout as a filter would; the report on stderr
                out = getattr(sys.stdout, "buffer", None)
                for o in fixed_stdin:
                    if out is None:
                        sys.stdout.write(o.after)
                    else:
                        sys.stdout.flush()
                        out.write(o.after.encode("utf-8", "surrogateescape"))
                sys.stdout.flush()
                if output is None:
                    sys.stderr.write(text)
                    sys.stderr.flush()
                    return status
    except UsageError as err:
        return _fail(str(err))
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as err:
            return _fail(f"cannot write {output}: {err.strerror or err}")
    return status


def _show_files(candidates: list, format: str) -> str:
    """``--show-files`` output: discovery.show_files text, or for
    ``--format json`` ``{"files": [{"path", "action", "reason", "folder"}]}``."""
    from .project.discovery import show_files

    if format != "json":
        return show_files(candidates)
    import json

    files = [{"path": c.path, "action": c.action, "reason": c.reason, "folder": c.folder} for c in candidates]
    return json.dumps({"files": files}, indent=2, ensure_ascii=False) + "\n"


def _holds_a_config(output: str) -> bool:
    """True when the file ``output`` exists and is an msprobe config: a
    JSON object that sniff.looks_like_msprobe takes for one (a report must
    not replace a config, even one not being linted)."""
    from .lint.loader import read_bytes
    from .project.sniff import looks_like_msprobe

    if not os.path.isfile(output):
        return False
    raw, _ = read_bytes(output)
    if raw is None or not looks_like_msprobe(raw):
        return False
    import json

    try:  # a text report quotes a config's lines; only a JSON object is one
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def _say_fixed(outcomes: list, diff: bool, remaining: int = 0) -> None:
    """On stderr: per file, what ``--fix`` fixed (or why not); for
    ``--diff``, how many findings it would fix, or that it has nothing to
    show while ``remaining`` findings are left."""
    for outcome in outcomes:
        if outcome.skipped:
            sys.stderr.write(f"probe: {outcome.path}: {outcome.skipped}\n")
        if outcome.applied and not diff:
            codes = ", ".join(f"{d.code} {d.fix.description}" for d in outcome.applied)
            sys.stderr.write(f"{outcome.path}: fixed {len(outcome.applied)}: {codes}\n")
    changed = sum(bool(o.applied) for o in outcomes)
    fixes = sum(len(o.applied) for o in outcomes)
    if diff and changed:
        sys.stderr.write(f"Would fix {fixes} finding{'s' if fixes != 1 else ''} in {changed} "
                         f"file{'s' if changed != 1 else ''}.\n")
    elif diff and remaining:
        sys.stderr.write(f"No fix to show; {remaining} finding{'s' if remaining != 1 else ''} left "
                         "(run probe lint without --diff to see them).\n")
    sys.stderr.flush()


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


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Console-script entry point: the fast ``probe lint``, else cli.main."""
    for stream in (sys.stdout, sys.stderr):
        try:  # a path with non-ASCII letters must not crash a report on a non-UTF-8 terminal
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    args = list(sys.argv[1:] if argv is None else argv)
    parsed = parse_lint(args)
    if parsed is None:
        from .cli import main as typer_main

        typer_main(None if argv is None else list(argv))
        return
    paths, values = parsed
    from .lint.api import LintOptions

    format = values.pop("format", "text")
    output = values.pop("output", None)
    fixing = {key: values.pop(key, False) for key in ("fix", "unsafe_fixes", "diff", "show_files")}
    for key in ("select", "ignore", "extend_select", "exclude", "extend_exclude"):
        if key in values:
            values[key] = tuple(values[key])
    try:
        status = run_lint(paths, LintOptions(**values), format=format, output=output, **fixing)
    except KeyboardInterrupt:
        status = ExitStatus.INTERRUPTED
    except BrokenPipeError:
        sys.stdout = _QuietFlush(sys.stdout)
        sys.stderr = _QuietFlush(sys.stderr)
        status = ExitStatus.PROBLEMS
    sys.exit(status)
