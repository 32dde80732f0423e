"""``[tool.probe-lint]`` in the nearest pyproject.toml (or --config-file).

Keys: ``select``, ``ignore``, ``extend-select`` (codes or prefixes),
``severity`` (a table code -> error/warning/info), ``per-file-ignores``
(glob -> codes; a glob may end in ``#/json/pointer`` to scope the ignore to
part of a file), and the default context: ``framework``, ``mode``,
``jit-level``, ``mindspore-version``, ``world-size``, ``msprobe-version``.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from .context import Fact, normalise
from .diagnostic import Severity


class SettingsError(ValueError):
    """A malformed ``[tool.probe-lint]`` table (exit status 2)."""


@dataclass
class ProjectSettings:
    """The parsed ``[tool.probe-lint]`` table of ``path``."""

    path: Path
    facts: dict[str, Fact] = field(default_factory=dict)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    per_file_ignores: tuple[tuple[str, Optional[str], tuple[str, ...]], ...] = ()

    def selection_for(self, config_path: str, base: Any) -> Any:
        """``base`` (an engine Selection) plus the per-file ignores whose
        glob matches ``config_path`` (relative to the pyproject folder)."""
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
        return replace(base, ignore=tuple(ignore), pointer_ignores=tuple(pointer_ignores))


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as err:
        raise SettingsError(f"{path}: cannot be read ({err.strerror or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{path}: not valid TOML: {err}") from None


def _code_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{path}: [tool.probe-lint] {key} must be a list of rule codes, e.g. [\"PL2\"]")
    codes = tuple(v.strip().upper() for v in value)
    for code in codes:
        if code != "ALL" and not (code.startswith("PL") and code[2:].isdigit() and 2 < len(code) <= 5):
            raise SettingsError(f"{path}: [tool.probe-lint] {key}: {code!r} is not a rule code or prefix")
    return codes


CONTEXT_KEYS = {"framework": "framework", "mode": "mode", "jit-level": "jit_level", "jit_level": "jit_level",
                "mindspore-version": "mindspore_version", "mindspore_version": "mindspore_version",
                "world-size": "world_size", "world_size": "world_size",
                "msprobe-version": "msprobe_version", "msprobe_version": "msprobe_version"}
KNOWN = set(CONTEXT_KEYS) | {"select", "ignore", "extend-select", "extend_select", "severity",
                             "per-file-ignores", "per_file_ignores"}


def load(path: Path) -> Optional[ProjectSettings]:
    """Parse ``[tool.probe-lint]`` of ``path``; None when the table is absent.

    Raises:
        SettingsError: unreadable file, bad TOML, unknown keys or bad values.
    """
    table = _toml(path).get("tool", {}).get("probe-lint")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.probe-lint] must be a table")
    unknown = sorted(set(table) - KNOWN)
    if unknown:
        raise SettingsError(f"{path}: [tool.probe-lint] has unknown key(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(KNOWN))}")
    settings = ProjectSettings(path=path)
    for key, name in CONTEXT_KEYS.items():
        if key in table:
            try:
                settings.facts[name] = normalise(name, table[key], f"{path.name} [tool.probe-lint]")
            except ValueError as err:
                raise SettingsError(f"{path}: [tool.probe-lint] {key}: {err}") from None
    settings.select = _code_list(path, "select", table.get("select", []))
    settings.ignore = _code_list(path, "ignore", table.get("ignore", []))
    settings.extend_select = _code_list(path, "extend-select",
                                        table.get("extend-select", table.get("extend_select", [])))
    severity = table.get("severity", {})
    if not isinstance(severity, dict):
        raise SettingsError(f"{path}: [tool.probe-lint] severity must be a table of code = \"error\"|\"warning\"|\"info\"")
    for code, level in severity.items():
        _code_list(path, "severity", [code])
        try:
            settings.severity[code.upper()] = Severity(str(level).lower())
        except ValueError:
            raise SettingsError(f"{path}: [tool.probe-lint] severity.{code} must be error, warning or info, "
                                f"not {level!r}") from None
    per_file = table.get("per-file-ignores", table.get("per_file_ignores", {}))
    if not isinstance(per_file, dict):
        raise SettingsError(f"{path}: [tool.probe-lint] per-file-ignores must be a table of glob = [codes]")
    entries = []
    for glob, codes in per_file.items():
        glob, sep, ptr = glob.partition("#")
        entries.append((glob, ptr if sep else None, _code_list(path, f"per-file-ignores.{glob}", codes)))
    settings.per_file_ignores = tuple(entries)
    return settings


def find(start: Optional[str] = None) -> Optional[Path]:
    """The nearest pyproject.toml at or above ``start`` (a file or folder;
    default the current folder)."""
    here = Path(start).resolve() if start else Path.cwd()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def find_and_load(config_file: Optional[str], *, start: Optional[str] = None) -> Optional[ProjectSettings]:
    """``--config-file`` when given (must exist), else the nearest
    pyproject.toml with a ``[tool.probe-lint]`` table.

    Raises:
        SettingsError: see :func:`load`, or a missing --config-file.
    """
    if config_file:
        path = Path(config_file)
        if not path.is_file():
            raise SettingsError(f"--config-file {config_file}: no such file")
        return load(path)
    found = find(start)
    return load(found) if found else None
