"""Finding the step and rank folders under a dump path, as a stream.

A rank folder is a folder holding ``dump.json``, ``overflow.json`` or a
``dump_tensor_data`` folder (the tensors of records whose files were never
written: the reader says so; the folders below one that has no record
file are still searched). Its
step and rank come from the folders above it (``step{N}``, ``rank{R}``,
``rank`` alone when not distributed), in either nesting, below an optional
``graph/`` or ``pynative/`` (msprobe's split of a run with mindspore.jit
parts); the dump path may itself be a step or rank folder. One step and
rank found twice (``step1/rank1`` and ``rank1/step1``) is read once, from
msprobe's nesting, step first; the other is named in the problems. Folders more
than four levels below the dump path are not searched. Soft links to
folders are followed (a step kept on another disk), each folder read once:
a second way to the same folder (a loop, or ``step5`` linked to
``step2``), a link to nothing, and a folder named almost as a step or
rank folder that holds a dump (``step1a``, ``rank-1``) are named in the
problems, never skipped in silence (a fresh user's finding: a linked step was left out and the
report named a later step as the start).
"""
from __future__ import annotations

import errno
import heapq
import os
import time
from collections import deque
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

from probe_format.layout import (DUMP_FILE, MODE_DIRS, OVERFLOW_FILE, TENSOR_DATA_DIR, parse_rank, parse_step, rank_dir,
                                 step_dir)

MAX_DEPTH = 3

#: :func:`dumps_below`: how deep below the dump path it looks, how many
#: folders it lists at most, how many dumps it names, and for how long
BELOW_DEPTH = 6
BELOW_FOLDERS = 2000
BELOW_FOUND = 5
BELOW_SECONDS = 3.0
#: what makes a folder a step and rank folder: a record file, or the tensors the writer puts first
DUMP_NAMES = (DUMP_FILE, OVERFLOW_FILE, TENSOR_DATA_DIR)
#: folders :func:`dumps_below` never enters (a dump's tensors, tools' and version control folders)
BELOW_SKIPPED = frozenset({"dump_tensor_data", "node_modules", "__pycache__", "site-packages"})


class RankFolder(NamedTuple):
    """One step and rank folder.

    ``step`` and ``rank`` are None where the layout has no number (``rank``
    alone: not distributed); ``path`` the folder (a string: the report
    handles tens of thousands); ``files`` the names of the files in it when
    the walk listed them (None: not known, look); ``variant`` the ``graph``
    or ``pynative`` folder above it, if any; ``tensors`` whether it holds a
    ``dump_tensor_data`` folder (None: not known, look).
    """

    step: Optional[int]
    rank: Optional[int]
    path: str
    files: Optional[frozenset] = None
    variant: str = ""
    tensors: Optional[bool] = None


def _key(number: Optional[int]) -> int:
    return -1 if number is None else number


def iter_rank_folders(root: Path, problems: list[tuple[str, str]],
                      seen: Optional[dict[tuple[int, int], str]] = None) -> Iterator[RankFolder]:
    """Every rank folder under ``root``, by step, then rank, then path.

    A generator: it lists one step at a time, so it holds the folders of
    one step, never the whole dump. A folder that cannot be searched or
    listed is appended to ``problems`` as (path, reason) and skipped.
    ``seen``, when given, is filled with the ``(st_dev, st_ino)`` of every
    folder walked (soft links followed) and the path it was reached by.

    Example: ``[f.path for f in iter_rank_folders(Path("dump"), [])]``
    gives ``["dump/step0/rank0", "dump/step0/rank1", "dump/step1/rank0", ...]``.
    """
    named = Path(os.path.abspath(root))  # "." or "../rank1" named by the folders they are (a hunt's finding)
    is_step, step = parse_step(named.name)
    is_rank, rank = parse_rank(named.name)
    if is_rank:
        step = parse_step(named.parent.name)[1]
    elif is_step:
        rank = parse_rank(named.parent.name)[1]  # dump/rank3/step1: rank 3 (a hunt's finding: said "rank")
    else:
        step = None
    # step roots still to walk: (step key, path, step, rank, depth, variant), smallest step first
    pending: list[tuple[int, str, Optional[int], Optional[int], int, str]] = [
        (_key(step), str(root), step, rank, 0, "")]
    if seen is None:
        seen = {}  # (st_dev, st_ino) of each folder walked: the path it was read by
    try:
        info = root.stat()
        seen[(info.st_dev, info.st_ino)] = str(root)
    except OSError:
        pass  # the listing below names the problem
    while pending:
        key, step = pending[0][0], pending[0][2]
        found: list[tuple[int, str, Optional[int], frozenset, str]] = []
        while pending and pending[0][0] == key:  # a step folder found below one of them joins the same step
            _, path, step, rank, depth, variant = heapq.heappop(pending)
            _walk(path, step, rank, depth, variant, found, pending, problems, seen)
        found.sort(key=lambda f: (f[0], f[1]))
        for _, path, rank, files, variant, tensors in _one_per_rank(found, str(root), step, problems):
            yield RankFolder(step, rank, path, files, variant, tensors)


