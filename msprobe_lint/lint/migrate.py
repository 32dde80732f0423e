"""``probe migrate``: rewrite the keys and task names one mindstudio-probe
release line renamed, for another line, changing nothing else.

Only exact key and value tokens are replaced, at the positions the parser
recorded, so key order, indentation, spacing and everything else in the
file stay as they were. The rewrite is shown as a unified diff; the file is
written only when asked (``--write``), atomically, keeping its mode.
Renames are data (profiles.RENAMES): run_ut <-> acc_check everywhere;
overflow_check <-> diff_check and overflow_nums <-> diff_nums only for
PyTorch, since diff_check is PyTorch's (MindSpore's overflow_check is kept
by 26.0 for static graph L2 only and gone from 26.1).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from .diagnostic import json_text
from .fixes.edits import removal, unified_diff
from .loader import load, write_atomic
from .positions import pointer
from .profiles import RENAMES, for_version, line


class MigrationError(ValueError):
    """The config cannot be read or parsed, or the target is not a
    version (exit status 2)."""


@dataclass
class Migration:
    """The result of planning a migration.

    Attributes:
        path: the config.
        before, after: the file's text before and after.
        changes: one line per rename applied, e.g. ``/run_ut -> acc_check``.
        notes: what could not be migrated, and why; what was dropped (an
            empty section or key the renamed one replaces).
        conflicts: renames into a key the file already has, where both
            hold values: one of them would be lost (json.load keeps the
            last of two equal keys), so nothing is migrated (``after`` is
            ``before``) and ``probe migrate`` exits 1.
    """

    path: str
    before: str
    after: str
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def diff(self) -> str:
        """Unified diff of the rewrite ("" when nothing changes)."""
        return unified_diff(self.before, self.after, self.path, f"{self.path} (migrated)")


def plan(path: str, to: str, *, framework: Optional[str] = None) -> Migration:
    """Plan the migration of ``path`` to release ``to`` (e.g. ``"26.0"``,
    ``"8.3"``).

    Raises:
        MigrationError: unreadable or invalid JSON, a non-object root, or
            ``to`` not a version.
    """
    from .context import normalise

    try:
        profile = for_version(normalise("msprobe_version", to, "--to").value)
    except ValueError as err:
        raise MigrationError(str(err)) from None
    target = line(profile)
    doc = load(path)
    if doc.fatal:
        first = doc.findings[0]
        raise MigrationError(f"{path}: {first.message} ({first.code}); fix it before migrating")
    data = doc.data
    edits: list[tuple[int, int, str, str]] = []  # start, end, new text, description ("" for a removal)

    def rename(ptr: str, at: str, new: str) -> None:
        where = doc.positions.offsets(ptr, at)
        if where is not None:
            edits.append((where[0], where[1], json_text(new), f"{ptr} ({at}) -> {new}"))

    def rename_member(obj: dict, parent: tuple, frm: str, to_name: str) -> None:
        """Rename the member ``frm`` of ``obj`` (at ``parent``) to
        ``to_name``, never making a duplicate key: when ``to_name`` is there
        already, the empty one of the two (``{}``) is dropped; when both
        hold values, the rename is refused (a conflict)."""
        if to_name not in obj:
            rename(pointer(*parent, frm), "key", to_name)
            return
        place = f" in the {parent[0]} section" if parent else ""
        if obj[to_name] == {} or obj[frm] == {}:
            drop = to_name if obj[to_name] == {} else frm
            span = removal(doc, pointer(*parent, drop))
            if span is None:
                migration.conflicts.append(f"{frm!r}{place} cannot be renamed to {to_name!r}: the file already "
                                           f"has {to_name!r}, and its position is unknown")
                return
            edits.append((span[0], span[1], "", ""))
            if drop == to_name:
                rename(pointer(*parent, frm), "key", to_name)
                migration.notes.append(f"dropped the empty {to_name!r}{place}: {frm!r} is renamed to it")
            else:
                migration.notes.append(f"dropped the empty {frm!r}{place}: the file already has {to_name!r}")
            return
        migration.conflicts.append(f"{frm!r}{place} cannot be renamed to {to_name!r}: the file already has "
                                   f"{to_name!r}, and both hold values (json.load would keep only the last); "
                                   f"merge them by hand, then migrate again")

    migration = Migration(path, doc.text, doc.text)
    source_line = "8" if target == "26" else "26"
    for from_line, to_line, where, old, new, only_for in RENAMES:
        if (from_line, to_line) == (source_line, target):
            frm, to_name = old, new
        elif (to_line, from_line) == (source_line, target):
            frm, to_name = new, old
        else:
            continue
        # The section a key lives in, as it is named in the file.
        section = where if target == "26" or where == "task" else _section_in_26(where)
        if where == "task":
            touched = data.get("task") == frm or frm in data
        else:
            touched = isinstance(data.get(section), dict) and frm in data[section]
        if not touched:
            continue
        if only_for and framework != only_for:
            if where == "task":  # one note for the task; its keys follow it
                migration.notes.append(_note(frm, to_name, target, only_for))
            continue
        if where == "task":
            if data.get("task") == frm:
                rename("/task", "value", to_name)
            if frm in data:
                rename_member(data, (), frm, to_name)
        else:
            rename_member(data[section], (section,), frm, to_name)
    if migration.conflicts:  # nothing half done: the file stays as it is
        return migration
    text = doc.text
    for start, end, new_text, description in sorted(edits, reverse=True):
        text = text[:start] + new_text + text[end:]
        if description:
            migration.changes.append(description)
    migration.after = text
    migration.changes.reverse()
    migration.notes.extend(_left_over(text, profile))
    return migration


def _left_over(text: str, profile: str) -> list[str]:
    """Notes on what the target release has no equivalent for, after the
    renames (top-level keys and sections it does not know, an unknown
    task)."""
    from .profiles import PROFILES
    from .schema.files import key_index

    try:
        data = json.loads(text)
    except ValueError:
        return []
    label = PROFILES[profile].label
    notes = []
    known = key_index(profile)[""]
    for key in data:
        if key not in known:
            notes.append(f"{key!r} has no equivalent in {label}: remove it by hand, or keep the config's "
                         "current target")
    task = data.get("task")
    if isinstance(task, str) and task not in PROFILES[profile].tasks and task not in data:
        notes.append(f"task {task!r} has no equivalent in {label}")
    return notes


def _section_in_26(section: str) -> str:
    """The 26.x name of an 8.x task section (itself when not renamed)."""
    for _, _, where, old, new, _ in RENAMES:
        if where == "task" and old == section:
            return new
    return section


def _note(frm: str, to_name: str, target: str, only_for: str) -> str:
    if target == "26":
        return (f"{frm!r} is not renamed to {to_name!r}: that rename is for {only_for} only "
                "(mindstudio-probe 26.1 and later have no MindSpore overflow_check, 26.0 only for static graph L2; "
                f"keep an 8.x target and run it with probe_runtime, or pass --framework {only_for})")
    return f"{frm!r} is not renamed to {to_name!r}: that rename is for {only_for} only (pass --framework {only_for})"


def write(migration: Migration) -> None:
    """Write ``migration.after`` over the config atomically, keeping the
    file's mode, owner, group and extended attributes (see
    :func:`loader.write_atomic`).

    Raises:
        OSError: the folder is not writable, or the config is a soft link,
            has other hard links, is read-only, or its owner or an extended
            attribute cannot be kept.
    """
    write_atomic(migration.path, migration.after)
