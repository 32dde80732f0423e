"""The library entry point the CLI, the pre-commit hook and probe_runtime's
gate share: options in, results and exit status out.

Context precedence (first wins): command-line flags, ``[tool.probe-lint]``
in the nearest pyproject.toml (or ``--config-file``), the training script
(``--script``), the live environment (skipped with ``isolated``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .context import Context, Fact, build_context, environment_facts, normalise
from .diagnostic import Diagnostic, Severity
from .engine import Result, exit_status, lint_file
from .selection import Selection, SelectionError, parse_codes
from ..exit import ExitStatus


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


@dataclass
class LintRun:
    """Results per file and the exit status (0, 1 or 2)."""

    results: list[Result]
    status: int


def _flag_facts(options: LintOptions) -> dict[str, Fact]:
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

    layers: list[dict[str, Fact]] = [dict(options.extra_facts), _flag_facts(options)]
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


def _check_paths(paths: list[str], options: LintOptions) -> list[str]:
    """``paths`` with ``-`` added when only --stdin-filename is given.

    Raises:
        UsageError: no path, ``-`` twice, or --stdin-filename without ``-``.
    """
    paths = list(paths)
    if not paths and options.stdin_filename:
        paths = ["-"]
    if not paths:
        raise UsageError("give at least one PATH: a config, a folder, or - for standard input")
    if paths.count("-") > 1:
        raise UsageError("- (standard input) given more than once")
    if options.stdin_filename is not None and "-" not in paths:
        raise UsageError("--stdin-filename names standard input; add - to the paths")
    if options.stdin_filename == "":
        raise UsageError("--stdin-filename needs a name")
    return paths


def _settings_start(paths: list[str], options: LintOptions) -> Optional[str]:
    """Where the nearest pyproject.toml is looked for: the first path, or
    for standard input its --stdin-filename (else the current folder)."""
    first = paths[0] if paths else None
    if first == "-":
        return options.stdin_filename
    return first


_UNSET: Any = object()


def list_files(paths: list[str], options: Optional[LintOptions] = None, *, project: Any = _UNSET,
               walk: bool = True, skipped: bool = True) -> list:
    """What ``probe lint PATHS`` would lint and skip, and why
    (``--show-files``): a list of discovery.Candidate.

    ``project`` is the loaded ``[tool.probe-lint]`` or None (found from the
    first path when not given). ``walk=False`` takes every path for a file
    (a folder is then PL006, as ``probe run`` wants); ``skipped=False``
    leaves out the files a walk skips for their content.
    Raises:
        UsageError: bad paths, or a malformed ``[tool.probe-lint]``.
    """
    from ..project import discovery
    from ..project import settings as settings_mod

    options = options or LintOptions()
    paths = _check_paths(paths, options)
    if project is _UNSET:
        project = None
        if not options.isolated or options.config_file:
            try:
                project = settings_mod.find_and_load(options.config_file, start=_settings_start(paths, options))
            except settings_mod.SettingsError as err:
                raise UsageError(str(err)) from None
    exclude = _patterns(options.exclude) if options.exclude is not None else None
    file_filter = discovery.make_filter(project, exclude=exclude, extend_exclude=_patterns(options.extend_exclude),
                                        follow_symlinks=options.follow_symlinks)
    return discovery.discover(paths, file_filter, only_msprobe=options.only_msprobe,
                              stdin_filename=options.stdin_filename, walk=walk, skipped=skipped)


def _patterns(values: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated pattern lists from the command line, split."""
    return tuple(p.strip() for value in values for p in value.split(",") if p.strip())


@dataclass
class _Input:
    """One thing a lint takes: a file's or standard input's bytes (``raw``
    None when it could not be read, ``reason`` saying why)."""

    path: str
    raw: Optional[bytes]
    reason: str = ""
    stdin: bool = False
    folder: bool = False  # a folder a walk could not list (its PL006 is not a file's)


