"""What ``probe lint`` is told besides the paths, and how it becomes the
lint's context and selection.

Context precedence (first wins): command-line flags, ``[tool.probe-lint]``
in the nearest pyproject.toml (or ``--config-file``), the training script
(``--script``, else ``script`` in ``[tool.probe-lint]``), the live
environment (skipped with ``isolated``).

Example::

    >>> from msprobe_lint.lint.options import LintOptions, prepare
    >>> context, selection, project = prepare(LintOptions(isolated=True, mode="graph"))
    >>> context.mode, project
    ('graph', None)
"""
from __future__ import annotations

import os
from collections import namedtuple
from types import MappingProxyType

from .context import Fact, build_context, environment_facts, normalise
from .diagnostic import Severity
from .selection import RUNTIME_ESSENTIAL, Selection, SelectionError, parse_codes

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional


class UsageError(ValueError):
    """Bad options or a malformed project config (exit status 2)."""


_NO_FACTS: MappingProxyType = MappingProxyType({})


class LintOptions(namedtuple("LintOptions", (
        "framework", "mode", "jit_level", "mindspore_version", "world_size", "msprobe_version", "script", "check_fs",
        "cwd", "cwd_label", "isolated", "strict", "select", "ignore", "extend_select", "config_file", "only_msprobe",
        "exclude", "extend_exclude", "follow_symlinks", "stdin_filename", "runtime", "extra_facts"), defaults=(
        None, None, None, None, None, None, None, False,
        None, None, False, False, (), (), (), None, False,
        None, (), False, None, False, _NO_FACTS))):
    """Everything ``probe lint`` takes besides the paths; immutable (a
    changed copy: ``options._replace(check_fs=True)``).

    Context values are given as the user wrote them and checked here
    (``normalise``); None means not given.

    Attributes:
        framework, mode, jit_level, mindspore_version, world_size,
            msprobe_version: the context flags (``--mode graph``...).
        script: the training script to analyse (``--script``).
        check_fs: run the filesystem rules PL406-PL408.
        cwd: the folder relative paths are resolved against.
        cwd_label: how fixes name ``cwd`` (default "--cwd"), e.g. "the
            workspace folder /p".
        isolated: use only the flags (no pyproject.toml, no environment).
        strict: exit 1 on warnings too.
        select, ignore, extend_select: code prefixes (tuples of
            comma-separated lists, as the command line repeats them).
        config_file: read ``[tool.probe-lint]`` from this file.
        only_msprobe: skip named JSON files that are not msprobe configs
            (sniff.py).
        exclude: folder walks: patterns replacing the default and
            ``[tool.probe-lint]`` exclude (None: not given).
        extend_exclude: folder walks: more patterns to skip.
        follow_symlinks: folder walks follow links to folders.
        stdin_filename: the name standard input (``-``) is linted under.
        runtime: probe_runtime's view (PL205 also reports what it cannot run).
        extra_facts: context facts that come first (``probe run``'s world
            size from its launcher).
    """

    __slots__ = ()


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
    framework, mode = facts.get("framework"), facts.get("mode")
    if framework is not None and mode is not None and mode.value == "graph" and framework.value == "pytorch":
        # a fresh user's finding: both were taken, and two contradicting findings followed
        raise UsageError(f"--mode graph is MindSpore's static graph; it does not go with --framework "
                         f"{framework.value}")
    return facts


def find_project(options: LintOptions, start: Optional[str]) -> Any:
    """The ``[tool.probe-lint]`` settings that apply (lint.settings):
    ``--config-file``, else those of the nearest pyproject.toml at or above
    ``start`` unless ``isolated``; None when there are none.

    Raises:
        UsageError: a malformed table, or a missing --config-file.
    """
    if options.isolated and not options.config_file:
        return None
    from . import settings

    try:
        return settings.find_and_load(options.config_file, start=start)
    except settings.SettingsError as err:
        raise UsageError(str(err)) from None


def prepare(options: LintOptions, *, first_path: Optional[str] = None):
    """Resolve the context, the selection and the script's findings.

    Returns:
        (context, selection, project settings or None)
    Raises:
        UsageError: for bad flag values, an unreadable script or a
            malformed ``[tool.probe-lint]``.
    """
    layers: list[dict[str, Fact]] = [dict(options.extra_facts), flag_facts(options)]
    project = find_project(options, first_path)
    if project is not None:
        layers.append(project.facts)
    analysis = None
    script = options.script or (project.script if project is not None else None)
    if script:
        from .script import ScriptError, analyse_script

        try:
            analysis = analyse_script(script)
        except ScriptError as err:
            if options.script:
                raise UsageError(str(err)) from None
            raise UsageError(f"{project.path}: [tool.probe-lint] script: "
                             + str(err).replace("--script ", "", 1)) from None
        layers.append(analysis.facts)
    if not options.isolated:
        layers.append(environment_facts())
    if options.cwd is not None and not os.path.isdir(options.cwd):
        # --cwd anchors the config's relative paths (PL401's fix, the filesystem
        # checks): a folder that is not there is a mistyped option, refused the
        # same way with or without --check-fs, never silently made the anchor.
        what = "is not a folder" if os.path.exists(options.cwd) else "no such folder"
        raise UsageError(f"--cwd {options.cwd!r}: {what} (--cwd names the folder the job starts in, "
                         "which relative paths in the config are resolved against)")
    context = build_context(layers, check_fs=options.check_fs, cwd=options.cwd or None,
                            cwd_label=options.cwd_label if options.cwd else None, runtime=options.runtime,
                            script=analysis)
    parsed = {}
    for flag, field in (("--select", "select"), ("--ignore", "ignore"), ("--extend-select", "extend_select")):
        try:
            parsed[field] = parse_codes(getattr(options, field))
        except SelectionError as err:
            raise UsageError(f"{flag}: {err}") from None
    selection = selection_of(project, **parsed)
    if options.runtime:
        selection = selection._replace(always=RUNTIME_ESSENTIAL)
    return context, selection, project


def selection_of(project: Any, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
                 extend_select: tuple[str, ...] = ()) -> Selection:
    """The rule selection of the command-line codes (already parsed) over
    the ``[tool.probe-lint]`` settings ``project`` (None: none): ``select``
    replaces the project's, ``ignore`` and ``extend_select`` add to its;
    the project's severities apply. Per-file ignores are added per config
    by ``project.selection_for``."""
    select = select or (project.select if project else ())
    ignore = ignore + (project.ignore if project else ())
    extend = extend_select + (project.extend_select if project else ())
    if extend:
        select = (select or ("ALL",)) + extend
    severity: dict[str, Severity] = dict(project.severity) if project else {}
    return Selection(select=select, ignore=ignore, severity=severity)


def patterns(values: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated pattern lists from the command line, split."""
    return tuple(p.strip() for value in values for p in value.split(",") if p.strip())
