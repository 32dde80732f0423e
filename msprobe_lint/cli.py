"""The ``probe`` command line: parses arguments and hands them to the
library (api.py, engine.py); no rule logic lives here. Exit statuses:
msprobe_lint.exit.ExitStatus.
"""
from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

from .exit import ExitStatus

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Pre-flight checks for msprobe config.json files, and a guarded overflow detector.")


class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class Framework(str, Enum):
    mindspore = "mindspore"
    msadapter = "msadapter"
    pytorch = "pytorch"


class Mode(str, Enum):
    pynative = "pynative"
    graph = "graph"


class JitLevel(str, Enum):
    O0 = "O0"
    O1 = "O1"
    O2 = "O2"


def fail(message: str, status: int = ExitStatus.USAGE) -> "typer.Exit":
    """Print ``probe: error: message`` to stderr and return an Exit."""
    typer.echo(f"probe: error: {message}", err=True)
    return typer.Exit(status)


# Options shared by `lint` and `run`.
FORMAT = typer.Option(Format.text, "--format", "-f", help="Output format.")
OUTPUT = typer.Option(None, "--output", "-o", help="Write the report to this file.")
# Context values are case-insensitive, as in [tool.probe-lint] (`--mode Graph`).
FRAMEWORK = typer.Option(None, case_sensitive=False, help="Framework the config is for.")
MODE = typer.Option(None, case_sensitive=False,
                    help="MindSpore execution mode: pynative (dynamic graph) or graph (static graph).")
JIT = typer.Option(None, "--jit-level", case_sensitive=False, help="jit_level of the static-graph compile.")
MS_VERSION = typer.Option(None, "--mindspore-version", metavar="X.Y.Z", help="MindSpore version of the target.")
WORLD = typer.Option(None, "--world-size", min=1, help="Number of processes (ranks) of the job.")
MSPROBE_VERSION = typer.Option(None, "--msprobe-version", metavar="X.Y",
                               help="mindstudio-probe release the config targets (8.1, 8.3, 26.x; default 8.3).")
SCRIPT = typer.Option(None, "--script", help="Training script to analyse (never run).")
CHECK_FS = typer.Option(False, "--check-fs", help="Also check paths on this machine's filesystem.")
CWD = typer.Option(None, "--cwd", help="Folder relative paths are resolved against (default: here).")
ISOLATED = typer.Option(False, "--isolated", help="Use only the flags: no pyproject.toml, nothing from the environment.")
STRICT = typer.Option(False, "--strict", help="Exit 1 on warnings too.")
SELECT = typer.Option([], "--select", help="Only these codes or prefixes (comma-separated).")
IGNORE = typer.Option([], "--ignore", help="Skip these codes or prefixes (comma-separated).")
EXTEND = typer.Option([], "--extend-select", help="Add these codes to the selection.")
CONFIG_FILE = typer.Option(None, "--config-file", help="Read the tool.probe-lint table from this file.")
ONLY_MSPROBE = typer.Option(False, "--only-msprobe",
                            help="Skip named JSON files that are clearly not msprobe configs (for pre-commit).")
FIX = typer.Option(False, "--fix", help="Apply the safe fixes in place, then report what is left.")
UNSAFE_FIXES = typer.Option(False, "--unsafe-fixes",
                            help="With --fix or --diff: apply the unsafe fixes too (they may change what the job does).")
DIFF = typer.Option(False, "--diff", help="Print the fixes as a unified diff; write nothing.")
EXCLUDE = typer.Option([], "--exclude", metavar="PATTERNS",
                       help="Folder walks: skip these .gitignore-style patterns (comma-separated), "
                            "instead of the default and pyproject.toml's exclude "
                            "(.git, .hg and .svn are skipped all the same).")
EXTEND_EXCLUDE = typer.Option([], "--extend-exclude", metavar="PATTERNS",
                              help="Folder walks: skip these patterns too (comma-separated).")
