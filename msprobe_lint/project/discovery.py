"""Which files ``probe lint PATH...`` lints: folders walked, files named.

:func:`discover` gives one Candidate per file to lint, per file or folder
skipped (with the reason ``--show-files`` prints) and per path that could
not be read (PL006). A path named on the command line is always linted or
walked; below a walked folder, ``include``/``exclude`` patterns,
``.gitignore`` files, hidden and virtual-environment folders and the
content test of ``--only-msprobe`` (sniff.py) decide. The rules, with the
pattern syntax and symbolic links, are in the README ("Usage") and
docs/lint-design.md ("Which files a folder yields").

Example::

    from msprobe_lint.project.discovery import discover, make_filter
    for candidate in discover(["."], make_filter()):
        print(candidate.action, candidate.path, candidate.reason)
"""
from __future__ import annotations

import operator
import os
import re
from collections import namedtuple

from ..textsafe import shown
from .files import MAX_BYTES, read_bytes

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterator, Optional, Sequence

DEFAULT_EXCLUDE = (".*", "__pycache__", "node_modules", "venv", "site-packages", "__pypackages__")
_DEFAULT_EXCLUDED_NAMES = frozenset(DEFAULT_EXCLUDE[1:])
VCS_FOLDERS = frozenset((".git", ".hg", ".svn"))  # skipped by every walk, whatever exclude says

LINT, SKIP, UNREADABLE = "lint", "skip", "unreadable"