def _rank_first(path: str, root: str) -> bool:
    """``path`` (below ``root``) nests its rank folder above its step
    folder (``rank1/step1``), the other way round from msprobe's layout."""
    parts = (path[len(root):] if path.startswith(root) else path).split(os.sep)
    steps = [i for i, part in enumerate(parts) if parse_step(part)[0]]
    ranks = [i for i, part in enumerate(parts) if parse_rank(part)[0]]
    return bool(steps and ranks) and ranks[0] < steps[0]


def _one_per_rank(found: list, root: str, step: Optional[int], problems: list[tuple[str, str]]) -> list:
    """``found`` (one step's folders, sorted) with one folder per rank and
    ``graph``/``pynative`` variant: of two folders of the same step and rank
    (``step1/rank1`` and ``rank1/step1``, both on disk), msprobe's nesting,
    step first, is read, else the first by path; each other one is appended
    to ``problems`` naming the one read, and left out (a hunt's finding: both
    were read, in silence, as two groups ``step1/rank1``, and the summary
    followed one of them)."""
    kept: dict[tuple, tuple] = {}
    for item in found:
        key = (item[2], item[4])
        if key not in kept or (_rank_first(kept[key][1], root), kept[key][1]) > (_rank_first(item[1], root), item[1]):
            kept[key] = item
    if len(kept) == len(found):
        return found
    for item in found:
        chosen = kept[(item[2], item[4])]
        if chosen is item:
            continue
        place = (f"{item[4]}/" if item[4] else "") + \
            f"{'step?' if step is None else step_dir(step)}/{rank_dir(item[2])}"
        if _rank_first(item[1], root) and not _rank_first(chosen[1], root):
            said = f"the same step and rank ({place}) as {chosen[1]}, nested the other way round: not read " \
                   f"({chosen[1]}, msprobe's step-first nesting, is read; move or remove one of the two)"
        else:
            said = f"the same step and rank ({place}) as {chosen[1]}: not read ({chosen[1]}, the first by name, " \
                   "is read; move or remove one of the two)"
        problems.append((item[1], said))
    return [item for item in found if kept[(item[2], item[4])] is item]


def _walk(folder: str, step: Optional[int], rank: Optional[int], depth: int, variant: str, found: list,
          pending: list, problems: list[tuple[str, str]], seen: dict[tuple[int, int], str]) -> None:
    """Collect the rank folders of one step under ``folder``; a step folder
    below it goes to ``pending`` (walked when its step comes). ``seen``
    maps each folder already taken to the path it was taken by."""
    stack = [(folder, rank, depth, variant)]
    while stack:
        current, rank, depth, variant = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError as err:
            problems.append((current, err.strerror or str(err)))
            continue
        files = frozenset(e.name for e in entries if not _is_dir(e))
        tensors = any(e.name == TENSOR_DATA_DIR and _is_dir(e) for e in entries)
        # a folder with tensors and no record is one too: the writer puts a record's .npy files first, so a disk
        # that filled (or a job killed) before its dump.json left only them (a tester's finding: the report
        # passed over such a folder and said "nothing overflowed")
        if DUMP_FILE in files or OVERFLOW_FILE in files:
            found.append((_key(rank), current, rank, files, variant, tensors))
            continue
        if tensors:  # and the walk goes on below: a stray dump_tensor_data beside the step folders (a review's
            found.append((_key(rank), current, rank, files, variant, tensors))  # finding) hid the whole dump
        misplaced = [e.name for e in entries if e.name in (DUMP_FILE, OVERFLOW_FILE) and _is_dir(e)]
        if misplaced:  # a hunt's finding: rank0/dump.json/ as a folder gave "no dump found ... nothing overflowed"
            for name in misplaced:  # warned; the walk goes on below (a review's finding: it hid the dumps there)
                problems.append((f"{current}{os.sep}{name}", "a directory, not a dump file: not read"))
        if depth > MAX_DEPTH:
            continue
        if not os.access(current, os.X_OK):  # listed, but its folders cannot be entered
            problems.append((current, os.strerror(errno.EACCES)))
            continue
        # folders first, then soft links: a link to a folder listed here too is the second way to it
        children = sorted(((e.is_symlink(), e.name), e) for e in entries if _is_dir(e) or e.is_symlink())
        for (_, name), entry in children:
            child = f"{current}{os.sep}{name}" if not current.endswith(os.sep) else current + name
            is_step, child_step = parse_step(name)
            is_rank, child_rank = parse_rank(name)
            if not (is_step or is_rank or (name in MODE_DIRS and depth == 0)):
                if name[:4].lower() in ("step", "rank") and _holds_a_dump(child):  # step1a, rank-1, Step2 ...
                    problems.append((child, "holds a dump but is not named step{N} or rank{R} (N, R numbers in "
                                            "ASCII digits without leading zeros, as msprobe names them): not "
                                            "read; rename it to be reported"))
                continue
            if not _first_visit(entry, child, seen, problems):
                continue
            if is_step:
                heapq.heappush(pending, (_key(child_step), child, child_step, rank, depth + 1, variant))
            elif is_rank:
                stack.append((child, child_rank, depth + 1, variant))
            elif name in MODE_DIRS and depth == 0:
                stack.append((child, rank, depth + 1, name))


