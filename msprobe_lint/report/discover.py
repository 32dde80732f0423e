"""Finding the step and rank folders under a dump path, as a stream.

A rank folder is a folder holding ``dump.json`` or ``overflow.json``. Its
step and rank come from the folders above it (``step{N}``, ``rank{R}``,
``rank`` alone when not distributed), in either nesting, below an optional
``graph/`` or ``pynative/`` (msprobe's split of a run with mindspore.jit
parts); the dump path may itself be a step or rank folder. Folders more
than four levels below the dump path are not searched.
"""
from __future__ import annotations

import heapq
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

from .dumpformat import DUMP_FILE, MODE_DIRS, OVERFLOW_FILE, parse_rank, parse_step

MAX_DEPTH = 3


class RankFolder(NamedTuple):
    """One step and rank folder: ``step`` and ``rank`` are None where the
    layout has no number (``rank`` alone: not distributed)."""

    step: Optional[int]
    rank: Optional[int]
    path: Path


def _key(number: Optional[int]) -> int:
    return -1 if number is None else number


def iter_rank_folders(root: Path, problems: list[tuple[str, str]]) -> Iterator[RankFolder]:
    """Every rank folder under ``root``, by step, then rank, then path.

    A generator: it lists one step at a time, so it holds the folders of
    one step, never the whole dump. A folder that cannot be searched or
    listed is appended to ``problems`` as (path, reason) and skipped.

    Example: ``[f.path.name for f in iter_rank_folders(Path("dump"), [])]``
    gives ``["rank0", "rank1", "rank0", ...]`` for ``dump/step0/rank0`` ...
    """
    is_step, step = parse_step(root.name)
    is_rank, rank = parse_rank(root.name)
    if is_rank:
        step = parse_step(root.parent.name)[1]
    elif not is_step:
        step = None
    # step roots still to walk: (step key, path, step, rank, depth), smallest step first
    pending: list[tuple[int, str, Optional[int], Optional[int], int]] = [(_key(step), str(root), step, rank, 0)]
    while pending:
        key = pending[0][0]
        roots = []
        while pending and pending[0][0] == key:
            roots.append(heapq.heappop(pending))
        found: list[RankFolder] = []
        for _, path, step, rank, depth in roots:
            _walk(Path(path), step, rank, depth, found, pending, problems)
        found.sort(key=lambda f: (_key(f.rank), str(f.path)))
        yield from found


def _walk(folder: Path, step: Optional[int], rank: Optional[int], depth: int, found: list[RankFolder],
          pending: list, problems: list[tuple[str, str]]) -> None:
    """Collect the rank folders of one step under ``folder``; a step folder
    below it goes to ``pending`` (walked when its step comes)."""
    stack = [(folder, rank, depth)]
    while stack:
        current, rank, depth = stack.pop()
        try:
            if (current / DUMP_FILE).exists() or (current / OVERFLOW_FILE).exists():
                found.append(RankFolder(step, rank, current))
                continue
            if depth > MAX_DEPTH:
                continue
            children = sorted(p for p in current.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError as err:
            problems.append((str(current), err.strerror or str(err)))
            continue
        for child in reversed(children):
            is_step, child_step = parse_step(child.name)
            is_rank, child_rank = parse_rank(child.name)
            if is_step:
                heapq.heappush(pending, (_key(child_step), str(child), child_step, rank, depth + 1))
            elif is_rank:
                stack.append((child, child_rank, depth + 1))
            elif child.name in MODE_DIRS and depth == 0:
                stack.append((child, rank, depth + 1))
