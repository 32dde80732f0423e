"""Ranks family (PL301-PL306): the filters that choose what is collected.

rank and step are each a list of integers 0-1000000 and ``"a-b"`` range
strings (a <= b); empty or absent means all. The item syntax is checked by
the schema (``x-probe-code: PL301``); what JSON Schema cannot say (a <= b,
a range's bounds within 0-1000000, overlaps, the world size) is checked
here. A task section's ``scope`` is a range of two full dump names, not a
filter list (two names of another shape: PL305; another length: PL107,
from the schema), and a tensor dump with no filter at all writes
everything (PL306).

How msprobe reads an entry (``get_real_step_or_rank`` and
``get_step_or_rank_from_string`` in ``msprobe/core/common/utils.py``, the
same in mindstudio-probe 8.1.2, 8.3.3 and 26.0.0-26.2.0, with the limit
``Const.STEP_RANK_MAXIMUM_VALUE = int(1e6)`` of ``core/common/const.py``):
an int (not a bool) must lie in 0-1000000, else it stops with "Each
element of step must be between 0 and 1000000"; a string is split on "-",
must give exactly two parts, each converted with a plain ``int()`` (so
whatever int() forgives passes: blanks around a number, a "+" sign,
"1_000", digits of other scripts), and both must lie in 0-1000000 ("The
boundaries must fall within the range of [0, 1000000]") with the first <=
the last. :func:`parse_range` copies that reading. (26.2.0 also takes a
bare number string, "3"; this module, like the schema, does not.)
"""
from __future__ import annotations

import bisect
import re
import sys

from ..config_view import ConfigView
from ..context import Context
from ..diagnostic import Finding, Severity, remove, set_value
from ..positions import pointer
from .base import rule

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterator, Optional


#: The largest rank or step msprobe accepts (``Const.STEP_RANK_MAXIMUM_VALUE``
#: in msprobe/core/common/const.py: ``int(1e6)`` in 8.1.2, 8.3.3 and 26.x).
MAXIMUM = 1_000_000


def parse_entry(item: object) -> Optional[tuple[int, int]]:
    """``3`` -> (3, 3), ``"2-5"`` or ``"2 - 5"`` -> (2, 5); None for
    anything msprobe refuses (a reversed range, a number over
    :data:`MAXIMUM`)."""
    if isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= MAXIMUM:
        return item, item
    if isinstance(item, str):
        bounds = parse_range(item)
        if bounds is not None and bounds[0] <= bounds[1] <= MAXIMUM:
            return bounds
    return None


def parse_range(item: str) -> Optional[tuple[int, int]]:
    """The two numbers of an ``"a-b"`` string as msprobe reads them
    (``get_step_or_rank_from_string``: split on "-", exactly two parts,
    each through ``int()``), neither checked against the other nor against
    :data:`MAXIMUM`; None when msprobe cannot read it (another number of
    parts, a part int() refuses, a number over Python's int-string limit).

    Example: ``parse_range(" 1 - 3")`` is ``(1, 3)``; ``parse_range("1-3-5")``
    is None.
    """
    parts = item.split("-")
    if len(parts) != 2:
        return None
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:  # as msprobe: "The hyphen(-) must start and end with decimal numbers."
        return None


def _too_long(*numbers: str) -> bool:
    """True when a digit string is over Python's int-string limit (int()
    raises ValueError on it)."""
    if sum(map(len, numbers)) <= 640:  # the lowest limit Python allows: no need to ask
        return False
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return any(0 < limit < len(n) for n in numbers)


def entries(config: ConfigView, key: str) -> list[tuple[int, str, tuple[int, int]]]:
    """Valid (index, pointer, (first, last)) entries of ``key``'s list."""
    return _scanned(config, key)[0]