class Candidate(namedtuple("Candidate", "path action reason folder stdin raw real",
                           defaults=(False, False, None, None))):
    """One entry of a discovery: a file to lint, or a file or folder
    skipped, or something that could not be read.

    Attributes:
        path: the path shown to the user (the walked folder as given, joined
            with the path below it; for standard input the
            ``--stdin-filename`` or ``-``).
        action: ``"lint"``, ``"skip"`` or ``"unreadable"``.
        reason: why, in a few words (``--show-files`` prints it).
        folder: True for a folder (skipped or unreadable as a whole).
        stdin: True for ``-`` (the caller reads standard input).
        raw: the file's bytes when discovery already read them.
        real: its absolute path, when the walk knows it (for de-duplication).

    ``raw`` and ``real`` are neither compared nor shown in its repr.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Candidate) and self[:5] == other[:5]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:5])

    def __repr__(self) -> str:
        return (f"Candidate(path={self.path!r}, action={self.action!r}, reason={self.reason!r}, "
                f"folder={self.folder!r}, stdin={self.stdin!r})")


class PatternSet:
    """.gitignore-style patterns relative to folder ``base`` (absolute),
    named ``source`` in reasons; compiled on first use.

    With ``absolute`` (the patterns of settings and flags, not of a
    .gitignore), a pattern that is an absolute path under the folder it is
    matched against (``base``, or the walked folder for a path outside
    ``base``) is taken relative to that folder; any other one keeps its
    .gitignore meaning (``/build/``: ``build`` at the top), so an absolute
    path elsewhere matches nothing."""

    def __init__(self, patterns: Sequence[str], base: str, source: str, absolute: bool = False):
        self.patterns = tuple(patterns)
        self.base = os.path.abspath(base)
        self.source = source
        self._absolute = absolute and any(os.path.isabs(p[1:] if p.startswith("!") else p) for p in self.patterns)
        self._compiled: dict[Optional[str], tuple[Any, Any, dict[str, str]]] = {}

    def __repr__(self) -> str:
        return f"PatternSet({self.patterns!r}, {self.base!r}, {self.source!r})"

    def _compile(self, anchor: Optional[str]) -> tuple[Any, Any, dict[str, str]]:
        """``(spec, any, written)`` for paths relative to folder ``anchor``
        (only absolute patterns depend on it): the GitIgnoreSpec, a regex
        matching wherever one of its patterns may, and the patterns as
        written by the ones made relative."""
        key = anchor if self._absolute else None
        if key in self._compiled:
            return self._compiled[key]
        import pathspec

        lines = [_relative_to(p, anchor) for p in self.patterns] if key is not None else self.patterns
        written = {line: p for line, p in zip(lines, self.patterns) if line != p}
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        # Most paths match no pattern at all: one regex joining the
        # patterns' own (RegexPattern.regex, named groups made plain) says
        # so in one call, and check_file decides the rest.
        regexes = [p.regex for p in spec.patterns if p.include is not None and p.regex is not None]
        any_: Any = None
        if regexes and all(isinstance(r.pattern, str) and r.flags == re.UNICODE for r in regexes):
            try:
                any_ = re.compile("|".join("(?:%s)" % _NAMED_GROUP.sub("(?:", r.pattern) for r in regexes))
            except re.error:  # pragma: no cover - check_file alone then
                any_ = None
        self._compiled[key] = spec, any_, written
        return spec, any_, written

    def match(self, abs_path: str, fallback: str, is_dir: bool, root: Optional[str] = None,
              named: bool = False) -> Optional[tuple[bool, str]]:
        """``(matched, pattern)`` for the last pattern matching the path,
        where ``matched`` is False for a negated (``!``) pattern and
        ``pattern`` is as written; None when no pattern matches.
        ``fallback`` is the path to match when ``abs_path`` is not under
        ``base``: relative to ``root``, the walked folder (absolute).

        ``named``: ``root`` was named on the command line; a pattern
        matching only that folder or a folder above it (``build/`` for
        ``probe lint build``) then does not count, as the named folder is
        walked whatever the patterns say about it."""
        prefix = self.base.rstrip(os.sep) + os.sep
        below = abs_path.startswith(prefix)
        spec, any_, written = self._compile(self.base if below else root)
        rel = abs_path[len(prefix):] if below else fallback
        if os.sep != "/":  # pragma: no cover - Windows
            rel = rel.replace(os.sep, "/")
        if is_dir:
            rel += "/"
        if any_ is not None and any_.match(rel) is None:
            return None
        result = spec.check_file(rel)
        if result.include is None:
            return None
        if below and named and root is not None and root.startswith(prefix):
            return self._match_below(spec, written, rel, len(root) + 1 - len(prefix))
        pattern = spec.patterns[result.index].pattern
        return result.include, written.get(pattern, pattern)

    @staticmethod
    def _match_below(spec: Any, written: dict[str, str], rel: str, keep: int) -> Optional[tuple[bool, str]]:
        """:meth:`match` by GitIgnoreSpec's rule (the last match wins, a
        file's own match over a folder's), leaving out the matches of a
        folder whose path ends within the first ``keep`` characters of
        ``rel``: pathspec marks the ``/`` after the folder a pattern
        matched with the group ``ps_d``."""
        out: Optional[tuple[bool, str]] = None
        out_priority = 0
        for pattern in spec.patterns:
            if pattern.include is None or pattern.regex is None:
                continue
            found = pattern.regex.match(rel)
            if found is None:
                continue
            folder = found.groupdict().get("ps_d") is not None
            if folder and found.end("ps_d") <= keep:
                continue  # the named folder, or one above it
            priority = 1 if folder else 2
            if (pattern.include and folder) or priority >= out_priority:
                out, out_priority = (pattern.include, written.get(pattern.pattern, pattern.pattern)), priority
        return out


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def _relative_to(pattern: str, folder: Optional[str]) -> str:
    """``pattern`` for paths relative to ``folder``: an absolute path under
    it becomes ``/`` and its path from there (a trailing ``/`` and a
    leading ``!`` kept); the folder itself can match nothing (it is walked,
    or named): a comment."""
    negate = "!" if pattern.startswith("!") else ""
    body = pattern[len(negate):]
    if folder is None or not os.path.isabs(body):
        return pattern
    path = os.path.normpath(body)
    if path == folder:
        return "#"
    top = folder.rstrip(os.sep) + os.sep
    if not path.startswith(top):
        return pattern  # a .gitignore pattern anchored at the top, or elsewhere: matches nothing
    rel = path[len(top):].replace(os.sep, "/")
    return f"{negate}/{rel}{'/' if body.endswith(('/', os.sep)) else ''}"


class FileFilter:
    """What a folder walk keeps (docs/lint-design.md, "Which files a folder
    yields").

    Attributes:
        include: pattern sets replacing ``*.json`` (empty: the default,
            any case of the suffix: :func:`json_name`).
        extend_include: pattern sets adding to it.
        default_exclude: whether DEFAULT_EXCLUDE applies.
        exclude: pattern sets skipping files and folders.
        respect_gitignore: honour .gitignore files.
        follow_symlinks: walk into symbolic links to folders.
    """

    def __init__(self, *, follow_symlinks: bool = False) -> None:
        self.include: list[PatternSet] = []
        self.extend_include: list[PatternSet] = []
        self.default_exclude = True
        self.exclude: list[PatternSet] = []
        self.respect_gitignore = True
        self.follow_symlinks = follow_symlinks


def make_filter(project: Any = None, *, exclude: Optional[Sequence[str]] = None, extend_exclude: Sequence[str] = (),
                cwd: Optional[str] = None, follow_symlinks: bool = False) -> FileFilter:
    """The FileFilter of a run: ``project`` (settings.ProjectSettings or
    None) gives ``include``, ``extend-include``, ``exclude`` and
    ``extend-exclude`` relative to its folder; ``exclude`` (replacing the
    default and the project's) and ``extend_exclude`` are the command
    line's, relative to ``cwd`` (default: the current folder)."""
    here = cwd or os.getcwd()
    out = FileFilter(follow_symlinks=follow_symlinks)
    if exclude is not None:
        out.default_exclude = False
        out.exclude.append(PatternSet(exclude, here, "--exclude", absolute=True))
    if project is not None:
        base = str(project.path.parent)
        name = project.path.name
        if project.include is not None:
            out.include.append(PatternSet(project.include, base, f"{name} include"))
        if project.extend_include:
            out.extend_include.append(PatternSet(project.extend_include, base, f"{name} extend-include"))
        if project.exclude is not None and exclude is None:
            out.default_exclude = False
            out.exclude.append(PatternSet(project.exclude, base, f"{name} exclude", absolute=True))
        if project.extend_exclude:
            out.exclude.append(PatternSet(project.extend_exclude, base, f"{name} extend-exclude",
                                           absolute=True))
    if extend_exclude:
        out.exclude.append(PatternSet(extend_exclude, here, "--extend-exclude", absolute=True))
    return out


def discover(paths: Sequence[str], file_filter: Optional[FileFilter] = None, *, only_msprobe: bool = False,
             stdin_filename: Optional[str] = None, walk: bool = True, skipped: bool = True) -> list[Candidate]:
    """Every candidate of ``paths`` in order: named files as they come,
    each folder's entries depth first in name order. A file reached twice
    is listed once.

    Args:
        paths: files, folders, and ``-`` for standard input.
        file_filter: see :func:`make_filter` (default: the defaults).
        only_msprobe: skip named files that are not msprobe configs too.
        stdin_filename: the name standard input is shown under.
        walk: False to take a folder for a file too (the lint then reports
            it as PL006, not a file).
        skipped: False leaves out the walk's files skipped for their content
            (the many other JSON files; a lint has no use for them).
    Never raises for bad input: what cannot be read is an ``unreadable``
    candidate (a named file that cannot be read is kept, for PL006; a
    missing path that may have been meant for a folder, ``nope/`` or
    ``nope``, is ``unreadable`` with the reason MISSING).
    """
    file_filter = file_filter or FileFilter()
    out: list[Candidate] = []
    seen: set[str] = set()
    for path in paths:
        if path == "-":
            out.append(Candidate(stdin_filename or "-", LINT, "standard input", stdin=True))
            continue
        if walk and os.path.isdir(path):
            for candidate in _walk(path, file_filter, skipped):
                if candidate.action in (LINT, UNREADABLE) or candidate.folder:  # named again: one report
                    key = candidate.real or os.path.abspath(candidate.path)
                    if key in seen:
                        continue
                    seen.add(key)
                out.append(candidate)
            continue
        key = os.path.abspath(path)
        if key in seen:
            continue
        seen.add(key)
        if walk and _missing_not_a_config_name(path):
            out.append(Candidate(path, UNREADABLE, MISSING))
            continue
        raw = None
        if only_msprobe:
            from .sniff import looks_like_msprobe

            raw, why = read_bytes(path)
            if raw is not None and not looks_like_msprobe(raw):
                out.append(Candidate(path, SKIP, "not an msprobe config, --only-msprobe"))
                continue
            if raw is None and why is not None and "over the 10 MiB limit" in why:
                # a hunt's finding: the pre-commit hook failed commits on a 16 MB dump.json; as the walk does
                out.append(Candidate(path, SKIP, f"{TOO_BIG}, --only-msprobe"))
                continue
        out.append(Candidate(path, LINT, "named on the command line", raw=raw))
    return out


MISSING = "no such file or folder"


def json_name(name: str) -> bool:
    """True when ``name`` ends in ``.json`` in any case (``config.json``,
    ``CONFIG.JSON``): the walk's default ``include``. pre-commit picks
    files the same way (``types: [json]``: identify reads the extension in
    lower case, and this project's hook pattern is ``(?i)``), so a walk
    and the hook agree; a name matched case-sensitively would pass over a
    config silently, where a lint should speak. One slice and one
    lower-case comparison: cheap enough for every file of a walk.
    (msprobe itself loads only a name ending in ``.json`` as written:
    ``probe run`` says so.)

    >>> json_name("CONFIG.JSON"), json_name("config.json"), json_name("config.jsonl")
    (True, True, False)
    """
    return name[-5:].lower() == ".json"


def _missing_not_a_config_name(path: str) -> bool:
    """True for a path that does not exist and may have been meant for a
    folder: it ends with ``/`` or its name does not end with ``.json`` in
    any case (a missing ``x.json`` is a config file not found, as the lint
    says)."""
    if path.endswith(("/", os.sep)) or not json_name(path):
        return not os.path.lexists(path)
    return False


class _Frame:
    """A folder being walked: its remaining entries and the .gitignore
    layers that apply below it."""

    __slots__ = ("entries", "layers", "bad")

    def __init__(self, entries: Iterator[os.DirEntry], layers: list[PatternSet]):
        self.entries = entries
        self.layers = layers
        self.bad: Optional[Candidate] = None


def _walk(root: str, flt: FileFilter, skipped: bool = True) -> Iterator[Candidate]:
    """Candidates below the folder ``root`` (see :func:`discover`); files
    skipped for their content are left out unless ``skipped``."""
    from .sniff import looks_like_msprobe  # (imported when there is a folder to walk)

    root_abs = os.path.abspath(root)
    prefix = "" if os.path.normpath(root) == os.curdir else (root if root.endswith(os.sep) else root + os.sep)
    rel_start = len(root_abs.rstrip(os.sep)) + 1
    visited: set[tuple[int, int]] = set()
    if flt.follow_symlinks:
        try:
            info = os.stat(root_abs)
            visited.add((info.st_dev, info.st_ino))
        except OSError:
            pass
    entries, error = _scan(root_abs)
    if error is not None:
        yield Candidate(prefix.rstrip(os.sep) or os.curdir, UNREADABLE, error, folder=True)
        return
    layers, bad = _with_gitignore(root_abs, entries, _parent_gitignores(root_abs) if flt.respect_gitignore else [],
                                  flt, prefix)
    if bad is not None:
        yield bad
    stack = [_Frame(iter(entries), layers)]
    default_include = not flt.include
    extend_include = flt.extend_include
    default_exclude = flt.default_exclude
    while stack:
        frame = stack[-1]
        for entry in frame.entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                if default_include:
                    if not json_name(name) and not (extend_include and _included(entry.path, entry.path[
                            rel_start:], extend_include)):
                        continue
                elif not _included(entry.path, entry.path[rel_start:], flt.include + extend_include):
                    continue
            if is_dir and name in VCS_FOLDERS:
                yield Candidate(prefix + entry.path[rel_start:], SKIP, f"version control folder: {name}", folder=True)
                continue
            if default_exclude and (name[0] == "." or name in _DEFAULT_EXCLUDED_NAMES):
                if skipped or is_dir:
                    yield Candidate(prefix + entry.path[rel_start:], SKIP,
                                    "hidden" if name[0] == "." else f"excluded by default: {name}", folder=is_dir)
                continue
            patterns = flt.exclude or frame.layers
            if not is_dir:
                # Patterns after the content test when only the kept files
                # matter: most JSON files fail that test and then need no
                # pattern matching (the outcome is the same).
                if skipped and patterns:
                    why = _excluded(entry.path, entry.path[rel_start:], False, flt, frame.layers, root_abs)
                    if why is not None:
                        yield Candidate(prefix + entry.path[rel_start:], SKIP, why)
                        continue
                raw, reason = _read_entry(entry)
                if raw is not None and not looks_like_msprobe(raw):
                    if skipped:
                        yield Candidate(prefix + entry.path[rel_start:], SKIP, "not an msprobe config")
                    continue
                if not skipped and patterns and _excluded(entry.path, entry.path[rel_start:], False, flt,
                                                          frame.layers, root_abs) is not None:
                    continue
                if reason in SKIPPED_UNREAD:
                    if skipped:
                        yield Candidate(prefix + entry.path[rel_start:], SKIP, reason)
                elif raw is None:
                    yield Candidate(prefix + entry.path[rel_start:], UNREADABLE, f"config {reason}")
                else:
                    yield Candidate(prefix + entry.path[rel_start:], LINT, "msprobe config", raw=raw, real=entry.path)
                continue
            shown = prefix + entry.path[rel_start:]
            why = (_excluded(entry.path, entry.path[rel_start:], True, flt, frame.layers, root_abs)
                   if patterns else None)
            if why is not None:
                yield Candidate(shown, SKIP, why, folder=True)
                continue
            child = _enter(entry, shown, flt, visited, frame.layers)
            if isinstance(child, Candidate):
                yield child
                continue
            if child.bad is not None:
                yield child.bad
            stack.append(child)
            break
        else:
            stack.pop()


def _enter(entry: os.DirEntry, shown: str, flt: FileFilter, visited: set[tuple[int, int]],
           layers: list[PatternSet]) -> Any:
    """The _Frame of a folder about to be walked, or the Candidate saying
    why it is not (a symbolic link, walked already, unreadable, a virtual
    environment)."""
    if entry.is_symlink() and not flt.follow_symlinks:
        return Candidate(shown, SKIP, "symbolic link to a folder, not followed without --follow-symlinks",
                         folder=True)
    if flt.follow_symlinks:
        try:
            info = entry.stat()
        except OSError as err:
            return Candidate(shown, UNREADABLE, f"folder cannot be read ({err.strerror or err})", folder=True)
        key = (info.st_dev, info.st_ino)
        if key in visited:
            return Candidate(shown, SKIP, "already walked: a symbolic link loop or a second link", folder=True)
        visited.add(key)
    children, error = _scan(entry.path)
    if error is not None:
        return Candidate(shown, UNREADABLE, error, folder=True)
    if any(child.name == "pyvenv.cfg" for child in children):
        return Candidate(shown, SKIP, "virtual environment: holds pyvenv.cfg", folder=True)
    child_layers, bad = _with_gitignore(entry.path, children, layers, flt, shown + os.sep)
    frame = _Frame(iter(children), child_layers)
    frame.bad = bad
    return frame


_NAME = operator.attrgetter("name")
_SMALL = 65536
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _read_entry(entry: os.DirEntry) -> tuple[Optional[bytes], Optional[str]]:
    """files.read_bytes for a walked file, in three system calls for the
    common case: a regular file (known from the folder listing, no stat)
    under 64 KiB, read in one short read. Anything else goes through
    read_bytes and its checks, except what a walk skips unread (a project's
    files, not the user's error): a file over the 10 MiB limit comes back as
    ``(None, TOO_BIG)``, a symbolic link to nothing as ``(None,
    BROKEN_LINK)``, and a FIFO, socket or device as ``(None, NOT_REGULAR)``
    (opening a FIFO could block the walk)."""
    try:
        regular = entry.is_file(follow_symlinks=False)
    except OSError:
        regular = False
    if regular:
        try:
            fd = os.open(entry.path, _OPEN_FLAGS)
        except OSError:
            return read_bytes(entry.path)  # its message for the error
        try:
            data = os.read(fd, _SMALL)
        except OSError:
            data = b"x" * _SMALL  # read_bytes reports it
        finally:
            os.close(fd)
        if len(data) < _SMALL:
            return data, None
    else:
        try:
            linked_file = entry.is_file()  # a symbolic link to a regular file is read as one
        except OSError:
            linked_file = False
        if not linked_file:
            return None, BROKEN_LINK if entry.is_symlink() and not os.path.exists(entry.path) else NOT_REGULAR
    try:
        if entry.stat().st_size > MAX_BYTES:
            return None, TOO_BIG
    except OSError:
        pass  # read_bytes says why
    return read_bytes(entry.path)


TOO_BIG = "over the 10 MiB limit, too big to be an msprobe config"
BROKEN_LINK = "symbolic link to nothing (broken link)"
NOT_REGULAR = "not a regular file (a FIFO, socket or device)"
#: reasons of _read_entry for a file a walk skips without reading it
SKIPPED_UNREAD = (TOO_BIG, BROKEN_LINK, NOT_REGULAR)


def _scan(folder: str) -> tuple[list[os.DirEntry], Optional[str]]:
    """The entries of ``folder`` sorted by name, or an error message."""
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except PermissionError:
        return [], "folder cannot be read: permission denied"
    except OSError as err:
        return [], f"folder cannot be read ({err.strerror or err})"
    entries.sort(key=_NAME)
    return entries, None


def _included(abs_path: str, rel: str, sets: list[PatternSet]) -> bool:
    found = False
    for patterns in sets:
        hit = patterns.match(abs_path, rel, False)
        if hit is not None:
            found = hit[0]
    return found


def _excluded(abs_path: str, rel: str, is_dir: bool, flt: FileFilter, layers: list[PatternSet],
              root: str) -> Optional[str]:
    """Why the entry is skipped by an exclude pattern or a .gitignore, or
    None. ``root``: the walked folder (absolute), named on the command
    line: what the patterns say about it does not count."""
    for patterns in flt.exclude:
        hit = patterns.match(abs_path, rel, is_dir, root, named=True)
        if hit is not None and hit[0]:
            return f"excluded by {patterns.source} pattern {hit[1]!r}"
    for patterns in reversed(layers):  # the deepest .gitignore decides
        hit = patterns.match(abs_path, rel, is_dir, root, named=True)
        if hit is not None:
            return f"ignored by {patterns.source} pattern {hit[1]!r}" if hit[0] else None
    return None


def _read_gitignore(path: str) -> tuple[Optional[PatternSet], Optional[str]]:
    """The patterns of the .gitignore (or ``.git/info/exclude``) at the
    absolute ``path``, cited in reasons by :func:`_cite`; or why not."""
    raw, reason = read_bytes(path)
    if raw is None:
        return None, f"cannot be read, so it is not honoured: {reason}"
    lines = raw.decode("utf-8", errors="replace").splitlines()
    return PatternSet(lines, os.path.dirname(path), _cite(path)), None


def _cite(path: str) -> str:
    """The absolute ``path`` as reasons cite it: relative to the current
    folder when under it, else absolute (never ``../``)."""
    try:
        here = os.getcwd()
    except OSError:  # the current folder was removed
        return path
    top = here.rstrip(os.sep) + os.sep
    return path[len(top):] if path.startswith(top) else path


def _with_gitignore(folder: str, entries: list[os.DirEntry], layers: list[PatternSet], flt: FileFilter,
                    shown_prefix: str) -> tuple[list[PatternSet], Optional[Candidate]]:
    """``layers`` plus the .gitignore among ``entries``; an unreadable one
    is reported as a Candidate. A folder holding ``.git`` is the top of a
    work tree: git does not apply the enclosing repository's ignore rules
    inside a nested repository, so its layers start afresh from its own
    ``.git/info/exclude``."""
    if not flt.respect_gitignore:
        return layers, None
    if any(e.name == ".git" for e in entries):
        layers = _info_exclude(folder)
    if not any(e.name == ".gitignore" for e in entries):
        return layers, None
    patterns, error = _read_gitignore(os.path.join(folder, ".gitignore"))
    if patterns is None:
        return layers, Candidate(shown_prefix + ".gitignore", UNREADABLE, error or "")
    return layers + [patterns], None


def _info_exclude(top: str) -> list[PatternSet]:
    """``[.git/info/exclude]`` of the work tree whose top is ``top``, or []."""
    path = os.path.join(top, ".git", "info", "exclude")
    if not os.path.isfile(path):
        return []
    patterns, _ = _read_gitignore(path)
    if patterns is None:
        return []
    patterns.base = top
    return [patterns]


def _parent_gitignores(root_abs: str) -> list[PatternSet]:
    """The .gitignore files of the folders above ``root_abs`` up to the top
    of its git work tree (the folder holding ``.git``), outermost first,
    after ``.git/info/exclude``; none outside a work tree."""
    above: list[str] = []  # the folders above root_abs, up to the work tree's top
    folder = root_abs
    while not os.path.exists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return []  # not in a git work tree
        folder = parent
        above.append(folder)
    layers = _info_exclude(folder)
    for folder in reversed(above):
        candidate = os.path.join(folder, ".gitignore")
        if os.path.isfile(candidate):
            patterns, _ = _read_gitignore(candidate)
            if patterns is not None:
                layers.append(patterns)
    return layers


def show_files(candidates: Sequence[Candidate]) -> str:
    """``--show-files`` text: one line per candidate, ``lint``, ``skip``
    or ``error``, the path (a folder with a trailing ``/``) and the reason."""
    lines = []
    for c in candidates:
        word = {LINT: "lint", SKIP: "skip", UNREADABLE: "error"}[c.action]
        lines.append(f"{word:<5} {shown(c.path)}{'/' if c.folder else ''}  ({shown(c.reason)})")
    return "\n".join(lines) + ("\n" if lines else "")
