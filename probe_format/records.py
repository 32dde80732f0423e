"""The records of ``overflow.json``, one constructor per kind, and the
format's version.

Every record the runtime writes carries ``format_version``
(:data:`FORMAT_VERSION`, ``"MAJOR.MINOR"``): a new minor version only adds
keys a reader may ignore; a new major version changes what a key means or
drops one, and a reader of an older major version refuses the file
(:func:`version_problem`). A record without the key was written before the
format had a version: it is read as version 1.0, which it is.

Example::

    call_record("Functional.exp.0.forward", origin=True, where="train.py:3", kind="forward", step=0, rank=None)
    # {"name": "Functional.exp.0.forward", "origin": true, "where": "train.py:3", "kind": "forward",
    #  "step": 0, "rank": null, "format_version": "1.0"}
"""
from __future__ import annotations

import re
from typing import Any, Optional

from .layout import (COLLECTIVE, COMMUNICATION, ENTERED, ENTERED_AT_START, ENTERED_ENTRY, ENTERED_INPUT,
                     ENTERED_PARAMETER, ENTERED_SOURCE, INSIDE, KIND, KINDS, MESSAGE, NAME, NONFINITE, NOTE_KINDS,
                     ORIGIN, RANK, REPLAY, SOURCE_COLLECTIVE, SOURCE_MIXED_PRECISION, SOURCE_OUTSIDE,
                     SOURCE_OWN_CONSTRUCT, SOURCE_PARAMETER, STEP, VERSION, WHERE, WRITTEN)

#: the version of the format this code writes and reads
FORMAT_VERSION = "1.0"
_VERSION_TEXT = re.compile(r"^(\d+)\.(\d+)$")


def parse_version(value: Any) -> Optional[tuple[int, int]]:
    """(major, minor) of a ``format_version`` value: ``parse_version("1.2") == (1, 2)``;
    ``(1, 0)`` for None (a record from before versioning); None when malformed."""
    if value is None:
        return (1, 0)
    match = _VERSION_TEXT.match(value) if isinstance(value, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def version_problem(value: Any) -> Optional[str]:
    """Why a reader of :data:`FORMAT_VERSION` cannot read a record whose
    ``format_version`` is ``value``, or None when it can (absent: before
    versioning; the same major version, any minor). A malformed value is
    read as this version (None)."""
    parsed = parse_version(value)
    major = int(FORMAT_VERSION.split(".")[0])
    if parsed is None or parsed[0] <= major:
        return None
    return (f"written in dump format {value}, newer than the {FORMAT_VERSION} this probe report reads: "
            "upgrade msprobe-lint")


def call_record(name: str, *, origin: bool, where: Optional[str], kind: str, step: int, rank: Optional[int],
                collective: Optional[dict] = None, message: Optional[str] = None, entered: Optional[dict] = None,
                inside: Optional[str] = None, written: Optional[list] = None,
                replay: Optional[str] = None) -> dict:
    """The record of a call or Cell entry (it has a dump.json entry named
    ``name``): an origin (``origin`` true: inputs finite, output not) or a
    carried one; ``kind`` ``forward``, ``backward``, ``parameters_grad``,
    or ``communication`` (a collective call whose local inputs were finite:
    then ``collective`` and ``message`` are given). The optional keys are
    left out when None (``written`` also when empty).

    Raises:
        ValueError: ``kind`` is not a call's kind, or ``communication``
            without its ``collective`` object.
    """
    if kind not in KINDS or kind in NOTE_KINDS:
        raise ValueError(f"not the kind of a call's record: {kind!r}")
    if kind == COMMUNICATION and collective is None:
        raise ValueError("a communication record needs its collective object")
    item: dict = {NAME: name, ORIGIN: bool(origin), WHERE: where, KIND: kind, STEP: step, RANK: rank}
    for key, value in ((COLLECTIVE, collective), (MESSAGE, message), (ENTERED, entered), (INSIDE, inside),
                       (REPLAY, replay)):
        if value is not None:
            item[key] = value
    if written:
        item[WRITTEN] = list(written)
    item[VERSION] = FORMAT_VERSION
    return item


def note_record(kind: str, *, step: int, rank: Optional[int], where: Optional[str], nonfinite: list,
                message: str) -> dict:
    """A record that names no call (``kind`` one of ``NOTE_KINDS``:
    ``sentinel``, ``outside``, ``update``; also its ``name``; ``origin``
    false; ``nonfinite`` the labels of what held inf/nan; no dump.json
    entry).

    Raises:
        ValueError: ``kind`` is not one of ``NOTE_KINDS``.
    """
    if kind not in NOTE_KINDS:
        raise ValueError(f"not the kind of a record that names no call: {kind!r}")
    return {NAME: kind, ORIGIN: False, WHERE: where, KIND: kind, STEP: step, RANK: rank,
            NONFINITE: list(nonfinite), MESSAGE: message, VERSION: FORMAT_VERSION}


def entered_object(entry: str, *, input: Optional[str], source: str, message: str, parameter: Optional[str] = None,
                   at_start: bool = False) -> dict:
    """A record's ``entered`` object: where the step's overflow came in
    (``entry`` the entry whose input held inf/nan, ``input`` which one;
    ``source`` ``outside``, ``parameter`` (``parameter`` its name,
    ``at_start`` whether it held inf/nan at start()), ``collective``,
    ``own-construct`` or ``mixed-precision``).

    Raises:
        ValueError: an unknown ``source``.
    """
    if source not in (SOURCE_OUTSIDE, SOURCE_PARAMETER, SOURCE_COLLECTIVE, SOURCE_OWN_CONSTRUCT,
                      SOURCE_MIXED_PRECISION):
        raise ValueError(f"unknown entered source: {source!r}")
    return {ENTERED_ENTRY: entry, ENTERED_INPUT: input, ENTERED_SOURCE: source, ENTERED_PARAMETER: parameter,
            ENTERED_AT_START: bool(at_start), MESSAGE: message}
