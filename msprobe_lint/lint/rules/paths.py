"""Paths family (PL401-PL411): the path rules msprobe enforces at run time
(SPEC 2.4; msprobe's file checks in ``msprobe/core/common/file_utils.py``):
only ``[A-Za-z0-9_./-]``, at most 4096 characters with no component over
255, no soft link, not writable by others nor owned by another user; and
absolute paths, which msprobe's docs ask for; and no placeholder copied
from the docs (PL409, reported instead of the others for that path); and
a config file whose name ends in ``.json`` (PL410, also on a file that does
not parse).
PL406-PL408 and PL411 look at the filesystem and run only with ``--check-fs``
(always in probe_runtime); so do PL402 and PL403 on the config file's own
path, which msprobe checks as it reads it.
"""
from __future__ import annotations

import os
import re
import stat

from ..config_view import ConfigView
from ..context import Context
from ..diagnostic import Finding, Severity, set_value
from .base import rule

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:  # pathlib is imported by the filesystem rules (--check-fs) only
    from pathlib import Path
    from typing import Iterator, Optional

ALLOWED = re.compile(r"^[A-Za-z0-9_./-]+$")
DISALLOWED_RUN = re.compile(r"[^A-Za-z0-9_./-]+")
VARIABLE = re.compile(r"\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_PATH = 4096
MAX_COMPONENT = 255
# (section or None, key): paths msprobe reads or writes.
PATH_KEYS = ((None, "dump_path"), ("run_ut", "error_data_path"), ("run_ut", "nfs_path"), ("tensor", "nfs_path"))


# Parts of a path that docs and examples write for "put your path here":
# /path/to/..., xxx, your_path, <dump_dir>, {output}, "...".
PLACEHOLDER_PART = re.compile(r"(?i)^(xx|(?:.*[_-])?x{3,}(?:[_-].*)?|your.*|<.*>|\{.*\}|\[.*\]|path[_-]?to(?:[_-].*)?"
                              r"|\.{3,}|\u2026)$")


def placeholder(value: str) -> Optional[str]:
    """The part of path ``value`` that is a placeholder from the docs
    (``path/to``, ``xxx``, ``your_path``, ``<dir>``, ``...``), or None."""
    parts = value.split("/")
    for index, part in enumerate(parts):
        if part.lower() == "path" and index + 1 < len(parts) and parts[index + 1].lower() == "to":
            return f"{part}/{parts[index + 1]}"
        if PLACEHOLDER_PART.match(part):
            return part
    return None


def path_values(config: ConfigView) -> Iterator[tuple[str, str, str]]:
    """(name, pointer, value) of each path in the config that msprobe will
    use: dump_path (unless the training script passes its own to
    PrecisionDebugger) and the path options of the active task's section;
    a placeholder (PL409's) is left out."""
    for name, ptr, value in _paths(config):
        if placeholder(value) is None:
            yield name, ptr, value


def _paths(config: ConfigView) -> Iterator[tuple[str, str, str]]:
    for section, key in PATH_KEYS:
        if section is not None and section != config.task:
            continue
        if section is None and key in config.given_in_code:
            continue
        parts = (key,) if section is None else (section, key)
        value = config.get(*parts)
        if isinstance(value, str) and value:
            yield key, "/" + "/".join(parts), value


def _rewrite(ptr: str, new: str, description: str):
    """Rewriting a path: always unsafe, since the dump (or read) then
    happens somewhere else than the config says today (absolute against
    the folder the linter runs in, '..' collapsed past a soft link, '~'
    of this user on this machine, characters replaced)."""
    return set_value(ptr, new, f"{description}: {new}", safe=False)


def _expands(value: str) -> bool:
    """True when a shell would expand ``value``: a leading '~' or a '$VAR'
    anywhere ('~' elsewhere is a plain character, left to PL402)."""
    return value.startswith("~") or bool(VARIABLE.search(value))


@rule("PL401", "path-not-absolute", "error", "dump_path not absolute (warning for other paths)", fix="unsafe")
def not_absolute(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    A relative dump_path is resolved against wherever the job happened to
    start: on a cluster that is rarely where you look afterwards, and each
    launcher starts in a different folder. msprobe's docs ask for absolute
    paths. Other path options (error_data_path, nfs_path) get a warning.

    Bad:
        "dump_path": "./dump_path"
    Good:
        "dump_path": "/home/user/dump_path"
    """
    for name, ptr, value in path_values(config):
        if _expands(value) or value.startswith("/"):
            continue
        absolute = os.path.normpath(os.path.join(os.path.abspath(context.cwd or os.curdir), value))
        against = context.cwd_label or ('--cwd' if context.cwd else 'this folder')
        # a name in another script is PL402's to rename: '_' for its letters is no example
        # collapsed as the fix is: "a/../b" -> /home/user/b, never /home/user/a/../b
        example = _separators_replaced(os.path.normpath(value).lstrip('./')) or 'dump'
        yield Finding("PL401", f"{name} {value!r} is relative: it lands wherever the job starts", pointer=ptr,
                      severity=None if name == "dump_path" else Severity.WARNING,
                      hint=f"give an absolute path, e.g. /home/user/{example}",
                      fix=_rewrite(ptr, absolute, f"make {name} absolute against {against}"))


@rule("PL402", "path-bad-characters", "error", "Path has characters outside [A-Za-z0-9_./-]", fix="unsafe")
def bad_characters(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe refuses any path with a character outside letters, digits, '_',
    '.', '/' and '-': spaces, non-ASCII letters, ':' and the like stop the
    job when it first writes. With --check-fs (always in probe_runtime) the
    config file's own real path is checked too: msprobe reads it only
    through the same check. The fix (unsafe: the dump then lands in another
    folder) writes '_' for spaces, ':' and other separators. A name in
    another script ("/data/模型/dump") gets no fix, only the hint to rename
    it in ASCII: '_' for its letters would lose the name, and different
    names would become one folder. A line break at the end counts too:
    msprobe's own check (re.match with '$') lets one through, and the dump
    then goes to a folder whose name ends with it.

    Bad:
        "dump_path": "/home/my data/dump"
    Good:
        "dump_path": "/home/my_data/dump"
    """
    for name, ptr, value in path_values(config):
        if _expands(value) or ALLOWED.fullmatch(value):
            continue
        if ALLOWED.match(value):  # only a final line break: msprobe's '$' lets it through
            trimmed = value.rstrip("\n")
            yield Finding("PL402", f"{name} {value!r} ends with a line break: msprobe's check lets it through and "
                                   "writes into a folder whose name ends with it", pointer=ptr,
                          hint=f"write {trimmed}", fix=_rewrite(ptr, trimmed, "remove the line break"))
            continue
        bad = sorted(set(DISALLOWED_RUN.findall(value)) and {c for c in value if not ALLOWED.match(c)})
        shown = " ".join(repr(c) for c in bad[:8])
        named = _named_in_other_script(value)
        if named:
            yield Finding("PL402", f"{name} has characters msprobe rejects: {shown}", pointer=ptr,
                          hint=f"rename {_and(named)} with only ASCII letters, digits, '_', '.' and '-' (its "
                               "English or pinyin name, say) and write the new path here; no automatic fix: '_' "
                               "for its letters would lose the name")
            continue
        cleaned = DISALLOWED_RUN.sub("_", value)
        yield Finding("PL402", f"{name} has characters msprobe rejects: {shown}", pointer=ptr,
                      hint=f"use only letters, digits, '_', '.', '/', '-', e.g. {cleaned}",
                      fix=_rewrite(ptr, cleaned, "replace the rejected characters with '_'"))
    own = _config_real_path(config, context)
    if own is not None and not ALLOWED.fullmatch(own):
        shown = " ".join(repr(c) for c in sorted({c for c in own if not ALLOWED.match(c)})[:8])
        named = _named_in_other_script(own)
        yield Finding("PL402", f"the config file's real path {own} has characters msprobe rejects: {shown} "
                               "(it checks the config's own path too)",
                      hint=f"move the config, or rename {_and(named)} with only ASCII letters, digits, '_', '.' "
                           "and '-'"
                      if named else f"move or rename the config, e.g. to {_loadable(own)}")


def _loadable(path: str) -> str:
    """``path`` with '_' for the characters msprobe rejects and a name it
    loads (:func:`json_name`)."""
    folder = DISALLOWED_RUN.sub("_", os.path.dirname(path))
    name = os.path.basename(path)
    return os.path.join(folder, DISALLOWED_RUN.sub("_", name if name.endswith(".json") else json_name(path)))


def _separators_replaced(path: str) -> str:
    """``path`` with '_' for each run of rejected characters that are not
    part of a name in another script (spaces, ':', tabs), the names kept:
    ``./my dump/模型`` -> ``./my_dump/模型``."""
    import unicodedata  # only for a path msprobe rejects

    def keep_names(run: re.Match) -> str:
        kept = "".join(c if not c.isascii() and unicodedata.category(c)[0] in "LMN" else "_" for c in run.group())
        return re.sub("_+", "_", kept)

    return DISALLOWED_RUN.sub(keep_names, path)


def _named_in_other_script(path: str) -> list[str]:
    """The components of ``path`` (quoted) holding letters, digits or marks
    outside ASCII (``'模型'`` of ``/data/模型/dump``, ``'café'``): names,
    which no character replacement can keep. Empty when the rejected
    characters are separators only (spaces, ':', fullwidth punctuation).

    >>> _named_in_other_script("/data/模型/dump run")
    ["'模型'"]
    >>> _named_in_other_script("/data/dump run:1")
    []
    """
    import unicodedata  # only for a path msprobe rejects

    return [repr(part) for part in path.split("/")
            if any(not c.isascii() and unicodedata.category(c)[0] in "LMN" for c in part)]


def _and(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


@rule("PL409", "path-placeholder", "error", "Path is a placeholder copied from the docs")
def path_placeholder(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Docs and examples write /path/to/dump, xxx/data_dump or your_path where
    your own folder goes. Copied as is, msprobe creates that folder (or
    fails for lack of permission) and the dump lands where nobody looks.
    Reported instead of the other path rules for that path; there is no fix:
    only you know the folder.

    Bad:
        "dump_path": "/path/to/dump/data"
    Good:
        "dump_path": "/data/llama_run3/msprobe_dump"
    """
    for name, ptr, value in _paths(config):
        part = placeholder(value)
        if part is not None:
            yield Finding("PL409", f"{name} {value!r} is a placeholder from the docs ({part!r}): msprobe would "
                                   "use it as it is", pointer=ptr,
                          hint=f"write the absolute folder where the {'dump' if name == 'dump_path' else 'data'} "
                               "should go")


@rule("PL403", "path-too-long", "error", "Path too long (over 4096, or a component over 255)")
def too_long(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe refuses paths longer than 4096 characters or with a component
    longer than 255 (the Linux limits).

    Bad:
        "dump_path": "/data/<300 characters>"
    Good:
        "dump_path": "/data/run1"
    """
    for name, ptr, value in path_values(config):
        if len(value) > MAX_PATH:
            yield Finding("PL403", f"{name} is {len(value)} characters long; the limit is {MAX_PATH}", pointer=ptr)
            continue
        longest = max(value.split("/"), key=len)
        if len(longest) > MAX_COMPONENT:
            yield Finding("PL403", f"{name} has a component of {len(longest)} characters; the limit is "
                                   f"{MAX_COMPONENT}", pointer=ptr, hint="shorten the folder name")
    own = _config_real_path(config, context)
    longest = max(own.split("/"), key=len) if own is not None else ""
    if own is not None and (len(own) > MAX_PATH or len(longest) > MAX_COMPONENT):
        what = (f"is {len(own)} characters long; the limit is {MAX_PATH}" if len(own) > MAX_PATH else
                f"has a component of {len(longest)} characters; the limit is {MAX_COMPONENT}")
        yield Finding("PL403", f"the config file's real path {what} (msprobe checks the config's own path too)",
                      hint="move the config to a shorter path")


def _config_real_path(config: ConfigView, context: Context) -> Optional[str]:
    """The config file's real path (soft links resolved, as msprobe checks
    it before reading: ``FileOpen``/``FileChecker`` in its
    ``core/common/file_utils.py`` apply the character and length checks to
    ``os.path.realpath``), or None: no filesystem checks, or no file (text
    given on standard input or by an editor)."""
    if not context.check_fs or not config.path or config.path.startswith("<") or config.path == "-":
        return None
    return os.path.realpath(config.path)


@rule("PL410", "config-name-not-json", "error", "Config file name does not end in '.json'")
def config_name(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe's PrecisionDebugger reads its config only through a file check
    that wants the name to end in '.json', in lower case (the ``.json`` file
    type of ``FileChecker`` in its ``core/common/file_utils.py``, 8.1.2 and
    later): a config saved as CONFIG.JSON, config.json.bak or config.txt
    stops the job at ``PrecisionDebugger(config_path=...)``, whatever it
    holds. Checked on the name the file is linted under (``--stdin-filename``
    for standard input; an editor's buffer, its file's); with --check-fs
    (always in probe_runtime) on the real file's name, soft links resolved,
    as msprobe checks it. Also reported beside a syntax error (PL001): the
    name is wrong whatever the file holds.

    Bad:
        /home/user/msprobe/Config.JSON
    Good:
        /home/user/msprobe/config.json
    """
    yield from config_name_findings(config.path, context.check_fs)


def config_name_findings(path: str, check_fs: bool) -> list[Finding]:
    """PL410 for the config file ``path`` (none for text without a file
    name: ``<...>`` or ``-``); with ``check_fs`` the real path's name is
    judged, as msprobe resolves soft links before it checks the suffix."""
    if not path or path.startswith("<") or path == "-":
        return []
    real = os.path.realpath(path) if check_fs else path
    if real.endswith(".json"):
        return []
    name = os.path.basename(real)
    linked = f" ({path} leads to it)" if check_fs and os.path.basename(path) != name else ""
    return [Finding("PL410", f"the config's file name {name!r}{linked} does not end in '.json' (lower case): "
                             "msprobe's PrecisionDebugger refuses it before training starts",
                    hint=f"rename the file, e.g. to {json_name(real)}, and pass that name as config_path")]


def json_name(path: str) -> str:
    """A name for the file ``path`` that msprobe loads: its name with the
    suffix ``.json`` (``Config.JSON`` -> ``Config.json``, ``cfg`` ->
    ``cfg.json``, ``config.txt`` -> ``config.json``), or, when a file of
    that name is already in its folder, one that keeps the old suffix
    (``config.json.bak`` -> ``config_bak.json``): renaming onto it would
    replace another config."""
    folder, name = os.path.split(path)
    stem, dot, suffix = name.rpartition(".")
    if not stem:  # no suffix ("cfg"), or a hidden name (".cfg")
        return name + ".json"
    if suffix.lower() == "json":
        return stem + ".json"
    bare = stem[:-5] if stem.lower().endswith(".json") else stem
    plain, kept = bare + ".json", f"{bare}_{suffix}.json"
    return kept if os.path.lexists(os.path.join(folder, plain)) else plain


@rule("PL404", "path-dotdot", "warning", "Path contains '..'", fix="unsafe")
def dotdot(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    A '..' component makes the real location depend on soft links along the
    way and hard to read; write the folder it means. The unsafe fix
    collapses the '..'; a relative path ("../dump") is also made absolute,
    as PL401's fix makes it: against the current folder or --cwd (collapsed
    alone it would stay as it is). A path with '~' or '$VAR' (PL405) gets
    no fix: collapsing would swallow them.

    Bad:
        "dump_path": "/data/run/../dump"
    Good:
        "dump_path": "/data/dump"
    """
    for name, ptr, value in path_values(config):
        if ".." not in value.split("/"):
            continue
        message = f"{name} {value!r} contains '..'"
        if _expands(value):  # '~/../x' collapses to 'x': PL405's first
            yield Finding("PL404", message, pointer=ptr, hint="write the absolute folder it means, without '..'")
            continue
        description = "collapse '..' in the path"
        if not value.startswith("/"):
            against = context.cwd_label or ('--cwd' if context.cwd else 'this folder')
            value_at = os.path.join(os.path.abspath(context.cwd or os.curdir), value)
            description = f"collapse '..' and make {name} absolute against {against}"
        else:
            value_at = value
        collapsed = os.path.normpath(value_at)
        yield Finding("PL404", message, pointer=ptr, hint=f"write it as {collapsed}",
                      fix=_rewrite(ptr, collapsed, description) if collapsed != value else None)


@rule("PL405", "path-not-expanded", "error", "'~' or '$VAR' in a path (never expanded)", fix="unsafe")
def not_expanded(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe takes the path literally: '~' and '$HOME' are not expanded, and
    both characters are outside its whitelist anyway. Reported instead of
    PL401/PL402 for that path.

    The unsafe fix expands a leading '~' as a shell would: '~' to this
    user's home folder, '~name' to the home folder of user name on this
    machine (none when no such user is known here: the hint then says
    whose home to write). The hint writes each '$VAR' with its value in
    the environment probe lint runs in, or as <VAR> to fill in when it is
    not set there (no fix then: a fix never writes a placeholder).

    Bad:
        "dump_path": "~/dump"
    Good:
        "dump_path": "/home/user/dump"
    """
    for name, ptr, value in path_values(config):
        if not _expands(value):
            continue
        message = f"{name} {value!r} uses '~' or '$': msprobe never expands them"
        tilde, home = _home(value)
        whose = "this user's home folder" if tilde == "~" else f"the home folder of user {(tilde or '~')[1:]!r}"
        if tilde is not None and home is None:  # '~name' of a user unknown here (or no home known)
            yield Finding("PL405", message, pointer=ptr,
                          hint=f"write the full path, with {whose} for {tilde!r}"
                               + ("" if tilde == "~" else " (no such user on this machine)"))
            continue
        rest, placeholders, unset = _variables_expanded(value[len(tilde or ""):])
        expanded = rest if home is None else home.rstrip("/") + rest or "/"
        hint = f"write the full path, e.g. {expanded}"
        if placeholders:
            hint = f"write the full path: {expanded}, with {_and(placeholders)} written out" + (
                f" ({_unset_phrase(unset)})" if unset else "")
        yield Finding("PL405", message, pointer=ptr, hint=hint,
                      fix=_rewrite(ptr, expanded, f"expand {tilde!r} to {whose}")
                      if tilde is not None and not VARIABLE.search(value) else None)


def _unset_phrase(names: list[str]) -> str:
    """``$A is not set here``, ``$A and $B are empty here``, or both
    parts joined: why each of ``names`` gave no value."""
    parts = []
    for state, group in (("not set", [n for n in names if n not in os.environ]),
                         ("empty", [n for n in names if n in os.environ])):
        if group:
            parts.append(f"{_and(['$' + n for n in group])} {'is' if len(group) == 1 else 'are'} {state} here")
    return ", ".join(parts)


def _variables_expanded(value: str) -> tuple[str, list[str], list[str]]:
    """``value`` with each ``$VAR`` or ``${VAR}`` replaced by its value in
    this environment (as a shell would expand it where the linter runs),
    else by the placeholder ``<VAR>``; then the placeholders written, and
    the names among them that are unset or empty here, in order, once
    each. A ``${...}`` that is not a plain name (``${VAR:-x}``, an
    unclosed ``${``) is never expanded: it becomes ``<VAR:-x>``.

    >>> _variables_expanded("/data/${PL405_UNSET_DOCTEST}/dump")
    ('/data/<PL405_UNSET_DOCTEST>/dump', ['<PL405_UNSET_DOCTEST>'], ['PL405_UNSET_DOCTEST'])
    """
    placeholders: list[str] = []
    unset: list[str] = []

    def expand(match: re.Match) -> str:
        name = match.group(1)
        plain = not name.startswith("{")
        if not plain:
            closed = name.endswith("}")
            name = name[1:-1] if closed else name[1:]
            plain = closed and bool(_NAME.fullmatch(name))
        found = os.environ.get(name) if plain else None
        if found:
            return found
        shown = f"<{name or 'VAR'}>"
        if shown not in placeholders:
            placeholders.append(shown)
            if plain:
                unset.append(name)
        return shown

    return VARIABLE.sub(expand, value), placeholders, unset


def _home(value: str) -> tuple[Optional[str], Optional[str]]:
    """(the leading ``~`` or ``~name`` of ``value``, the home folder it
    stands for, as a shell expands it: ``~`` this user's, ``~name`` that
    user's from the password database) or (None, None) without a leading
    ``~``; the home is None for a user unknown on this machine.

    >>> _home("/data")
    (None, None)
    """
    if not value.startswith("~"):
        return None, None
    tilde = value.split("/", 1)[0]
    home = os.path.expanduser(tilde)
    return tilde, None if home == tilde or not home.startswith("/") else home


def _absolute(value: str, base: Optional[Path]) -> Path:
    """``value`` made absolute against ``base`` (default: the current
    folder). Not normalised: collapsing ``..`` lexically could step over a
    soft link that the real lookup goes through."""
    from pathlib import Path

    folder = Path(os.path.abspath(base)) if base is not None else Path.cwd()
    return folder / value


def _links(path: Path) -> Optional[Path]:
    """The first component of ``path`` (itself included) that is a soft
    link, or None. Stops at the first component that does not exist."""
    from pathlib import Path

    current = Path(path.anchor)
    for part in path.parts[1:]:
        current = current / part
        try:
            if current.is_symlink():
                return current
            if not current.exists():
                return None
        except OSError:
            return None
    return None


def _exists(path: Path) -> bool:
    """Path.exists() that answers False instead of raising (EACCES)."""
    try:
        return path.exists()
    except OSError:
        return False


def _nearest_existing(path: Path) -> Path:
    while not _exists(path) and path != path.parent:
        path = path.parent
    return path


def _fs_targets(config: ConfigView, context: Context) -> Iterator[tuple[str, Optional[str], Path, str]]:
    """(name, pointer, resolved path, value as written) for the config file
    and each path in it."""
    if config.path and not config.path.startswith("<") and config.path != "-":  # "-": standard input
        # The config path was given on this command line: relative to here,
        # not to --cwd (where the job will start).
        yield "config", None, _absolute(config.path, None), config.path
    for name, ptr, value in path_values(config):
        if not _expands(value):
            yield name, ptr, _absolute(value, context.cwd), value


def _shown(resolved: Path, value: str) -> str:
    """The path as written, with the absolute path it resolved to when it
    was relative."""
    return value if os.path.isabs(value) else f"{value} (resolved to {resolved})"


@rule("PL406", "path-soft-link", "error", "(filesystem) path or a parent is a soft link", filesystem=True, fix="unsafe")
def soft_link(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe refuses to read or write through a soft link (a guard against
    being redirected to someone else's files), for the config and the dump
    path alike. Needs --check-fs.

    Bad:
        dump_path /data/dump where /data -> /mnt/big
    Good:
        dump_path /mnt/big/dump
    """
    if not context.check_fs:
        return
    for name, ptr, resolved, value in _fs_targets(config, context):
        link = _links(resolved)
        if link is not None:
            target = os.path.realpath(link)
            yield Finding("PL406", f"{name} {_shown(resolved, value)} goes through the soft link {link} -> {target}",
                          pointer=ptr, hint=f"use the real path: {os.path.realpath(resolved)}",
                          fix=_rewrite(ptr, os.path.realpath(resolved), "write the real path")
                          if ptr is not None else None)


@rule("PL407", "dump-path-not-writable", "error",
      "(filesystem) dump_path not a directory, or it or its nearest existing parent not writable", filesystem=True)
def not_writable(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe creates dump_path (and step/rank folders under it) at the first
    dump: if it is an existing file, or if it or its nearest existing parent
    is not writable, the job fails after it has run up to that point
    (probe_runtime, let through, turns detection off and ends with a false
    "no overflow found"). Before a guarded launch (probe run,
    probe_runtime's gate) no --ignore, --select, per-file ignore or
    severity setting turns it off. A dump_path that holds another run's
    dump is PL411. Needs --check-fs.

    msprobe also creates at most 16 missing folder levels (its
    create_directory's recursion limit).

    Bad:
        dump_path /proc/dump, a path that is an existing file, or
        /data/a/b/.../q with 17 folders still to make
    Good:
        a new, empty dump_path in a folder you own
    """
    if not context.check_fs:
        return
    for name, ptr, resolved, value in _fs_targets(config, context):
        if name != "dump_path":
            continue
        if _exists(resolved) and not resolved.is_dir():
            yield Finding("PL407", f"dump_path {_shown(resolved, value)} exists and is not a directory", pointer=ptr,
                          hint="choose a folder path")
            continue
        existing = _nearest_existing(resolved)
        if existing != resolved and not existing.is_dir():
            yield Finding("PL407", f"dump_path {_shown(resolved, value)} cannot be created: {existing} is a file, "
                                   "not a folder", pointer=ptr, hint="choose a path under a folder")
            continue
        missing = len(resolved.relative_to(existing).parts) if existing != resolved else 0
        if missing > MAX_NEW_LEVELS:
            yield Finding("PL407", f"dump_path {_shown(resolved, value)} needs {missing} new folder levels under "
                                   f"{existing}; msprobe creates at most {MAX_NEW_LEVELS} (its create_directory "
                                   "stops at that recursion depth) and refuses the config", pointer=ptr,
                          hint=f"create the folders first (mkdir -p {resolved}), or choose a shallower path")
            continue
        what = "dump_path" if existing == resolved else f"its nearest existing parent {existing}"
        if not os.access(existing, os.W_OK | os.X_OK):
            yield Finding("PL407", f"dump_path {_shown(resolved, value)}: {what} is not writable by this user",
                          pointer=ptr, hint="choose a folder you can write, or fix its permissions")
            continue
        refused = _cannot_make_folder_in(existing)
        if refused:
            yield Finding("PL407", f"dump_path {_shown(resolved, value)}: no folder can be created in {what} "
                                   f"({refused}), although its permissions allow it", pointer=ptr,
                          hint="choose a folder on a normal, writable filesystem")


#: the missing folder levels msprobe creates for a dump_path: its
#: ``file_utils.create_directory`` recurses once per missing parent under a
#: ``recursion_depth_decorator(max_depth=16)`` (mindstudio-probe 8.1.2), and
#: raises past it (a hunt's finding: 17 new levels passed the lint and
#: msprobe's PrecisionDebugger refused them)
MAX_NEW_LEVELS = 16


def _cannot_make_folder_in(folder: Path) -> str:
    """Why a folder cannot be created in ``folder`` (the error's text), or
    "" when it can. Permission bits do not tell: root passes every
    ``os.access`` check, yet ``/proc`` or ``/sys`` refuse any new entry and
    a root-squashed NFS mount refuses root. So one empty folder with a new
    name is made and removed at once (``tempfile.mkdtemp``: a name nothing
    else has, so nothing of the user's is touched)."""
    import tempfile

    try:
        made = tempfile.mkdtemp(prefix=".probe-lint-", dir=folder)
    except OSError as err:
        return err.strerror or str(err)
    try:
        os.rmdir(made)
    except OSError:  # pragma: no cover - it was just made, empty
        pass
    return ""


def _running_writer(folder: Path, earlier: list[str]) -> str:
    """Who still writes one of the rank folders of ``earlier``
    (``stepN/<rank folder>`` or ``<rank folder>/stepN`` entries; a live
    marker of :mod:`msprobe_lint.live_writers`), as ``another running job
    (rank: pid 12 on host h, ...)``; "" when no such process runs."""
    from probe_format.layout import RANK_PATTERN

    from ...live_writers import read_writers

    rank_dirs = {part for entry in earlier for part in entry.split("/") if RANK_PATTERN.match(part)}
    live = [w for w in read_writers(str(folder)) if w.live and w.rank_dir in rank_dirs]
    if not live:
        return ""
    who = "another PrecisionDebugger of this process" if live[0].pid == os.getpid() else "another running job"
    return f"{who} ({live[0].rank_dir}: {live[0].describe()})"


def _listed(folder: Path) -> list[str]:
    """The sorted names in ``folder``; [] when it cannot be listed (a file,
    no permission)."""
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _earlier_dump(folder: Path, rank_dir: Optional[str]) -> list[str]:
    """The folders of another run's dump in ``folder`` that this run would
    mix with, wherever `probe report` reads one (docs/report-format.md):
    ``stepN/rank*``, the other nesting ``rank*/stepN``, either under
    msprobe's ``graph/`` or ``pynative/`` split, and a lone ``rank*`` or
    ``stepN`` folder holding dump.json or overflow.json. Names are those of
    :mod:`probe_format.layout` (``step3``, ``rank``, ``rank0``; a
    ``rank_old`` or ``ranking`` folder, or a file, is no dump: a tester's
    finding). Without ``rank_dir`` (a plain lint): any rank's. With it (the
    runtime knows the folder it writes): a single process (``rank``) has no
    sibling workers, so any rank's folder is an earlier run's; a worker of
    a distributed job (``rank<R>``) counts its own folder and the
    single-process ``rank``, never its siblings' ``rank<S>``. (probe_format
    is imported here: a plain lint's start-up loads no ``typing``.)"""
    from probe_format.layout import DUMP_FILE, MODE_DIRS, OVERFLOW_FILE, RANK_PATTERN, STEP_PATTERN

    def counted(rank: str) -> bool:
        if not RANK_PATTERN.match(rank):
            return False
        return rank in (rank_dir, "rank") if rank_dir and rank_dir != "rank" else True

    def folders(where: Path) -> list[str]:
        return [name for name in _listed(where) if (where / name).is_dir()]

    def records(where: Path) -> bool:
        return (where / DUMP_FILE).is_file() or (where / OVERFLOW_FILE).is_file()

    found: list[str] = []
    for prefix in ("", *(f"{mode}/" for mode in MODE_DIRS)):
        base = folder / prefix if prefix else folder
        if prefix and not base.is_dir():
            continue
        entries = folders(base)
        for name in entries:
            inner = folders(base / name)
            if STEP_PATTERN.match(name):
                nested = [f"{prefix}{name}/{rank}" for rank in inner if counted(rank)]
            elif counted(name):
                nested = [f"{prefix}{name}/{step}" for step in inner if STEP_PATTERN.match(step)]
            else:
                continue
            found += nested or ([f"{prefix}{name}"] if records(base / name) else [])
    return found


@rule("PL411", "dump-path-holds-other-run", "warning",
      "(filesystem) dump_path already holds another run's dump (an error in probe run and the runtime gate, "
      "whatever the settings)", filesystem=True)
def holds_other_run(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    A dump_path that already holds step and rank folders of another run
    would be mixed with this run's: some steps overwritten, others left
    over, and `probe report` would read the two runs as one and could name
    the old run's origin as this run's. An error before a guarded launch
    (probe run, probe_runtime's gate), which no --ignore, --select,
    per-file ignore or severity setting turns off there (the debugger
    cannot run safely into it); a warning in a plain `probe lint
    --check-fs`, where the settings apply, and an error everywhere while
    the other run still writes it. A worker of a distributed job counts
    its own rank folder and the single-process `rank` only, not its
    siblings', so the workers of one job do not block each other. Needs
    --check-fs.

    Bad:
        dump_path holding step0/rank0 (or rank0/step0) from yesterday's run
    Good:
        a new, empty dump_path (or the old dump moved away first)
    """
    if not context.check_fs:
        return
    for name, ptr, resolved, value in _fs_targets(config, context):
        if name != "dump_path":
            continue
        try:
            if not resolved.is_dir():
                continue
        except OSError:
            continue
        earlier = _earlier_dump(resolved, context.value("rank_dir"))
        if not earlier:
            continue
        shown = ", ".join(earlier[:4]) + (f" and {len(earlier) - 4} more" if len(earlier) > 4 else "")
        running = _running_writer(resolved, earlier)
        if running:  # its step folders are not an earlier run's: moving them away would split its dump
            yield Finding("PL411", f"dump_path {_shown(resolved, value)} is being written by {running}, which "
                                   f"has written {shown} so far; this run would overwrite and mix with it",
                          pointer=ptr, severity=Severity.ERROR,
                          hint="give this run its own dump_path, or wait until that job ends")
            continue
        yield Finding("PL411", f"dump_path {_shown(resolved, value)} already holds a dump of an earlier run "
                               f"({shown}); this run would overwrite and mix with it", pointer=ptr,
                      severity=Severity.ERROR if context.runtime else None,
                      hint=f"move it away (mv {resolved} {resolved}.old) or choose a new dump_path")


@rule("PL408", "path-unsafe-permissions", "warning",
      "(filesystem) dump_path or config writable by others, or owned by another user", filesystem=True)
def unsafe_permissions(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe refuses files that other users can write or that belong to
    another user: someone else could change what the job reads or writes.
    Ownership is as msprobe checks it (check_path_owner_consistent,
    core/common/file_utils.py): a path not owned by the user who runs the
    job, root's included, unless that user is root. Needs --check-fs.

    Bad:
        chmod 777 /data/dump
    Good:
        chmod 750 /data/dump
    """
    if not context.check_fs:
        return
    uid = os.getuid() if hasattr(os, "getuid") else None
    for name, ptr, resolved, value in _fs_targets(config, context):
        target = _nearest_existing(resolved) if name == "dump_path" else resolved
        try:
            info = target.stat()
        except OSError:
            continue
        label = f"{name} {_shown(resolved, value)}"
        if target != resolved:
            label += f": its nearest existing parent {target}"
        if info.st_mode & stat.S_IWOTH and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
                                                 and target != resolved):
            yield Finding("PL408", f"{label} is writable by other users "
                                   f"(mode {stat.filemode(info.st_mode)})", pointer=ptr,
                          hint=f"chmod o-w {target}")
        if uid not in (None, 0) and target == resolved and info.st_uid != uid:
            yield Finding("PL408", f"{label} belongs to another user (uid {info.st_uid}): msprobe refuses a path "
                                   "that is not yours unless the job runs as root", pointer=ptr,
                          hint="use a path you own")
