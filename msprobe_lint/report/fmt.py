"""How values, places and records are written in the report's sentences (text, JSON summary, HTML)."""
from __future__ import annotations

import math
from typing import Any, Optional

from .model import Constant, Record, Tensor


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


def step_text(step: Optional[int]) -> str:
    """``step3`` (``step?`` when the layout has no step number)."""
    return "step?" if step is None else f"step{step}"


def place_of(step: Optional[int], rank: Optional[int]) -> str:
    """``step3/rank1`` (``step?`` when no step number, ``rank`` when not distributed)."""
    return f"{step_text(step)}/{'rank' if rank is None else f'rank{rank}'}"


def rank_name(rank: Optional[int]) -> str:
    """``rank 3``, or ``rank`` for the folder ``rank`` of a job that was not
    distributed (named as msprobe names the folder, as :func:`place_of` and
    the rank lists do; never ``rank None``)."""
    return "rank" if rank is None else f"rank {rank}"


def place(record: Record) -> str:
    """The record's :func:`place_of`."""
    return place_of(record.step, record.rank)


def shape(tensor: Tensor) -> str:
    """``[2, 4]``, or the shape as dump.json has it when not a list."""
    if isinstance(tensor.shape, list):
        return "[" + ", ".join(str(d) for d in tensor.shape) + "]"
    return fmt(tensor.shape)


def shown_constants(record: Record) -> list[Constant]:
    """The constants every report shows for a record: the numbers and
    dtypes an origin was called with besides its tensors (its tensor
    inputs were finite: a constant such as ``-1e5`` multiplied into a
    float16 tensor, or a cast's dtype, is often what made the inf); none
    for other records."""
    return record.constants if record.origin else []


def record_notes(record: Record) -> list[str]:
    """The sentences every report adds under a record, in order: the call
    it was made inside (``inside``), the Parameters it wrote inf/nan into
    (``written``) and the constants an origin was called with."""
    notes = []
    if record.inside and record.kind == "kernel":  # a kernel a mindspore.jit region ran (named by a replay)
        notes.append(f"inside {record.inside}: a kernel of that mindspore.jit region, which runs as one graph "
                     "(named by running the region again under MindSpore's kernel dump)")
    elif record.inside:  # a nested call is recorded only when the call around it masked its overflow
        notes.append(f"inside {record.inside}: that call's inputs and result were finite (it masked this overflow)")
    if record.written:
        notes.append(f"wrote inf/nan into Parameter {', '.join(record.written)} (in place)")
    constants = shown_constants(record)
    if constants:
        notes.append("called with " + ", ".join(f"{c.where}={fmt(c.value)} ({c.type})" for c in constants))
    return notes


def no_inf_nan_shown(record: Record) -> str:
    """What the text and HTML reports say under a record none of whose
    tensors' statistics holds inf or nan: no dump.json entry, statistics
    all finite, or tensors dump.json keeps no statistics of (a complex
    tensor: a fresh user's complex64 ``exp`` overflow, an ORIGIN, read "no
    inf/nan in the recorded statistics"), which may hold the inf/nan."""
    if not record.has_entry:
        return "no statistics in dump.json"
    unstated = record.unstated()
    if not unstated:
        return "no inf/nan in the recorded statistics"
    tensors = ", ".join(f"{t.where} {t.dtype}" for t in unstated)
    if all(str(t.dtype).startswith("Complex") for t in unstated):
        return f"dump.json keeps no statistics for complex tensors ({tensors}): inf/nan in them is not shown"
    return f"no statistics in dump.json for {tensors}: inf/nan in them is not shown"
