"""``[tool.probe-lint]`` in the nearest pyproject.toml (or --config-file).

Keys: ``select``, ``ignore``, ``extend-select`` (codes or prefixes),
``severity`` (a table code -> error/warning/info), ``per-file-ignores``
(glob -> codes; a glob may end in ``#/json/pointer`` to scope the ignore to
part of a file), the default context: ``framework``, ``mode``,
``jit-level``, ``mindspore-version``, ``world-size``, ``msprobe-version``,
the training script to analyse (``script``, relative to the pyproject.toml's
folder; ``--script`` replaces it), and which files a folder argument yields (discovery.py): ``include`` /
``extend-include`` and ``exclude`` / ``extend-exclude`` (lists of
.gitignore-style patterns, relative to the pyproject.toml's folder).
"""
from __future__ import annotations

import os

from .context import Fact, normalise
from .diagnostic import Severity
from .selection import SelectionError, check_code, known_codes

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:  # pathlib is imported once a pyproject.toml is found
    from pathlib import Path
    from typing import Any, Optional


class SettingsError(ValueError):
    """A malformed ``[tool.probe-lint]`` table (exit status 2)."""


class ProjectSettings:
    """The parsed ``[tool.probe-lint]`` table of ``path``.

    Attributes:
        path: the pyproject.toml (or --config-file) it was read from.
        facts: the default context (``mode``, ``jit_level``...).
        select, ignore, extend_select: code prefixes.
        severity: code -> Severity (prefix keys expanded to codes).
        per_file_ignores: (glob, JSON pointer or None, code prefixes).
        include, exclude: patterns replacing the defaults (None: the
            default, ``*.json`` and hidden entries, virtual environments...).
        extend_include, extend_exclude: patterns added to them.
        script: the training script to analyse (an absolute path), or None.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.facts: dict[str, Fact] = {}
        self.select: tuple[str, ...] = ()
        self.ignore: tuple[str, ...] = ()
        self.extend_select: tuple[str, ...] = ()
        self.severity: dict[str, Severity] = {}
        self.per_file_ignores: tuple[tuple[str, Optional[str], tuple[str, ...]], ...] = ()
        self.include: Optional[tuple[str, ...]] = None
        self.extend_include: tuple[str, ...] = ()
        self.exclude: Optional[tuple[str, ...]] = None
        self.extend_exclude: tuple[str, ...] = ()
        self.script: Optional[str] = None

    def __repr__(self) -> str:
        return f"ProjectSettings({str(self.path)!r})"

    def selection_for(self, config_path: str, base: Any) -> Any:
        """``base`` (a lint.selection.Selection) plus the per-file ignores whose
        glob matches ``config_path`` (relative to the pyproject folder)."""
        import fnmatch

        try:
            relative = os.path.relpath(os.path.abspath(config_path), self.path.parent)
        except ValueError:
            relative = config_path
        ignore = list(base.ignore)
        pointer_ignores = list(base.pointer_ignores)
        for glob, ptr, codes in self.per_file_ignores:
            if fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(config_path, glob):
                if ptr is None:
                    ignore.extend(codes)
                else:
                    pointer_ignores.append((ptr, codes))
        return base._replace(ignore=tuple(ignore), pointer_ignores=tuple(pointer_ignores))


def _read(path: Path) -> bytes:
    """The bytes of a settings file, read as a config is
    (``project.files.read_bytes``: a regular file of at most 10 MiB; a
    named pipe or a device is refused unopened).

    Raises:
        SettingsError: it cannot be read, and why.
    """
    from ..project.files import read_bytes

    raw, reason = read_bytes(str(path), "a settings file")
    if raw is None:
        raise SettingsError(f"{path}: {reason}")
    return raw


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    raw = _read(path)
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{path}: not valid TOML: {err}") from None
    except UnicodeDecodeError as err:
        raise SettingsError(f"{path}: not UTF-8 (byte 0x{err.object[err.start]:02x} at offset {err.start}); "
                            "TOML files are UTF-8") from None


def _code_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{path}: [tool.probe-lint] {key} must be a list of rule codes, e.g. [\"PL2\"]")
    try:
        return tuple(check_code(v) for v in value)
    except SelectionError as err:
        raise SettingsError(f"{path}: [tool.probe-lint] {key}: {err}") from None


CONTEXT_KEYS = {"framework": "framework", "mode": "mode", "jit-level": "jit_level", "jit_level": "jit_level",
                "mindspore-version": "mindspore_version", "mindspore_version": "mindspore_version",
                "world-size": "world_size", "world_size": "world_size",
                "msprobe-version": "msprobe_version", "msprobe_version": "msprobe_version"}
PATTERN_KEYS = {"include": "include", "extend-include": "extend_include", "extend_include": "extend_include",
                "exclude": "exclude", "extend-exclude": "extend_exclude", "extend_exclude": "extend_exclude"}
KNOWN = set(CONTEXT_KEYS) | set(PATTERN_KEYS) | {"select", "ignore", "extend-select", "extend_select", "severity",
                                                 "per-file-ignores", "per_file_ignores", "script"}


def _pattern_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    """A list of .gitignore-style patterns (a lone string is taken as one)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SettingsError(f"{path}: [tool.probe-lint] {key} must be a list of non-empty file patterns, "
                            f"e.g. [\"build/\", \"*.tmp.json\"]")
    return tuple(v.strip() for v in value)