def _is_dir(entry: os.DirEntry) -> bool:
    """A folder, not a soft link to one (from the listing: no stat on most file systems)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _holds_a_dump(folder: str) -> bool:
    """``folder`` or a folder in it holds dump.json, overflow.json or
    dump_tensor_data (at most one listing below it; a folder that cannot be
    listed holds none)."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return False
    names = {e.name for e in entries}
    if any(name in names for name in DUMP_NAMES):
        return True
    return any(os.path.exists(os.path.join(e.path, name)) for e in entries if _is_dir(e) for name in DUMP_NAMES)


def _first_visit(entry: os.DirEntry, path: str, seen: dict[tuple[int, int], str],
                 problems: list[tuple[str, str]]) -> bool:
    """Whether to walk ``path``: a folder, or a soft link to one, not taken
    before by another path. A link to nothing (or to a file), and a second
    path to a folder already taken, are appended to ``problems``."""
    try:
        info = entry.stat()  # follows a soft link
    except OSError as err:
        problems.append((path, f"a soft link to {os.readlink(path) if entry.is_symlink() else path} that "
                               f"cannot be followed ({err.strerror or err}): not read"))
        return False
    if not entry.is_dir():
        if entry.is_symlink():
            problems.append((path, f"a soft link to {os.readlink(path)}, not a folder: not read"))
        return False
    first = seen.setdefault((info.st_dev, info.st_ino), path)
    if first != path:
        problems.append((path, f"the same folder as {first} (a soft link): not read twice"))
        return False
    return True


def dumps_below(root: str) -> tuple[list[str], bool]:
    """The dump paths below ``root`` when the report found no dump at
    ``root`` itself: (the folders to give ``probe report``, in the order
    found, at most ``BELOW_FOUND``; whether the search was complete).

    A folder holding ``dump.json``, ``overflow.json`` or ``dump_tensor_data`` is a dump; the
    path named is the folder above its ``step``/``rank``/``graph``/
    ``pynative`` folders (``root/run1`` for ``root/run1/step1/rank0``),
    never ``root`` itself. The search is breadth first, by name, bounded:
    ``BELOW_DEPTH`` levels, ``BELOW_FOLDERS`` folders listed,
    ``BELOW_SECONDS`` seconds; hidden folders and ``BELOW_SKIPPED`` are not
    entered, a folder is entered once however many soft links lead to it
    (a link loop ends), a soft link to ``root`` or a folder above it is not
    followed (it would search beside ``root``), and folders that cannot be listed are passed over
    (a hunt's finding: a dump one level down, ``probe report parent`` for
    ``parent/run1/step1/rank0``, said only "no dump found ... nothing
    overflowed")."""
    deadline = time.monotonic() + BELOW_SECONDS
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    try:
        info = os.stat(root)
        seen.add((info.st_dev, info.st_ino))
    except OSError:
        return found, True
    real_root = os.path.realpath(root)
    queue = deque([(root, 0)])
    listed = 0
    while queue:
        folder, depth = queue.popleft()
        if any(folder.startswith(dump + os.sep) for dump in found):
            continue  # inside a dump already named
        if listed >= BELOW_FOLDERS or len(found) >= BELOW_FOUND or time.monotonic() > deadline:
            return found, False
        listed += 1
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        if depth > 0 and any(e.name in DUMP_NAMES for e in entries):
            dump = _dump_root(folder, root)
            if dump not in found:
                found.append(dump)
            continue
        if depth >= BELOW_DEPTH:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.name in BELOW_SKIPPED:
                continue
            try:
                if not entry.is_dir():  # follows a soft link
                    continue
                info = entry.stat()
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            child = os.path.join(folder, entry.name)
            if entry.is_symlink() and _above(child, real_root):  # `..`: it would search beside root, not below
                continue
            queue.append((child, depth + 1))
    return found, True


def _above(link: str, real_root: str) -> bool:
    """The soft link ``link`` leads to ``real_root`` or a folder above it."""
    target = os.path.realpath(link)
    try:
        return os.path.commonpath([target, real_root]) == target
    except ValueError:  # on different drives (Windows)
        return False


def _dump_root(folder: str, root: str) -> str:
    """The folder above ``folder``'s step, rank and graph/pynative folders,
    below ``root``: what ``probe report`` reads ``folder`` from."""
    while True:
        parent, name = os.path.split(folder)
        if os.path.normpath(parent) == os.path.normpath(root) or not parent or \
                not (parse_step(name)[0] or parse_rank(name)[0] or name in MODE_DIRS):
            return folder
        folder = parent