def _inputs(paths: list[str], options: LintOptions, project: Any, *, walk: bool = True):
    """The files ``probe lint PATHS`` lints, in order (see
    :func:`list_files`), with standard input (``-``) read by
    loader.read_stdin. Yields _Input."""
    for candidate in list_files(paths, options, project=project, walk=walk, skipped=False):
        if candidate.action == "skip":
            continue
        if candidate.action == "unreadable":
            yield _Input(candidate.path, None, candidate.reason, folder=candidate.folder)
        elif candidate.stdin:
            from .loader import read_stdin
            from ..project.sniff import looks_like_msprobe

            source = read_stdin(options.stdin_filename)
            if source.raw is None:
                yield _Input(source.name, None, f"config {source.reason}", stdin=True)
            elif not options.only_msprobe or looks_like_msprobe(source.raw):
                yield _Input(candidate.path, source.raw, stdin=True)
        else:
            yield _Input(candidate.path, candidate.raw)


def _lint_input(item: _Input, context: Context, selection: Selection) -> Result:
    """Lint one _Input; standard input that is not UTF-8 is quoted as it
    came in, never from a file of that name on disk."""
    from .engine import unreadable_result

    if item.raw is None and item.reason:
        result = unreadable_result(item.path, item.reason, selection=selection)
        result.folder = item.folder
        return result
    result = lint_file(item.path, context, selection=selection, raw=item.raw)
    if item.stdin and result.source is None and item.raw is not None:
        result.source = item.raw.decode("utf-8", errors="replace")
    return result


def lint_paths(paths: list[str], options: Optional[LintOptions] = None, *, walk: bool = True) -> LintRun:
    """Lint every path with one shared context: files, folders (walked for
    msprobe configs, see discovery.py) and ``-`` (standard input, read by
    loader.read_stdin). ``walk=False``: see :func:`list_files`.

    Raises:
        UsageError: see :func:`prepare` and :func:`list_files`.
    """
    options = options or LintOptions()
    paths = _check_paths(paths, options)
    context, selection, project = prepare(options, first_path=_settings_start(paths, options))
    results = [_lint_input(item, context, project.selection_for(item.path, selection) if project else selection)
               for item in _inputs(paths, options, project, walk=walk)]
    return LintRun(results, exit_status(results, strict=options.strict))


def lint_text(text: str, path: str = "<text>", options: Optional[LintOptions] = None) -> Result:
    """Lint a config held in memory (an editor's buffer) as if it were the
    file ``path``: the same engine, and the ``[tool.probe-lint]`` settings
    of the nearest pyproject.toml above ``path`` (which need not exist).

    Args:
        text: the config's text (a leading byte-order mark is reported as
            in a file).
        path: where the text belongs; shown in diagnostics, and the start
            of the settings look-up and of per-file ignores.
    Raises:
        UsageError: see :func:`prepare`.
    """
    options = options or LintOptions()
    context, selection, project = prepare(options, first_path=path)
    file_selection = project.selection_for(path, selection) if project else selection
    return lint_file(path, context, selection=file_selection, raw=text.encode("utf-8", "surrogatepass"))


@dataclass
class FixOutcome:
    """What ``--fix``/``--diff`` did to one file.

    Attributes:
        path: the config.
        before, after: its text before and after the fixes (equal when
            nothing was fixed).
        applied: the diagnostics whose fix was applied, in order.
        skipped: why the file was not fixed (a soft link, unreadable,
            not UTF-8, does not parse), or None.
        written: True when the file on disk was rewritten.
        failed: True when fixes were due but the file could not be
            rewritten (an I/O error: the run's exit status is 2).
        stdin: True for standard input (never written; ``probe lint
            --fix -`` prints ``after`` on stdout).
    """

    path: str
    before: str = ""
    after: str = ""
    applied: list[Diagnostic] = field(default_factory=list)
    skipped: Optional[str] = None
    written: bool = False
    failed: bool = False
    stdin: bool = False

    def diff(self) -> str:
        """Unified diff of the fixes ("" when nothing changes)."""
        from .fixes.edits import unified_diff

        return unified_diff(self.before, self.after, self.path, f"{self.path} (fixed)")