def _unquoted_version(path: Path, key: str, name: str, value: Any) -> str:
    """Why a version that is not a TOML string is refused: ``2.10``
    unquoted is the float 2.1 (a false PL203 for MindSpore 2.10), so only a
    string is taken; the message shows the quoted form, as written in the
    file when it can be found there."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        import re  # only for a mistake: not on every start-up

        written = str(value)
        try:
            found = re.search(rf"^[ \t]*([\"']?){re.escape(key)}\1[ \t]*=[ \t]*([0-9][0-9._]*)",
                              _read(path).decode("utf-8"), re.M)
        except (SettingsError, ValueError):
            found = None
        if found:
            written = found.group(2)
        lost = ", losing digits" if written.replace("_", "") != str(value) else ""
        return (f"{name} must be a quoted string: write {key} = \"{written}\" (unquoted, TOML reads {written} as "
                f"the number {value!r}{lost})")
    example = "2.6.0" if name == "mindspore_version" else "8.3"
    return f"{name} must be a quoted version string such as \"{example}\", not {value!r}"


def load(path: Path) -> Optional[ProjectSettings]:
    """Parse ``[tool.probe-lint]`` of ``path``; None when the table is absent.

    Every problem of the table is reported at once (one line each, an
    unknown key with the closest known one), as a lint reports every
    finding of a config.

    Raises:
        SettingsError: unreadable file, bad TOML, unknown keys or bad values.
    """
    tool = _toml(path).get("tool", {})
    table = tool.get("probe-lint") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.probe-lint] must be a table")
    problems: list[str] = []

    def check(step: Any, *args: Any) -> Any:
        """``step(*args)``, or None with its SettingsError kept."""
        try:
            return step(*args)
        except SettingsError as err:
            problems.append(str(err))
            return None

    for key in sorted(set(table) - KNOWN):
        from difflib import get_close_matches  # only for a mistake: not on every start-up

        close = get_close_matches(key.replace("_", "-"), sorted(k for k in KNOWN if "_" not in k), n=1)
        problems.append(f"{path}: [tool.probe-lint] unknown key {key!r}"
                        + (f"; did you mean {close[0]!r}?" if close else
                           f"; known: {', '.join(sorted(k for k in KNOWN if '_' not in k))}"))
    settings = ProjectSettings(path=path)
    for key, name in CONTEXT_KEYS.items():
        if key in table and name in ("mindspore_version", "msprobe_version") and not isinstance(table[key], str):
            problems.append(f"{path}: [tool.probe-lint] {key}: {_unquoted_version(path, key, name, table[key])}")
        elif key in table:
            try:
                settings.facts[name] = normalise(name, table[key], f"{path.name} [tool.probe-lint]")
            except ValueError as err:
                problems.append(f"{path}: [tool.probe-lint] {key}: {err}")
    settings.select = check(_code_list, path, "select", table.get("select", [])) or ()
    settings.ignore = check(_code_list, path, "ignore", table.get("ignore", [])) or ()
    settings.extend_select = check(_code_list, path, "extend-select",
                                   table.get("extend-select", table.get("extend_select", []))) or ()
    check(_severity, path, table.get("severity", {}), settings)
    settings.per_file_ignores = check(_per_file_ignores, path,
                                      table.get("per-file-ignores", table.get("per_file_ignores", {}))) or ()
    for key, name in PATTERN_KEYS.items():
        if key in table:
            setattr(settings, name, check(_pattern_list, path, key, table[key]))
    if "script" in table:
        script = table["script"]
        if not isinstance(script, str) or not script.strip():
            problems.append(f"{path}: [tool.probe-lint] script must be the path of the training script, "
                            "e.g. \"train.py\"")
        else:
            settings.script = os.path.join(os.path.dirname(os.path.abspath(path)), script.strip())
    if len(problems) == 1:
        raise SettingsError(problems[0])
    if problems:
        raise SettingsError(f"{path}: {len(problems)} problems in [tool.probe-lint]:\n"
                            + "\n".join("  " + p.removeprefix(f"{path}: [tool.probe-lint] ") for p in problems))
    return settings


def _severity(path: Path, severity: Any, settings: ProjectSettings) -> None:
    """Fill ``settings.severity`` from the ``severity`` table.

    Raises:
        SettingsError: not a table, a bad code or grade.
    """
    if not isinstance(severity, dict):
        raise SettingsError(f"{path}: [tool.probe-lint] severity must be a table of "
                            'code = "error"|"warning"|"info"')
    # A prefix key ("PL2" = "warning") re-grades every code it matches; an
    # exact code wins over a prefix whatever the order they are written in.
    for code, level in sorted(severity.items(), key=lambda item: len(item[0].strip())):
        (prefix,) = _code_list(path, f"severity.{code}", [code])
        if not isinstance(level, str):
            raise SettingsError(f"{path}: [tool.probe-lint] severity.{code} must be \"error\", \"warning\" or "
                                f"\"info\", not {level!r}")
        try:
            grade = Severity(level.strip().lower())
        except ValueError:
            raise SettingsError(f"{path}: [tool.probe-lint] severity.{code} must be error, warning or info, "
                                f"not {level!r}") from None
        for known in known_codes(prefix):
            settings.severity[known] = grade


def _per_file_ignores(path: Path, per_file: Any) -> tuple[tuple[str, Optional[str], tuple[str, ...]], ...]:
    """The ``per-file-ignores`` table as (glob, JSON pointer or None, codes).

    Raises:
        SettingsError: not a table, a key without a glob or with a bad
            pointer, bad codes.
    """
    if not isinstance(per_file, dict):
        raise SettingsError(f"{path}: [tool.probe-lint] per-file-ignores must be a table of glob = [codes]")
    entries = []
    for key, codes in per_file.items():
        glob, sep, ptr = key.partition("#")
        if not glob:
            raise SettingsError(f"{path}: [tool.probe-lint] per-file-ignores: {key!r} has no file glob before '#'")
        if sep and ptr and not ptr.startswith("/"):
            raise SettingsError(f"{path}: [tool.probe-lint] per-file-ignores: {key!r}: the part after '#' must be "
                                "a JSON pointer such as #/overflow_check")
        entries.append((glob, ptr or None, _code_list(path, f"per-file-ignores.{key!r}", codes)))
    return tuple(entries)


def find(start: Optional[str] = None) -> Optional[Path]:
    """The nearest pyproject.toml at or above ``start`` (a file or folder;
    default the current folder)."""
    found = _nearest(start)
    if found is None:
        return None
    from pathlib import Path

    return Path(found)


def _nearest(start: Optional[str]) -> Optional[str]:
    """:func:`find`'s answer as a string (no pathlib: start-up)."""
    here = os.path.realpath(start) if start else os.getcwd()
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _may_hold_the_table(path: str) -> bool:
    """False when the file at ``path`` cannot hold a ``[tool.probe-lint]``
    table: its bytes never spell ``probe-lint`` (nor a TOML escape that
    could). Most projects' pyproject.toml has no such table, and parsing
    it (tomllib, about 6 ms to import) is then skipped. True when it
    cannot be read or is not UTF-8 (load reports that)."""
    from ..project.files import read_bytes

    raw, _ = read_bytes(path, "a settings file")
    if raw is None:
        return True  # load says why
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True  # not UTF-8, as TOML must be: load says so
    return b"probe-lint" in raw or b"\\u" in raw or b"\\U" in raw


def find_and_load(config_file: Optional[str], *, start: Optional[str] = None) -> Optional[ProjectSettings]:
    """``--config-file`` when given (must exist), else the nearest
    pyproject.toml with a ``[tool.probe-lint]`` table.

    Raises:
        SettingsError: see :func:`load`, or a missing --config-file.
    """
    if config_file:
        from pathlib import Path

        from ..project.files import not_regular

        path = Path(config_file)
        refused = not_regular(config_file)
        if refused:
            raise SettingsError(f"--config-file {config_file}: "
                                + ("no such file" if refused == "file not found" else refused))
        settings = load(path)
        if settings is None:  # a typo'd file would otherwise change nothing, silently
            raise SettingsError(f"--config-file {config_file}: it has no [tool.probe-lint] table")
        return settings
    found = _nearest(start)
    if found is None or not _may_hold_the_table(found):
        return None
    from pathlib import Path

    return load(Path(found))
