"""The one declaration of ``probe lint``'s options, and a typer-free
reader of a plain ``probe lint`` command line.

:data:`LINT_OPTIONS` lists every option once: its names, the LintOptions
field (or ``format``, ``output``, ``fix``...) it fills, what value it
takes, its help text, its metavar and the heading it is shown under. The
typer command (cli/app.py) builds its options from it, and
:func:`parse_lint` reads a command line by it. The choices come from the
lists the library keeps (``lint.reporters.NAMES``, ``lint.context``).

:func:`parse_lint` understands a ``lint ...`` argument list exactly as
click would, or declines (None) and leaves it to typer: an unknown or
repeated option, an option value that is empty, starts with ``-`` or is
not one of its choices, ``-fjson``-style bundling, ``--help``, shell
completion, Windows. Whatever it declines is handled, and for a mistake
reported, by typer; tests/cli/test_fast_path.py checks that both give the
same output and exit status.

Example::

    >>> parse_lint(["lint", "config.json", "-f", "json", "--select", "PL2"])
    (['config.json'], {'format': 'json', 'select': ['PL2']})
"""
from __future__ import annotations

import re

from ..lint.context import FRAMEWORKS, JIT_LEVELS, MODES
from ..lint.reporters import NAMES as FORMATS
from .argv import read_argv

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence

# Headings of `probe lint --help`.
OUTPUT, SELECTION, TARGET, FILES = "Output", "Rule selection", "Target environment", "Files"


def _either(choices: Sequence[str]) -> str:
    """``a, b or c``."""
    return ", ".join(choices[:-1]) + " or " + choices[-1]


class LintOption:
    """One option of ``probe lint``.

    Attributes:
        names: ``("--format", "-f")``; the first is the long name.
        field: the LintOptions field, or ``format``, ``output``, ``force``, ``fix``,
            ``unsafe_fixes``, ``diff``, ``show_files``.
        kind: ``"flag"``, ``"str"``, ``"multi"`` (repeatable, each value
            comma-separated), ``"posint"`` (an integer >= 1) or a tuple of
            choices.
        metavar: what the help shows for the value (None for a flag).
        help: one sentence for ``--help``.
        panel: the heading it is listed under.
    """

    __slots__ = ("names", "field", "kind", "metavar", "help", "panel")

    def __init__(self, names: tuple[str, ...], field: str, kind: Any, metavar: Optional[str], help: str,
                 panel: str) -> None:
        self.names, self.field, self.kind, self.metavar, self.help, self.panel = (
            names, field, kind, metavar, help, panel)