def fix_paths(paths: list[str], options: Optional[LintOptions] = None, *, unsafe: bool = False,
              write: bool = True) -> tuple[LintRun, list[FixOutcome]]:
    """Apply the fixes to every path (``probe lint --fix``; ``write=False``
    is ``--diff``), then lint what is left. Paths are taken as by
    :func:`lint_paths`: folders are walked, ``-`` is standard input (its
    fixed text is returned, never written anywhere).

    A file is rewritten (atomically, keeping its mode) only when it parsed,
    a fix applied, it is not a soft link, and its bytes are still those
    that were linted (an editor saving meanwhile is not overwritten). Fixing repeats (re-lint,
    fix again) up to :data:`fixes.MAX_ROUNDS` times.

    Returns:
        (the run over the fixed texts, whose status reflects what remains,
        or 2 when a file with fixes due could not be rewritten; one
        FixOutcome per file linted).
    Raises:
        UsageError: see :func:`prepare`.
    """
    import errno
    import os

    from .fixes.edits import fix_text
    from .loader import read_bytes, write_atomic

    options = options or LintOptions()
    paths = _check_paths(paths, options)
    context, selection, project = prepare(options, first_path=_settings_start(paths, options))
    results: list[Result] = []
    outcomes: list[FixOutcome] = []
    for item in _inputs(paths, options, project):
        path = item.path
        file_selection = project.selection_for(path, selection) if project else selection
        outcome = FixOutcome(path, stdin=item.stdin)
        outcomes.append(outcome)
        raw = item.raw
        if not item.stdin and not item.reason:  # read now: an earlier fix may have changed it (a link to it)
            raw, _ = read_bytes(path)
        text = None
        if raw is None:
            outcome.skipped = "cannot be read"
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                outcome.skipped = "is not UTF-8"
                if item.stdin:  # passed through unchanged by --fix -
                    outcome.before = outcome.after = raw.decode("utf-8", "surrogateescape")
        if text is None:
            results.append(_lint_input(_Input(path, raw, item.reason, item.stdin), context, file_selection))
            continue

        def lint(candidate: str, path: str = path, file_selection: Selection = file_selection) -> list:
            return lint_file(path, context, selection=file_selection, raw=candidate.encode("utf-8")).diagnostics

        outcome.before = text
        if not item.stdin and os.path.islink(path):
            outcome.after = text
            outcome.skipped = "is a soft link; not rewritten (fix the file it points to)"
            remaining = lint(text)
        else:
            outcome.after, outcome.applied, remaining = fix_text(text, lint, unsafe=unsafe)
            if any(d.code in ("PL001", "PL003", "PL007") for d in remaining) and not outcome.applied:
                outcome.skipped = "does not parse as an msprobe config; nothing fixed"
        if write and not item.stdin and outcome.after != outcome.before:
            try:
                if read_bytes(path)[0] != raw:  # saved by someone else meanwhile: theirs wins
                    raise OSError("it changed while it was being fixed")
                write_atomic(path, outcome.after)
                outcome.written = True
            except OSError as err:
                outcome.skipped = f"not rewritten: {err.strerror or err}"
                if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    outcome.skipped += " (the file and its folder must be writable: it is replaced by a new file)"
                outcome.failed = True
                remaining = lint(text)
                outcome.after, outcome.applied = text, []
        results.append(Result(path, remaining, source=outcome.after))
    status = exit_status(results, strict=options.strict)
    if any(o.failed for o in outcomes):
        status = ExitStatus.USAGE  # could not write: an I/O error, as for a file that cannot be read
    return LintRun(results, status), outcomes
