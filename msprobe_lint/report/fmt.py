"""How values, places and records are written in the report's sentences (text, JSON summary, HTML)."""
from __future__ import annotations

import math
from typing import Any

from .model import Record, Tensor


def fmt(value: Any) -> str:
    """A statistic as the report prints it: ``inf``, ``-inf``, ``nan``, six
    significant digits, ``null`` for None, ``true``/``false``."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.6g}"
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def place(record: Record) -> str:
    """``step3/rank1`` (``step?`` when no step number, ``rank`` when not distributed)."""
    step = "step?" if record.step is None else f"step{record.step}"
    rank = "rank" if record.rank is None else f"rank{record.rank}"
    return f"{step}/{rank}"


def describe(record: Record) -> str:
    """``Functional.exp.3.forward (API, forward) at train.py:31``."""
    where = f" at {record.where}" if record.where else ""
    return f"{record.name} ({record.kind}, {record.direction or 'direction unknown'}){where}"


def shape(tensor: Tensor) -> str:
    """``[2, 4]``, or the shape as dump.json has it when not a list."""
    if isinstance(tensor.shape, list):
        return "[" + ", ".join(str(d) for d in tensor.shape) + "]"
    return fmt(tensor.shape)
