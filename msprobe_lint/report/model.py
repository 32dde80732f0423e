"""What ``probe report`` reads from a dump: tensors, records, one step and
rank folder. Data only: the analysis lives in :mod:`.analysis`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from .dumpformat import SENTINEL, direction_of


@dataclass
class Tensor:
    """One tensor's statistics in a dump.json entry.

    ``where`` is its place in the entry (``output[0]``, ``input_args[1]``,
    ``weight[0]``); ``dtype`` and ``shape`` as dump.json has them
    (``"Float32"``, ``[2, 4]``); ``stats`` maps Max/Min/Mean/Norm to a float
    (inf and nan included) or None.
    """

    where: str
    dtype: Any
    shape: Any
    stats: dict[str, Any]

    @property
    def nonfinite(self) -> list[str]:
        """Names of the statistics that are inf or nan, e.g. ``["Max", "Mean"]``."""
        return [k for k, v in self.stats.items() if isinstance(v, float) and not math.isfinite(v)]


@dataclass
class Record:
    """One overflowing entry (or sentinel finding) of one step and rank folder.

    ``index`` is its position in detection order in the folder; ``origin``
    is True (inputs finite, output not), False (carried) or None (unknown:
    a dump without overflow.json); ``where`` the user's ``file:line``.
    """

    step: Optional[int]
    rank: Optional[int]
    folder: str
    index: int
    name: str
    origin: Optional[bool]
    where: Optional[str]
    tensors: list[Tensor] = field(default_factory=list)
    #: dump.json has an entry for this record
    has_entry: bool = False
    #: overflow.json's ``entered`` (a dict with a ``message``) on the record where a carried overflow came in
    entered: Optional[dict] = None
    #: a sentinel finding's message (overflow.json kind ``sentinel``: it names no call), else None
    sentinel: Optional[str] = None
    #: a sentinel finding's ``nonfinite``: every label of what held inf/nan
    nonfinite: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``API``, ``Cell`` or ``sentinel``: what the record names."""
        if self.sentinel is not None:
            return SENTINEL
        return "Cell" if self.name.startswith("Cell.") else "API"

    @property
    def direction(self) -> Optional[str]:
        """``forward``, ``backward``, ``parameters_grad`` or None (from the name)."""
        return direction_of(self.name)

    @property
    def label(self) -> str:
        """The name without its direction (``Functional.exp.3``, ``Cell.net.fc1.Dense.0``)."""
        parts = self.name.split(".")
        return ".".join(p for p in parts if p not in ("forward", "backward", "parameters_grad")) or self.name

    def offending(self) -> list[Tensor]:
        """The tensors whose statistics hold inf or nan."""
        return [t for t in self.tensors if t.nonfinite]


@dataclass
class RankDump:
    """What one step and rank folder holds.

    ``readable`` is False when neither dump.json nor overflow.json could be
    read at all; ``problems`` are (path, message) pairs for the files not
    read whole. ``construct`` is construct.json's parent map when it was
    asked for and holds a Cell tree, else None (``construct_problem`` says
    why it could not be read).
    """

    step: Optional[int]
    rank: Optional[int]
    folder: str
    records: list[Record] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    readable: bool = True
    construct: Optional[dict] = None
    construct_problem: Optional[str] = None


@dataclass
class Dump:
    """Every record read under a dump path, sorted by step, then rank, then
    detection order; ``folders`` counts the step and rank folders found."""

    root: str
    records: list[Record] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    folders: int = 0
    unreadable_folders: int = 0
    #: construct.json of the folders, by folder path (read for the HTML page)
    constructs: dict[str, tuple[Optional[dict], Optional[str]]] = field(default_factory=dict)
