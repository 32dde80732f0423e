"""The typer application: every ``probe`` command, declared for typer.

Each command's body imports its module (``cli.commands.*``, ``cli.lint``)
when it runs, so ``probe report`` loads no lint engine and ``probe lint``
no report. The options of ``probe lint`` (and those ``probe run`` shares
with it) are built from their one declaration, ``cli.lint_args``.

Help text shows a value's metavar (``FORMAT``, ``FILE``), never a Python
type: typer would print ``<bool>``, ``<str>`` or ``<list[str]>``, which
:class:`_Command` leaves out.
"""
from __future__ import annotations

import os
import sys
from enum import Enum
from typing import TYPE_CHECKING, Any, List, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from ..exit import ExitStatus
from .lint_args import BY_FIELD


def _without_types(params: list) -> list:
    """``params`` showing no Python type in the help: a flag or an argument
    shows nothing there (an argument's metavar names it already), an
    option its metavar."""
    for param in params:
        if param.param_type_name == "argument":
            setattr(param, "display_type_rich", lambda ctx: None)
        elif getattr(param, "is_flag", False):
            param.metavar = ""
    return params


class _Command(TyperCommand):
    def get_params(self, ctx: Any) -> list:
        return _without_types(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except Exception as err:  # typer's click BadParameter, worded by pydantic
            plain = _plain_validation_message(err.__cause__)
            if plain is not None and hasattr(err, "message"):
                err.message = plain
            raise


def _plain_validation_message(cause: Any) -> Optional[str]:
    """A plain message for the pydantic ValidationError typer turned into a
    BadParameter (``Input should be greater than or equal to 1``, ``Value
    error, ...``), or None to keep the message as it is."""
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return None
    try:
        first = errors()[0]
    except Exception:
        return None
    kind, value, limits = first.get("type"), first.get("input"), first.get("ctx") or {}
    shown = repr(value) if isinstance(value, str) and not value.lstrip("-").isdigit() else str(value)
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(limits.values()), "?")
        return f"{shown} is not an integer {sign} {bound}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{shown} is not an integer"
    if kind == "value_error" and "error" in limits:
        return str(limits["error"])
    message = str(first.get("msg", ""))
    return message.replace("Value error, ", "").replace("Input should be", "must be") or None


class _RunCommand(_Command):
    """``probe run``: probe's own options end at ``--``; an option it does
    not know before that is a usage error, never the start of CMD."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)
        try:
            rest = super().parse_args(ctx, args)
        except Exception as err:  # typer's click (vendored in typer._click): NoSuchOption
            name = getattr(err, "option_name", None)
            if name is None or "--" in given or not hasattr(err, "message"):
                raise
            err.message = (f"No such option: {name}; put -- between probe's options and the command: probe run "
                           "CONFIG [options] -- CMD ARGS...")
            err.possibilities = None  # type: ignore[attr-defined]
            raise
        command = list(ctx.params.get("command") or [])
        after = given[given.index("--") + 1:] if "--" in given else None
        # (CONFIG itself taken from after -- , `probe run -- CMD`, is left to the CONFIG check)
        if command and (after is None or command != after[len(after) - len(command):]):
            # a hunt's finding: `probe run cfg.json python train.py --mode graph --strict` ran train.py without
            # its options, which probe had taken as its own
            ctx.fail("put -- between probe's options and the command: probe run CONFIG [options] -- CMD ARGS... "
                     "(without it, the command's own options are read as probe's)")
        return rest


class _Group(TyperGroup):
    def get_params(self, ctx: Any) -> list:
        return _without_types(super().get_params(ctx))


def _choices(name: str, field: str) -> Any:
    """A str Enum of the choices of lint option ``field`` (typer needs an
    Enum; the values come from the option's one declaration)."""
    return Enum(name, {value: value for value in BY_FIELD[field].kind}, type=str)


if TYPE_CHECKING:  # made at run time from the declared choices; to mypy, some Enum
    Format = Enum
    Framework = Enum
    Mode = Enum
    JitLevel = Enum
else:
    Format = _choices("Format", "format")
    Framework = _choices("Framework", "framework")
    Mode = _choices("Mode", "mode")
    JitLevel = _choices("JitLevel", "jit_level")


def option(field: str, **overrides: Any) -> Any:
    """The typer.Option of lint option ``field``, from its declaration."""
    spec = BY_FIELD[field]
    kind = spec.kind
    settings: dict[str, Any] = {"help": spec.help, "rich_help_panel": spec.panel, "show_default": False}
    if kind == "flag":
        default: Any = False
    elif kind == "multi":
        default = []
    elif isinstance(kind, tuple):
        default = None
        settings["case_sensitive"] = False  # as in [tool.probe-lint]: --mode Graph
    else:
        default = None
    if kind == "posint":
        settings["min"] = 1
    if spec.metavar:
        settings["metavar"] = spec.metavar
    settings.update(overrides)
    default = settings.pop("default", default)
    return typer.Option(default, *spec.names, **settings)


def _show_version(value: bool) -> None:
    if value:
        from .messages import version_line

        typer.echo(version_line())
        raise typer.Exit(ExitStatus.OK)


app = typer.Typer(cls=_Group, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["--help", "-h"]},
                  help="Pre-flight checks for msprobe config.json files, and a guarded overflow detector.")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_show_version,
                                       help="Print the version and exit.")) -> None:
    """Pre-flight checks for msprobe config.json files, and a guarded overflow detector."""