LINT_OPTIONS: tuple[LintOption, ...] = (
    LintOption(("--format", "-f"), "format", FORMATS, "FORMAT",
               f"Output format: {_either(FORMATS)} (default: {FORMATS[0]}).", OUTPUT),
    LintOption(("--output", "-o"), "output", "str", "FILE",
               "Write the report to this file (an existing one only if it holds an earlier report).", OUTPUT),
    LintOption(("--force",), "force", "flag", None,
               "Replace an existing --output file that is not an earlier report.", OUTPUT),
    LintOption(("--strict",), "strict", "flag", None, "Exit 1 on warnings too.", OUTPUT),
    LintOption(("--fix",), "fix", "flag", None, "Apply the safe fixes in place, then report what is left.", OUTPUT),
    LintOption(("--unsafe-fixes",), "unsafe_fixes", "flag", None,
               "With --fix or --diff: apply the unsafe fixes too (they may change what the job does).", OUTPUT),
    LintOption(("--diff",), "diff", "flag", None, "Print the fixes as a unified diff; write nothing.", OUTPUT),
    LintOption(("--select",), "select", "multi", "CODES",
               "Only these codes, prefixes or rule names (comma-separated). A file msprobe cannot load "
               "(PL001, PL003, PL004, PL006, PL008) is reported whatever is selected.", SELECTION),
    LintOption(("--ignore",), "ignore", "multi", "CODES",
               "Skip these codes or prefixes (comma-separated); PL001, PL003, PL004, PL006 and PL008 "
               "cannot be skipped.", SELECTION),
    LintOption(("--extend-select",), "extend_select", "multi", "CODES", "Add these codes to the selection.",
               SELECTION),
    LintOption(("--config-file",), "config_file", "str", "FILE", "Read the tool.probe-lint table from this file.",
               SELECTION),
    LintOption(("--isolated",), "isolated", "flag", None,
               "Use only the flags: no pyproject.toml, nothing from the environment.", SELECTION),
    LintOption(("--framework",), "framework", FRAMEWORKS, "NAME",
               f"Framework the config is for: {_either(FRAMEWORKS)}.", TARGET),
    LintOption(("--mode",), "mode", MODES, "MODE",
               "MindSpore execution mode: pynative (dynamic graph) or graph (static graph).", TARGET),
    LintOption(("--jit-level",), "jit_level", JIT_LEVELS, "LEVEL",
               f"jit_level of the static-graph compile: {_either(JIT_LEVELS)}.", TARGET),
    LintOption(("--mindspore-version",), "mindspore_version", "str", "X.Y.Z", "MindSpore version of the target.",
               TARGET),
    LintOption(("--world-size",), "world_size", "posint", "N", "Number of processes (ranks) of the job.", TARGET),
    LintOption(("--msprobe-version",), "msprobe_version", "str", "X.Y",
               "mindstudio-probe release the config targets (8.1, 8.3, 26.x; default 8.3).", TARGET),
    LintOption(("--script",), "script", "str", "FILE", "Training script to analyse (never run).", TARGET),
    LintOption(("--check-fs",), "check_fs", "flag", None, "Also check paths on this machine's filesystem.", TARGET),
    LintOption(("--cwd",), "cwd", "str", "FOLDER", "Folder relative paths are resolved against (default: here).",
               TARGET),
    LintOption(("--only-msprobe",), "only_msprobe", "flag", None,
               "Skip named JSON files that are clearly not msprobe configs (for pre-commit).", FILES),
    LintOption(("--exclude",), "exclude", "multi", "PATTERNS",
               "Folder walks: skip these .gitignore-style patterns (comma-separated), instead of the default and "
               "pyproject.toml's exclude (.git, .hg and .svn are skipped all the same).", FILES),
    LintOption(("--extend-exclude",), "extend_exclude", "multi", "PATTERNS",
               "Folder walks: skip these patterns too (comma-separated).", FILES),
    LintOption(("--follow-symlinks",), "follow_symlinks", "flag", None,
               "Folder walks: follow symbolic links to folders.", FILES),
    LintOption(("--show-files",), "show_files", "flag", None,
               "List what would be linted and skipped, and why; lint nothing.", FILES),
    LintOption(("--stdin-filename",), "stdin_filename", "str", "NAME",
               "Name for standard input (-) in messages, the pyproject.toml lookup and per-file-ignores.", FILES),
)
BY_FIELD = {option.field: option for option in LINT_OPTIONS}
_BY_NAME = {name: option for option in LINT_OPTIONS for name in option.names}
_POSINT = re.compile(r"[1-9][0-9]{0,8}")


def parse_lint(args: Sequence[str]) -> Optional[tuple[list[str], dict[str, Any]]]:
    """``(paths, values)`` for a ``lint ...`` argument list read exactly as
    click would (values keyed by field; ``multi`` values as lists); None
    for anything this reader leaves to typer (see the module docstring)."""
    if not args or args[0] != "lint":
        return None
    read = read_argv(args[1:], _kind_of)
    if read is None:
        return None
    paths, options = read
    values: dict[str, Any] = {}
    for field, kind, value in options:
        if kind == "multi":
            values.setdefault(field, []).append(value)
        elif field in values:
            return None
        elif isinstance(kind, tuple):
            if value not in kind:
                return None
            values[field] = value
        elif kind == "posint":
            if not _POSINT.fullmatch(value):
                return None
            values[field] = int(value)
        else:
            values[field] = value
    if not (paths or values.get("stdin_filename")) or any(not path for path in paths):
        return None
    return paths, values


def _kind_of(name: str) -> Optional[tuple[str, Any]]:
    """(field, kind) of the option ``name``, or None."""
    option = _BY_NAME.get(name)
    return None if option is None else (option.field, option.kind)
