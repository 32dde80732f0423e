"""Where the overflow started: the earliest step with records, its first
origin, else where it came in (``entered``), else its first record.

A later step's origin or ``entered`` never outranks an earlier step: once a
step has inf/nan, the steps after it carry it on.
"""
from __future__ import annotations

from typing import Optional

from ..model import Dump, Record
from ..fmt import describe, place


def first_step(records: list[Record]) -> list[Record]:
    """The records of the earliest step that has any naming a call (every
    rank; ``records`` sorted by step, then rank): a step with only sentinel
    records (no call named) is passed over."""
    named = [r for r in records if r.sentinel is None]
    if not named:
        return []
    step = named[0].step
    return [r for r in named if r.step == step]


def started(records: list[Record]) -> Optional[Record]:
    """The first origin of the earliest step with records, lowest rank;
    None when no record of that step is marked origin."""
    return next((r for r in first_step(records) if r.origin), None)


def entered(records: list[Record]) -> Optional[Record]:
    """The record saying where the overflow came in (``entered``) in the
    earliest step with records, when that step has no origin; else None."""
    if started(records) is not None:
        return None
    return next((r for r in first_step(records) if r.entered), None)


def summary_line(dump: Dump) -> str:
    """One sentence naming the earliest step whose records show the
    overflow: its origin, else where it came in, else its first record
    ("where it started is not known"). Sentinel findings of an earlier
    step come first, then the rest (``Then: ...``).

    Example: ``Overflow started in step0/rank1: Functional.exp.3.forward (API, forward) at train.py:31.``
    """
    records = dump.records
    first = records[0] if records else None
    if first is not None and first.sentinel is not None:  # the earliest step: sentinel checks, no call named
        later = Dump(dump.root, [r for r in records if r.sentinel is None])
        then = f" Then: {summary_line(later)}" if later.records else ""
        return f"Sentinel checks saw inf/nan in {place(first)}: {first.sentinel}.{then}"
    origin = started(records)
    if origin is not None:
        return f"Overflow started in {place(origin)}: {describe(origin)}."
    came = entered(records)
    if came is not None and came.entered is not None:
        return f"Overflow entered in {place(came)}: {came.entered['message']}."
    if first is not None:
        why = ("no overflow.json: a dump without origin marks"
               if all(r.origin is None for r in records) else "no record is marked as the origin")
        return (f"First recorded overflow in {place(first)}: {describe(first)}; where it started is not known "
                f"({why}).")
    return "No overflow recorded."