@app.command(cls=_Command)
def lint(
    paths: Optional[List[str]] = typer.Argument(
        None, metavar="PATH...", show_default=False,
        help="Config files, folders to search for msprobe configs, or - for standard input."),
    format: Format = option("format", default=BY_FIELD["format"].kind[0]),
    output: Optional[str] = option("output"), force: bool = option("force"),
    strict: bool = option("strict"), fix: bool = option("fix"), unsafe_fixes: bool = option("unsafe_fixes"),
    diff: bool = option("diff"),
    select: List[str] = option("select"), ignore: List[str] = option("ignore"),
    extend_select: List[str] = option("extend_select"), config_file: Optional[str] = option("config_file"),
    isolated: bool = option("isolated"),
    framework: Optional[Framework] = option("framework"), mode: Optional[Mode] = option("mode"),
    jit_level: Optional[JitLevel] = option("jit_level"), mindspore_version: Optional[str] = option("mindspore_version"),
    world_size: Optional[int] = option("world_size"), msprobe_version: Optional[str] = option("msprobe_version"),
    script: Optional[str] = option("script"), check_fs: bool = option("check_fs"), cwd: Optional[str] = option("cwd"),
    only_msprobe: bool = option("only_msprobe"), exclude: List[str] = option("exclude"),
    extend_exclude: List[str] = option("extend_exclude"), follow_symlinks: bool = option("follow_symlinks"),
    show_files: bool = option("show_files"), stdin_filename: Optional[str] = option("stdin_filename"),
) -> None:
    """Check msprobe config.json files: every problem at once, with a rule code and a fix.

    A folder is searched for msprobe configs (honouring .gitignore and exclude); - reads standard input.
    """
    from .lint import run_lint

    options = _lint_options(framework=framework, mode=mode, jit_level=jit_level, mindspore_version=mindspore_version,
                            world_size=world_size, msprobe_version=msprobe_version, script=script, check_fs=check_fs,
                            cwd=cwd, isolated=isolated, strict=strict, select=select, ignore=ignore,
                            extend_select=extend_select, config_file=config_file, only_msprobe=only_msprobe,
                            exclude=exclude or None, extend_exclude=extend_exclude, follow_symlinks=follow_symlinks,
                            stdin_filename=stdin_filename)
    raise typer.Exit(run_lint(paths or [], options, format=format.value, output=output, force=force, fix=fix,
                              unsafe_fixes=unsafe_fixes, diff=diff, show_files=show_files))


@app.command(cls=_Command)
def rules() -> None:
    """List every rule code with its default severity and summary."""
    from .commands.rules import main

    raise typer.Exit(main())


@app.command(cls=_Command)
def explain(code: str = typer.Argument(..., metavar="CODE",
                                       help="A rule code such as PL201, or its name (level-not-allowed).")) -> None:
    """Print a rule's rationale with a bad and a good example."""
    from .commands.explain import main

    raise typer.Exit(main(code))


@app.command(cls=_Command)
def schema(
    msprobe_version: Optional[str] = option("msprobe_version", rich_help_panel=None,
                                            help="mindstudio-probe release whose schema to print (8.1, 8.3, 26.0, "
                                                 "26.1, 26.2; default 8.3), as probe lint reads it."),
    atb: bool = typer.Option(False, "--atb", help="Print the schema of msprobe's ATB dump config instead."),
) -> None:
    """Print the JSON Schema for msprobe config.json (for editors and check-jsonschema)."""
    from .commands.schema import main

    raise typer.Exit(main(msprobe_version, atb=atb))


