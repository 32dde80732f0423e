"""What ``probe lint`` is told besides the paths, and how it becomes the
lint's context and selection.

Context precedence (first wins): command-line flags, ``[tool.probe-lint]``
in the nearest pyproject.toml (or ``--config-file``), the training script
(``--script``), the live environment (skipped with ``isolated``).

Example::

    >>> from msprobe_lint.lint.options import LintOptions, prepare
    >>> context, selection, project = prepare(LintOptions(isolated=True, mode="graph"))
    >>> context.mode, project
    ('graph', None)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .context import Fact, build_context, environment_facts, normalise
from .diagnostic import Severity
from .selection import Selection, SelectionError, parse_codes


class UsageError(ValueError):
    """Bad options or a malformed project config (exit status 2)."""


@dataclass
class LintOptions:
    """Everything ``probe lint`` takes besides the paths.

    Context values are given as the user wrote them and checked here
    (``normalise``); None means not given.
    """

    framework: Optional[str] = None
    mode: Optional[str] = None
    jit_level: Optional[str] = None
    mindspore_version: Optional[str] = None
    world_size: Optional[int] = None
    msprobe_version: Optional[str] = None
    script: Optional[str] = None
    check_fs: bool = False
    cwd: Optional[str] = None
    cwd_label: Optional[str] = None  # how fixes name ``cwd`` (default "--cwd"), e.g. "the workspace folder /p"
    isolated: bool = False
    strict: bool = False
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    config_file: Optional[str] = None
    only_msprobe: bool = False  # skip named JSON files that are not msprobe configs (sniff.py)
    exclude: Optional[tuple[str, ...]] = None  # folder walks: replaces the default and [tool.probe-lint] exclude
    extend_exclude: tuple[str, ...] = ()
    follow_symlinks: bool = False
    stdin_filename: Optional[str] = None  # the name standard input (``-``) is linted under
    runtime: bool = False
    extra_facts: dict[str, Fact] = field(default_factory=dict)


def flag_facts(options: LintOptions) -> dict[str, Fact]:
    """The context values given as flags, checked (``--mode`` ...).

    Raises:
        UsageError: a value that is not allowed.
    """
    facts: dict[str, Fact] = {}
    for name in ("framework", "mode", "jit_level", "mindspore_version", "world_size", "msprobe_version"):
        raw = getattr(options, name)
        if raw is not None:
            try:
                facts[name] = normalise(name, raw, "--" + name.replace("_", "-"))
            except ValueError as err:
                raise UsageError(str(err)) from None
    return facts


def prepare(options: LintOptions, *, first_path: Optional[str] = None):
    """Resolve the context, the selection and the script's findings.

    Returns:
        (context, selection, project settings or None)
    Raises:
        UsageError: for bad flag values, an unreadable script or a
            malformed ``[tool.probe-lint]``.
    """
    from ..project import settings as settings_mod

    layers: list[dict[str, Fact]] = [dict(options.extra_facts), flag_facts(options)]
    project = None
    try:
        if not options.isolated or options.config_file:
            project = settings_mod.find_and_load(options.config_file, start=first_path)
    except settings_mod.SettingsError as err:
        raise UsageError(str(err)) from None
    if project is not None:
        layers.append(project.facts)
    analysis = None
    if options.script:
        from .script import ScriptError, analyse_script

        try:
            analysis = analyse_script(options.script)
        except ScriptError as err:
            raise UsageError(str(err)) from None
        layers.append(analysis.facts)
    if not options.isolated:
        layers.append(environment_facts())
    if options.cwd and not Path(options.cwd).is_dir():
        raise UsageError(f"--cwd {options.cwd}: no such folder")
    context = build_context(layers, check_fs=options.check_fs, cwd=Path(options.cwd) if options.cwd else None,
                            cwd_label=options.cwd_label if options.cwd else None, runtime=options.runtime,
                            script=analysis)
    try:
        select = parse_codes(options.select) or (project.select if project else ())
        ignore = parse_codes(options.ignore) + (project.ignore if project else ())
        extend = parse_codes(options.extend_select) + (project.extend_select if project else ())
    except SelectionError as err:
        raise UsageError(str(err)) from None
    if extend:
        select = (select or ("ALL",)) + extend
    severity: dict[str, Severity] = dict(project.severity) if project else {}
    selection = Selection(select=select, ignore=ignore, severity=severity)
    return context, selection, project


def patterns(values: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated pattern lists from the command line, split."""
    return tuple(p.strip() for value in values for p in value.split(",") if p.strip())