FOLLOW_SYMLINKS = typer.Option(False, "--follow-symlinks", help="Folder walks: follow symbolic links to folders.")
SHOW_FILES = typer.Option(False, "--show-files", help="List what would be linted and skipped, and why; lint nothing.")
STDIN_FILENAME = typer.Option(None, "--stdin-filename", metavar="NAME",
                              help="Name for standard input (-) in messages, the pyproject.toml lookup and "
                                   "per-file-ignores.")


def build_options(**kw):
    """LintOptions from CLI values (enums to their strings)."""
    from .lint.api import LintOptions

    for key, value in list(kw.items()):
        if isinstance(value, Enum):
            kw[key] = value.value
        elif isinstance(value, list):
            kw[key] = tuple(value)
    return LintOptions(**kw)


@app.command()
def lint(
    paths: Optional[List[str]] = typer.Argument(
        None, metavar="PATH...", help="Config files, folders to search for msprobe configs, or - for standard input."),
    format: Format = FORMAT, output: Optional[str] = OUTPUT,
    framework: Optional[Framework] = FRAMEWORK, mode: Optional[Mode] = MODE, jit_level: Optional[JitLevel] = JIT,
    mindspore_version: Optional[str] = MS_VERSION, world_size: Optional[int] = WORLD,
    msprobe_version: Optional[str] = MSPROBE_VERSION,
    script: Optional[str] = SCRIPT, check_fs: bool = CHECK_FS, cwd: Optional[str] = CWD,
    isolated: bool = ISOLATED, strict: bool = STRICT, select: List[str] = SELECT, ignore: List[str] = IGNORE,
    extend_select: List[str] = EXTEND, config_file: Optional[str] = CONFIG_FILE,
    only_msprobe: bool = ONLY_MSPROBE, fix: bool = FIX, unsafe_fixes: bool = UNSAFE_FIXES, diff: bool = DIFF,
    exclude: List[str] = EXCLUDE, extend_exclude: List[str] = EXTEND_EXCLUDE,
    follow_symlinks: bool = FOLLOW_SYMLINKS, show_files: bool = SHOW_FILES, stdin_filename: Optional[str] = STDIN_FILENAME,
) -> None:
    """Check msprobe config.json files: every problem at once, with a rule code and a fix.
    A folder is searched for msprobe configs (honouring .gitignore and exclude); - reads standard input."""
    from .fastcli import run_lint  # the same body the typer-free `probe lint` runs

    options = build_options(framework=framework, mode=mode, jit_level=jit_level,
                            mindspore_version=mindspore_version, world_size=world_size,
                            msprobe_version=msprobe_version, script=script, check_fs=check_fs, cwd=cwd, isolated=isolated, strict=strict, select=select,
                            ignore=ignore, extend_select=extend_select, config_file=config_file,
                            only_msprobe=only_msprobe, exclude=exclude or None, extend_exclude=extend_exclude,
                            follow_symlinks=follow_symlinks, stdin_filename=stdin_filename)
    raise typer.Exit(run_lint(paths or [], options, format=format.value, output=output, fix=fix,
                              unsafe_fixes=unsafe_fixes, diff=diff, show_files=show_files))


@app.command()
def rules() -> None:
    """List every rule code with its default severity and summary."""
    from .lint.rules import load_all

    for info in load_all().values():
        typer.echo(f"{info.code}  {info.severity.value:<7}  {info.name:<32} {info.summary}")


@app.command()
def explain(code: str = typer.Argument(..., help="A rule code such as PL201, or its name (level-not-allowed).")) -> None:
    """Print a rule's rationale with a bad and a good example."""
    from .lint.rules import lookup

    try:
        info = lookup(code)
    except LookupError as err:
        raise fail(str(err.args[0]))
    typer.echo(info.explanation())