@app.command(cls=_RunCommand, context_settings={"allow_extra_args": True})
def run(
    config: str = typer.Argument(..., metavar="CONFIG", help="The msprobe config.json the job will use."),
    command: Optional[List[str]] = typer.Argument(None, metavar="-- CMD ARGS...", show_default=False,
                                                  help="The command to run."),
    strict: bool = option("strict"),
    select: List[str] = option("select"), ignore: List[str] = option("ignore"),
    extend_select: List[str] = option("extend_select"), config_file: Optional[str] = option("config_file"),
    isolated: bool = option("isolated"),
    framework: Optional[Framework] = option("framework"), mode: Optional[Mode] = option("mode"),
    jit_level: Optional[JitLevel] = option("jit_level"), mindspore_version: Optional[str] = option("mindspore_version"),
    world_size: Optional[int] = option("world_size"), script: Optional[str] = option("script"),
    cwd: Optional[str] = option("cwd"),
) -> None:
    """Guarded launch: lint CONFIG (and CMD's script), then run CMD only if it passed.

    The lint runs with the filesystem checks; on errors they are printed (on stderr) and probe exits 1
    without starting CMD, else CMD runs with PROBE_CONFIG set and probe exits with its status.
    """
    from .commands.run import main

    options = _lint_options(framework=framework, mode=mode, jit_level=jit_level, mindspore_version=mindspore_version,
                            world_size=world_size, script=script, check_fs=True, cwd=cwd, isolated=isolated,
                            strict=strict, select=select, ignore=ignore, extend_select=extend_select,
                            config_file=config_file)
    raise typer.Exit(main(config, command or [], options))


@app.command(cls=_Command)
def migrate(
    config: str = typer.Argument(..., metavar="CONFIG", help="The msprobe config.json to convert."),
    to: str = typer.Option(..., "--to", metavar="X.Y", help="Target mindstudio-probe release, e.g. 26.0 or 8.3."),
    framework: Optional[Framework] = option("framework", rich_help_panel=None),
    write: bool = typer.Option(False, "--write", help="Rewrite the file (default: only show the diff)."),
) -> None:
    """Rename the keys and tasks another mindstudio-probe release renamed, changing nothing else.

    run_ut <-> acc_check, ... Shows the diff; --write applies it.
    """
    from .commands.migrate import main

    raise typer.Exit(main(config, to, framework=framework.value if framework else None, write=write))


@app.command(cls=_Command)
def server(stdio: bool = typer.Option(True, "--stdio", help="Talk LSP over stdin/stdout (the only transport).")
           ) -> None:
    r"""Language server (LSP over stdio) for editors: lint findings as you type, fixes as code actions.

    Needs the lsp extra: pip install 'msprobe-lint\[lsp]'.
    """
    from .commands.server import main

    raise typer.Exit(main())


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


@app.command(cls=_Command)
def report(
    dump_path: str = typer.Argument(..., metavar="DUMP_PATH", help="The dump_path of an overflow_check run."),
    format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", metavar="FORMAT",
                                        help="Output format: text, json or html (one self-contained page)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help="Write the report to this file (refused if it exists)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --output file."),
    show_all: bool = typer.Option(False, "--all",
                                  help="Show the records of every step (by default the steps after the one where "
                                       "the overflow started are counted, one line each)."),
) -> None:
    """Print the overflows under DUMP_PATH by step and rank, and where the overflow started."""
    from .commands.report import main

    raise typer.Exit(main(dump_path, format.value, output=output, force=force, show_all=show_all))


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command(cls=_Command)
def completion(shell: Shell = typer.Argument(..., metavar="SHELL", help="The shell: bash, zsh or fish.")) -> None:
    """Print the shell completion script for probe.

    For bash: eval "$(probe completion bash)" in ~/.bashrc.
    """
    from typer.main import get_command

    from .commands.completion import main

    raise typer.Exit(main(shell.value, get_command(app)))


def _lint_options(**values: Any) -> Any:
    """LintOptions from typer's values (enums to their strings, lists to
    tuples)."""
    from ..lint.options import LintOptions

    for key, value in list(values.items()):
        if isinstance(value, Enum):
            values[key] = value.value
        elif isinstance(value, list):
            values[key] = tuple(value)
    return LintOptions(**values)


def run_app(args: list[str]) -> int:
    """Run the typer application on ``args``; its exit status."""
    if os.environ.get("_PROBE_COMPLETE"):  # a shell asking for completions
        from .commands.completion import register_shells

        register_shells()
    try:
        app(args=args, prog_name="probe")
    except SystemExit as done:
        code = done.code
        if code is None:
            return ExitStatus.OK
        if isinstance(code, int):
            return code
        sys.stderr.write(f"{code}\n")
        return ExitStatus.PROBLEMS
    return ExitStatus.OK
