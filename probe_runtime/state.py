"""Step, rank and overflow_nums bookkeeping, and per-API call counters.

Pure Python, no MindSpore: one :class:`RunState` per debugger, shared by
the debugger, the checker and the writer's folder names.

Example::

    state = RunState(steps=expand_ids([0, "2-3"]), overflow_nums=1)
    state.selected()                   # step 0: True
    state.next_index("Functional.exp") # 0, then 1, ... until next_step()
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

#: environment variables a launcher sets with this process's rank, first wins.
RANK_VARIABLES = ("RANK_ID", "RANK")


def expand_ids(items: Optional[Iterable[Any]]) -> Optional[frozenset[int]]:
    """Expand msprobe's ``rank``/``step`` list (ints and ``"a-b"`` strings)
    to a set of ints; None (all) for an empty or absent list.

    Raises:
        ValueError: for an item that is neither (the lint gate reports
            those first as PL301, so this only guards direct use).
    """
    if not items:
        return None
    out: set[int] = set()
    for item in items:
        if isinstance(item, bool):
            raise ValueError(f"bad rank/step item {item!r}")
        if isinstance(item, int):
            out.add(item)
        elif isinstance(item, str) and "-" in item:
            low, high = (int(part) for part in item.split("-", 1))
            out.update(range(low, high + 1))
        elif isinstance(item, str) and item.strip().isdigit():
            out.add(int(item))
        else:
            raise ValueError(f"bad rank/step item {item!r}")
    return frozenset(out)


def live_rank(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """This process's rank: from ``mindspore.communication`` when it is
    initialised, else from the launcher's environment (``RANK_ID``,
    ``RANK``), else None (a single process: msprobe's folder ``rank``)."""
    return live_rank_source(environ)[0]


def live_rank_source(environ: Optional[Mapping[str, str]] = None) -> tuple[Optional[int], str]:
    """:func:`live_rank` and where it came from (for the lint's context)."""
    try:
        from mindspore.communication.management import GlobalComm, get_rank

        if GlobalComm.INITED:
            return int(get_rank()), "mindspore.communication get_rank()"
    except Exception:
        pass
    environ = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        value = environ.get(name, "")
        if value.strip().isdigit():
            return int(value), f"environment {name}"
    return None, "single process (no RANK_ID/RANK, communication not initialised)"


def rank_dir_name(rank: Optional[int]) -> str:
    """``rank`` for a single process, ``rank<R>`` otherwise (the writer's folder)."""
    return "rank" if rank is None else f"rank{rank}"


@dataclass
class RunState:
    """What the current step is and whether it, and this rank, are checked.

    Attributes:
        steps: selected steps (None = all), from the config's ``step``.
        ranks: selected ranks (None = all), from the config's ``rank``.
        rank: this process's rank, None when not distributed.
        overflow_nums: records allowed before detection stops; -1 = no limit.
        step: the current step number (``step()`` adds one).
        found: records written so far, over all steps.
        counters: call index per API name in the current step (msprobe's
            ``Functional.exp.<index>``); reset by :meth:`next_step`.
        collective_counters: per-group call index of collective calls in
            the current step (a group name, or for Send/Receive the group
            and the two ranks); reset by :meth:`next_step`.
    """

    steps: Optional[frozenset[int]] = None
    ranks: Optional[frozenset[int]] = None
    rank: Optional[int] = None
    overflow_nums: int = 1
    step: int = 0
    found: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    collective_counters: dict[Any, int] = field(default_factory=dict)

    @property
    def rank_dir(self) -> str:
        """``rank`` for a single process, ``rank<R>`` otherwise."""
        return rank_dir_name(self.rank)

    @property
    def exhausted(self) -> bool:
        """True once ``overflow_nums`` records were written."""
        return self.overflow_nums != -1 and self.found >= self.overflow_nums

    def selected(self) -> bool:
        """True when this step and this rank are to be checked and the
        limit is not reached."""
        if self.exhausted:
            return False
        if self.steps is not None and self.step not in self.steps:
            return False
        if self.ranks is not None and (self.rank or 0) not in self.ranks:
            return False
        return True

    def next_index(self, api: str) -> int:
        """The call index for ``api`` (e.g. ``"Functional.exp"``), counting
        from 0 within a step."""
        index = self.counters.get(api, 0)
        self.counters[api] = index + 1
        return index

    def next_collective_index(self, key: Any) -> int:
        """The per-group index of a collective call (``key``: the group, or
        for Send/Receive ``(group, lower rank, higher rank)``), counting from 0
        within a step: the same on every rank for the same call as long as
        every rank counts the same calls (see docs/multi-rank.md)."""
        index = self.collective_counters.get(key, 0)
        self.collective_counters[key] = index + 1
        return index

    def next_step(self) -> None:
        """Move to the next step; call indices start again at 0."""
        self.step += 1
        self.counters.clear()
        self.collective_counters.clear()

    def set_step(self, step: int) -> None:
        """Set the current step number (``set_init_step``).

        Raises:
            ValueError: when ``step`` is not an int >= 0.
        """
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be an int >= 0, not {step!r}")
        self.step = step
        self.counters.clear()
        self.collective_counters.clear()

    def count_record(self) -> bool:
        """Count one more record; False (and nothing counted) when the limit
        is already reached."""
        if self.exhausted:
            return False
        self.found += 1
        return True