# The usual "a-b" range: ASCII digits, no blanks (str.isdigit would also take '²', which int() refuses).
_RANGE = re.compile(r"([0-9]+)-([0-9]+)").fullmatch
# The blanks int() strips around a number: str.isspace() but for \x1c-\x1f, which re's \s takes.
_INT_SPACE = "[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
# What msprobe's int() also reads in a part of a range (blanks, "+", "1_000", other scripts' digits,
# fullwidth "１-３" among them: re's \d for a str is int()'s digits, Unicode Nd). The schema spells
# the same characters out: to ECMA-262 engines (check-jsonschema, editors) \d is ASCII, \s other blanks.
_LOOSE_RANGE = re.compile(r"{s}*\+?(\d+(?:_\d+)*){s}*-{s}*\+?(\d+(?:_\d+)*){s}*".format(s=_INT_SPACE)).fullmatch


def _scanned(config: ConfigView, key: str) -> tuple[list, list]:
    """``key``'s list read once per config (PL301, PL302 and PL303 share
    it; a list may hold 600,000 entries): (the valid entries as
    :func:`entries` gives them, the (pointer, item, what is wrong) of
    every "a-b" range the schema let through that msprobe still refuses:
    ``"reversed"``, with a number ``"too long"`` for int(), or with a
    number ``"too large"`` (over :data:`MAXIMUM`; an integer over it is
    the schema's, by its maximum))."""
    memo = config.memo.get(("ranks", key))
    if memo is not None:
        return memo
    items = config.get(key)
    valid: list = []
    odd: list = []
    if isinstance(items, list):
        bad = _bad_indices(config, key)
        for index, item in enumerate(items):
            if bad and index in bad:
                continue
            kind = type(item)
            if kind is int:
                if 0 <= item <= MAXIMUM:  # a larger one is the schema's PL301 (its maximum)
                    valid.append((index, f"/{key}/{index}", (item, item)))  # rank, step: nothing to escape
            elif kind is str:
                match = _RANGE(item) or _LOOSE_RANGE(item)
                if match is None:
                    continue
                first, last = match.groups()
                if len(first) + len(last) > 640 and _too_long(first, last):
                    odd.append((f"/{key}/{index}", item, "too long"))
                    continue
                try:
                    low, high = int(first), int(last)
                except ValueError:  # over the int-string limit in some way _too_long did not foresee
                    odd.append((f"/{key}/{index}", item, "too long"))
                    continue
                if high > MAXIMUM or low > MAXIMUM:
                    odd.append((f"/{key}/{index}", item, "too large"))
                elif low <= high:
                    valid.append((index, f"/{key}/{index}", (low, high)))
                else:
                    odd.append((f"/{key}/{index}", item, "reversed"))
    config.memo[("ranks", key)] = valid, odd
    return valid, odd


def _bad_indices(config: ConfigView, key: str) -> set[int]:
    """The indices of ``key``'s list whose pointer the schema stage marked
    bad (one pass over the few bad pointers, not a pointer built per
    entry of a long list)."""
    prefix = f"/{key}/"
    return {int(ptr[len(prefix):]) for ptr in config.bad
            if ptr.startswith(prefix) and ptr[len(prefix):].isdigit()}