@app.command()
def schema() -> None:
    """Print the JSON Schema for msprobe config.json (for editors and check-jsonschema)."""
    from .lint.schema.files import schema_path

    sys.stdout.write(schema_path().read_text(encoding="utf-8"))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    config: str = typer.Argument(..., metavar="CONFIG", help="The msprobe config.json the job will use."),
    command: Optional[List[str]] = typer.Argument(None, metavar="-- CMD ARGS...", help="The command to run."),
    framework: Optional[Framework] = FRAMEWORK, mode: Optional[Mode] = MODE, jit_level: Optional[JitLevel] = JIT,
    mindspore_version: Optional[str] = MS_VERSION, world_size: Optional[int] = WORLD,
    script: Optional[str] = SCRIPT, cwd: Optional[str] = CWD, isolated: bool = ISOLATED, strict: bool = STRICT,
    select: List[str] = SELECT, ignore: List[str] = IGNORE, extend_select: List[str] = EXTEND,
    config_file: Optional[str] = CONFIG_FILE,
) -> None:
    """Guarded launch: lint CONFIG (and CMD's script) with the filesystem checks; on errors print them
    (to stderr) and exit 1 without starting CMD, else run CMD with PROBE_CONFIG set and exit with its status."""
    from .run import guarded_run

    options = build_options(framework=framework, mode=mode, jit_level=jit_level,
                            mindspore_version=mindspore_version, world_size=world_size, script=script,
                            check_fs=True, cwd=cwd, isolated=isolated, strict=strict, select=select,
                            ignore=ignore, extend_select=extend_select, config_file=config_file)
    raise typer.Exit(guarded_run(config, command or [], options, color=sys.stderr.isatty()))


@app.command()
def migrate(
    config: str = typer.Argument(..., metavar="CONFIG", help="The msprobe config.json to convert."),
    to: str = typer.Option(..., "--to", metavar="X.Y", help="Target mindstudio-probe release, e.g. 26.0 or 8.3."),
    framework: Optional[Framework] = FRAMEWORK,
    write: bool = typer.Option(False, "--write", help="Rewrite the file (default: only show the diff)."),
) -> None:
    """Rename the keys and tasks another mindstudio-probe release renamed (run_ut <-> acc_check, ...),
    changing nothing else. Shows the diff; --write applies it."""
    from .lint import migrate as migrate_mod

    try:
        migration = migrate_mod.plan(config, to, framework=framework.value if framework else None)
    except migrate_mod.MigrationError as err:
        raise fail(str(err))
    for note in migration.notes:
        typer.echo(f"note: {note}", err=True)
    if not migration.changes:
        typer.echo(f"{config}: nothing to rename for mindstudio-probe {to}", err=True)
        raise typer.Exit(0)
    sys.stdout.write(migration.diff())
    if write:
        try:
            migrate_mod.write(migration)
        except OSError as err:
            raise fail(f"cannot write {config}: {err.strerror or err}")
        typer.echo(f"{config}: rewritten ({len(migration.changes)} rename(s))", err=True)
    else:
        typer.echo(f"{config}: {len(migration.changes)} rename(s); run again with --write to apply", err=True)


@app.command()
def server(
    stdio: bool = typer.Option(True, "--stdio", help="Talk LSP over stdin/stdout (the only transport)."),
) -> None:
    r"""Language server (LSP over stdio) for editors: the lint findings as you type, fixes as code actions.
    Needs the lsp extra: pip install 'msprobe-lint\[lsp]'."""
    from .server.lsp import main as server_main

    raise typer.Exit(server_main())


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


@app.command()
def report(
    dump_path: str = typer.Argument(..., metavar="DUMP_PATH", help="The dump_path of an overflow_check run."),
    format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f",
                                        help="Output format (html: one self-contained page)."),
    output: Optional[str] = typer.Option(None, "--output", "-o",
                                         help="Write the report to this file (refused if it exists)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --output file."),
) -> None:
    """Print the overflows under DUMP_PATH by step and rank, and where the overflow started."""
    from .report import main as report_main

    raise typer.Exit(report_main(dump_path, format.value, output=output, force=force))


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point; never shows a traceback for bad input."""
    try:
        app(args=argv, prog_name="probe")
    except KeyboardInterrupt:
        sys.stderr.write("probe: interrupted\n")
        sys.exit(ExitStatus.INTERRUPTED)
    except BrokenPipeError:
        sys.exit(ExitStatus.OK)


if __name__ == "__main__":  # pragma: no cover
    main()
