"""What a lint takes in: the paths checked, the files a folder yields
(``--show-files`` lists them), and standard input read.

Example::

    >>> from msprobe_lint.lint.inputs import check_paths
    >>> from msprobe_lint.lint.options import LintOptions
    >>> check_paths([], LintOptions(stdin_filename="config.json"))
    ['-']
"""
from __future__ import annotations

from collections import namedtuple

from .context import Context
from .engine import Result, lint_file
from .options import LintOptions, UsageError, find_project, patterns
from .selection import Selection

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterator, Optional


def check_paths(paths: list[str], options: LintOptions) -> list[str]:
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


def settings_start(paths: list[str], options: LintOptions) -> Optional[str]:
    """Where the nearest pyproject.toml is looked for: the first path, or
    for standard input its --stdin-filename (else the current folder)."""
    first = paths[0] if paths else None
    if first == "-":
        return options.stdin_filename
    return first


_UNSET = object()  # project not given: found from the first path


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

    options = options or LintOptions()
    paths = check_paths(paths, options)
    if project is _UNSET:
        project = find_project(options, settings_start(paths, options))
    exclude = patterns(options.exclude) if options.exclude is not None else None
    file_filter = discovery.make_filter(project, exclude=exclude, extend_exclude=patterns(options.extend_exclude),
                                        follow_symlinks=options.follow_symlinks)
    return discovery.discover(paths, file_filter, only_msprobe=options.only_msprobe,
                              stdin_filename=options.stdin_filename, walk=walk, skipped=skipped)


class Input(namedtuple("Input", "path raw reason stdin folder", defaults=("", False, False))):
    """One thing a lint takes: a file's or standard input's bytes (``raw``
    None when it could not be read, ``reason`` saying why); ``stdin`` for
    standard input, ``folder`` for a folder a walk could not list (its
    PL006 is not a file's)."""

    __slots__ = ()


def read_inputs(paths: list[str], options: LintOptions, project: Any, *, walk: bool = True) -> Iterator[Input]:
    """The files ``probe lint PATHS`` lints, in order (see
    :func:`list_files`), with standard input (``-``) read by
    loader.read_stdin. Yields _Input."""
    for candidate in list_files(paths, options, project=project, walk=walk, skipped=False):
        if candidate.action == "skip":
            continue
        if candidate.action == "unreadable":
            yield Input(candidate.path, None, candidate.reason, folder=candidate.folder)
        elif candidate.stdin:
            from .loader import read_stdin
            from ..project.sniff import looks_like_msprobe

            source = read_stdin(options.stdin_filename)
            if source.raw is None:
                yield Input(source.name, None, f"config {source.reason}", stdin=True)
            elif not options.only_msprobe or looks_like_msprobe(source.raw):
                yield Input(candidate.path, source.raw, stdin=True)
        else:
            yield Input(candidate.path, candidate.raw)


def lint_input(item: Input, context: Context, selection: Selection) -> Result:
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