@rule("PL301", "bad-index-entry", "error", "Bad rank/step entry", fix="safe")
def bad_entry(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    rank and step entries are integers from 0 to 1000000 or "a-b" strings
    with a <= b, both within 0-1000000 (mindstudio-probe 8.1 to 26.2 refuse
    a larger number). msprobe stops at start-up on anything else. A wrong
    item type is this rule too; a value that is not a list at all is PL102.
    Blanks around the numbers of a range ("1 - 3") are accepted, as
    msprobe's int() accepts them.

    Bad:
        "rank": ["6-4"], "step": [-1], "step": [2000000]
    Good:
        "rank": ["4-6"], "step": [0]
    """
    for key in ("rank", "step"):
        for ptr, item, wrong in _scanned(config, key)[1]:
            if wrong == "too large":
                yield too_large(key, item, ptr)
                continue
            first, _, last = item.partition("-")
            if wrong == "too long":
                yield Finding("PL301", f"{key} range {item[:20]!r}... has a number of more than "
                                       f"{sys.get_int_max_str_digits()} digits: Python's int(), and so msprobe, "
                                       "refuses it", pointer=ptr, hint="write a smaller number")
            else:
                low, high = int(first), int(last)
                yield Finding("PL301", f"{key} range {item!r} is reversed: the first value must not exceed the last",
                              pointer=ptr, hint=f'write "{high}-{low}"',
                              fix=set_value(ptr, f"{high}-{low}", f'write "{high}-{low}"'))


def too_large(key: str, item: str, ptr: str) -> Finding:
    """PL301 for an "a-b" range with a bound over :data:`MAXIMUM`, in
    msprobe's words (``get_step_or_rank_from_string``; an integer over it
    is the schema's PL301, rules/schema.py)."""
    said = f"The boundaries must fall within the range of [0, {MAXIMUM}]"
    return Finding("PL301", f"{key} range {item!r} goes past {MAXIMUM}, the largest {key} msprobe accepts: "
                            f"mindstudio-probe 8.1 to 26.2 stop at start-up with \"{said}\"", pointer=ptr,
                   hint=f"use {key}s between 0 and {MAXIMUM}")


@rule("PL302", "overlapping-entries", "warning", "Duplicate or overlapping rank/step entries", fix="safe/unsafe")
def overlapping(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    An entry already covered by another is harmless to msprobe but usually a
    typo for a different number.

    Bad:
        "rank": [1, "0-3"]
    Good:
        "rank": ["0-3"]
    """
    for key in ("rank", "step"):
        seen: list[tuple[tuple[int, int], str]] = []
        found = entries(config, key)
        if len(found) > 1000:  # a long list: O(n log n), never the pairwise loop below (minutes on a big file)
            yield from _overlapping_long(config, key, found)
            continue
        for _, ptr, (first, last) in found:
            for (a, b), shown in seen:
                if first <= b and a <= last:
                    what = "repeats" if (first, last) == (a, b) else "overlaps"
                    yield Finding("PL302", f"{key} entry {config.get(*_parts(ptr))!r} {what} {shown!r}",
                                  pointer=ptr, hint="remove the duplicate or merge the ranges",
                                  fix=_drop(ptr, shown, exact=(first, last) == (a, b),
                                            covered=a <= first and last <= b))
                    break
            seen.append(((first, last), config.get(*_parts(ptr))))


def _overlapping_long(config: ConfigView, key: str, found: list) -> Iterator[Finding]:
    """PL302 for a long list: each entry that repeats or overlaps an
    earlier one, checked against the union of the earlier entries (a
    sorted list of disjoint ranges), so the entry named is an earlier one
    it overlaps though not always the first."""
    exact: dict[tuple[int, int], str] = {}
    starts: list[int] = []
    ends: list[int] = []
    shown_by: list = []
    items = config.get(key)
    for index, ptr, (first, last) in found:
        value = items[index]
        if not ends or first > ends[-1]:  # past every earlier entry (an ascending list): no search
            exact.setdefault((first, last), value)
            starts.append(first)
            ends.append(last)
            shown_by.append(value)
            continue
        here = bisect.bisect_right(starts, last)
        if (first, last) in exact:
            yield Finding("PL302", f"{key} entry {value!r} repeats {exact[(first, last)]!r}", pointer=ptr,
                          hint="remove the duplicate or merge the ranges",
                          fix=_drop(ptr, exact[(first, last)], exact=True, covered=True))
        elif here and ends[here - 1] >= first:
            yield Finding("PL302", f"{key} entry {value!r} overlaps {shown_by[here - 1]!r}", pointer=ptr,
                          hint="remove the duplicate or merge the ranges")
        exact.setdefault((first, last), value)
        low = bisect.bisect_left(ends, first)
        start = min(first, starts[low]) if low < here else first
        end = max(last, ends[here - 1]) if low < here else last
        shown = shown_by[low] if low < here else value
        starts[low:here], ends[low:here], shown_by[low:here] = [start], [end], [shown]


def _drop(ptr: str, shown: object, *, exact: bool, covered: bool):
    """Removing an entry: safe for an exact repeat (nothing changes),
    unsafe for one inside an earlier range (it may be a typo for another
    number), none for a partial overlap (which range was meant is not
    known)."""
    if not covered:
        return None
    return remove(ptr, f"remove the entry {'repeating' if exact else 'covered by'} {shown!r}", safe=exact)


def _parts(ptr: str) -> tuple:
    key, index = ptr.strip("/").split("/")
    return key, int(index)


@rule("PL303", "rank-beyond-world", "warning",
      "Rank >= world size (nothing collected on it; an error in probe run and the runtime gate when no rank is left)")
def rank_beyond_world(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Ranks count from 0, so with N processes the highest rank is N-1. A rank
    at or over the world size never exists and collects nothing. In a
    guarded launch (probe run, probe_runtime's gate) a filter whose every
    rank is out of range is an error: the job would collect nothing. Needs the
    world size (--world-size, pyproject, or the launcher's RANK_SIZE /
    WORLD_SIZE / MS_WORKER_NUM).

    Bad:
        "rank": [8]    with world size 8
    Good:
        "rank": [7]    with world size 8
    """
    world = context.value("world_size")
    if world is None:
        return
    said = context.describe("world_size")
    valid = entries(config, "rank")
    # Before a guarded launch (probe run, the runtime gate) a filter that
    # leaves no rank at all would run the whole job for nothing: an error.
    severity = Severity.ERROR if context.runtime and valid and all(first >= world for _, _, (first, _) in valid) \
        else None
    for _, ptr, (first, last) in valid:
        if last >= world:
            ranks = "the only rank is 0" if world == 1 else f"ranks are 0-{world - 1}"
            written = config.get(*_parts(ptr))
            if first >= world:
                what = f"rank {written!r} does not exist"
                # one process: PL304 says what to write ("rank": []); a hint of rank 0 would contradict it
                hint = 'write "rank": [] (single-card training)' if world == 1 else \
                    f"use ranks between 0 and {world - 1}"
            else:  # a range reaching past the last rank: name the part that does not exist
                missing = f"rank {world}" if last == world else f"ranks {world}-{last}"
                what = f"{missing} of {written!r} {'does' if last == world else 'do'} not exist"
                kept = str(first) if first == world - 1 else f'"{first}-{world - 1}"'
                hint = 'write "rank": [] (single-card training)' if world == 1 else \
                    f"write {kept} (the ranks of {written!r} that exist)"
            yield Finding("PL303", f"{what} with world size {world} ({said}); {ranks}", pointer=ptr,
                          severity=severity, hint=hint)


@rule("PL304", "rank-in-single-card", "error", "Non-empty rank in single-card training", fix="unsafe")
def rank_single_card(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe's docs require "rank": [] for single-card training: without a
    distributed launch there is no rank to match, and nothing is collected.

    Bad:
        "rank": [0]    with world size 1
    Good:
        "rank": []
    """
    if context.value("world_size") != 1:
        return
    items = config.get("rank")
    if isinstance(items, list) and items:
        yield Finding("PL304", f"rank is {items!r} in single-card training ({context.describe('world_size')}); "
                               "msprobe needs an empty list there", pointer="/rank", hint='write "rank": []',
                      fix=set_value("/rank", [], "write an empty rank list", safe=False))


# Full dump names, as msprobe's range scope requires them
# (``core/data_dump/scope.py``, 26.x ``core/dump/data_dump/scope.py``:
# RangeScope.check_name_pattern, with ``Const.DUMP_PREFIX``; the same in
# 8.1.2 to 26.2.0).
API_PREFIXES = ("Distributed", "Functional", "Torch", "Tensor", "Mint", "MintFunctional", "Primitive", "Aten", "VF",
                "NPU", "Jit")
API_NAME = re.compile(r"^(%s)\..*\.\d+\.(forward|backward)$" % "|".join(API_PREFIXES))
CELL_NAME = re.compile(r"^(Cell|Module)\..*\.(forward|backward)\.\d+$")
EXAMPLES = {"L1": "Functional.conv2d.0.forward", "L0": "Cell.net.conv1.Conv2d.forward.0"}


@rule("PL305", "scope-not-a-range", "error", "scope of two names that are not full dump names (a filter list)")
def scope_not_range(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    scope marks a range: exactly two full dump names, the first and the last
    call to collect, as they appear in dump.json (at L1 API names such as
    Functional.conv2d.0.forward, at L0 Cell names such as
    Cell.net.conv1.Conv2d.forward.0, either at mix). msprobe stops when the
    dump starts on a scope of another length or on a name of another shape.
    To collect only some APIs or Cells by name, list them in "list" (names or
    fragments, any number) and leave scope empty. A scope of another length
    is PL107 (the schema, in every section); this rule checks the two names
    in the active task's section, at L0, L1 and mix (free_benchmark's scope
    is a plain list and not checked).

    Bad:
        "statistics": {"scope": ["Functional.conv2d", "Functional.relu"]}
    Good:
        "statistics": {"scope": ["Functional.conv2d.0.forward", "Functional.relu.3.forward"]}
        "statistics": {"list": ["conv2d", "relu"]}
    """
    task, level = config.task, config.level
    if task in (None, "free_benchmark") or level not in ("L0", "L1", "mix"):
        return
    scope = config.get(task, "scope")
    if not isinstance(scope, list) or len(scope) != 2 or not all(isinstance(name, str) for name in scope):
        return
    tests = {"L1": (API_NAME,), "L0": (CELL_NAME,), "mix": (API_NAME, CELL_NAME)}[level]
    wrong = [name for name in scope if not any(test.match(name) for test in tests)]
    if not wrong:
        return
    kind = {"L1": "API", "L0": "Cell", "mix": "API or Cell"}[level]
    example = EXAMPLES["L0" if level == "L0" else "L1"]
    shown = ", ".join(repr(name) for name in wrong)
    what = f"a full {kind} dump name" if len(wrong) == 1 else f"full {kind} dump names"
    yield Finding("PL305", f"scope names {shown}, not {what} at level {level} (like {example}): scope marks a range "
                           "between two calls, it is not a filter list",
                  pointer=pointer(task, "scope"),
                  hint='to collect some APIs or Cells by name, put them in "list" and leave scope empty; for a '
                       "range, copy the first and last names from a dump's dump.json")


@rule("PL306", "tensor-dump-unfiltered", "warning", "Task tensor at L1 with no step, rank, scope or list")
def tensor_unfiltered(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Task tensor saves the real input and output tensors of every API call it
    sees. With no step, rank, scope or list at level L1 (or mix, which adds
    the Cells), that is every API call of every step on every rank: the
    weights, activations and gradients each call takes and gives, which for
    a model of a few billion parameters is tens of gigabytes per step and
    rank, terabytes within a few dozen steps, and the job slows to the speed
    of the disk. Narrow it first; task statistics finds where to look at a
    fraction of the size. A step= given to PrecisionDebugger in the script
    (--script) counts as a step filter.

    Bad:
        {"task": "tensor", "level": "L1", "step": [], "rank": [], "tensor": {"scope": [], "list": []}}
    Good:
        {"task": "tensor", "level": "L1", "step": [0], "rank": [0], "tensor": {"list": ["softmax"]}}
    """
    if config.task != "tensor" or config.level not in ("L1", "mix"):
        return
    section = config.data.get("tensor")
    section = section if isinstance(section, dict) else {}
    # Any filter written, even a malformed one (reported by its own rule), is a filter meant.
    if any(config.data.get(key) not in (None, [], "") for key in ("step", "rank")) or \
            any(section.get(key) not in (None, [], "") for key in ("scope", "list")):
        return
    script = context.script
    if script is not None and any(getattr(d, "step_given", False) for d in getattr(script, "debuggers", ())):
        return
    world = context.value("world_size")
    ranks = "every rank" if world is None else ("the one rank" if world == 1 else f"each of {world} ranks")
    at = "/level" if "level" in config.data else ("/task" if "task" in config.data else "")
    yield Finding("PL306", f"task tensor at level {config.level} with no step, rank, scope or list writes the input "
                           "and output tensors of every API call (weights, activations, gradients) on every step of "
                           f"{ranks}: for a model of a few billion parameters, tens of gigabytes per step and rank, "
                           "terabytes within a few dozen steps",
                  pointer=at, hint='narrow it: e.g. "step": [0], "rank": [0], and a scope or list in the tensor '
                                   "section; or find where to look with task statistics first")
