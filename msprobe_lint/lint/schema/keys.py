"""Which keys each release (and the ATB dump tool) knows, and where.

The schemas are the source: ``files.key_index`` lists, per location (the
top level or a section), the keys one schema accepts; :func:`known_places`
looks a key up in every release profile of ``profiles.PROFILES`` and in
the ATB dump config's schema (``schema/atb-dump-config.schema.json``). The
did-you-mean of PL101 uses both to decide whether a rename is plainly
meant (see :func:`plausible_misspelling` and rules/schema.py). Loaded
only when there is an unknown key to judge.

Example::

    >>> from msprobe_lint.lint.schema.keys import known_places, plausible_misspelling
    >>> ("26.1", "tensor") in known_places("bench_path")
    True
    >>> plausible_misspelling("overflow_number", "overflow_nums"), plausible_misspelling("bench_path", "nfs_path")
    (True, False)
"""
from __future__ import annotations

from functools import lru_cache

from .files import ATB, key_index


@lru_cache(maxsize=None)
def _places() -> dict[str, tuple[tuple[str, str], ...]]:
    from ..profiles import PROFILES

    found: dict[str, list[tuple[str, str]]] = {}
    for name in list(PROFILES) + [ATB]:
        for location, keys in key_index(name).items():
            for key in keys:
                found.setdefault(key, []).append((name, location))
    return {key: tuple(places) for key, places in found.items()}


def known_places(key: str) -> tuple[tuple[str, str], ...]:
    """Every (release profile name or ``"atb"``, location) whose schema
    accepts ``key`` (the location ``""`` is the top level); empty for a
    key no release, section or tool this project knows. Task sections
    count as keys of the top level."""
    return _places().get(key, ())


def plausible_misspelling(typed: str, known: str) -> bool:
    """True when ``typed`` reads as a slip of the keyboard for ``known``:
    the same letters in another case or with other separators
    (``DumpPath``, ``dump-path``, ``dumppath`` for ``dump_path``), or at
    most one edit per four characters (Damerau-Levenshtein on the lower
    case: insert, delete, substitute, swap two neighbours), and always at
    least one. ``overflow_number`` -> ``overflow_nums`` (3 edits in 13) is
    one; ``dump_enable`` -> ``dump_path`` or ``bench_path`` -> ``nfs_path``
    (another word) is not."""
    one, two = typed.lower(), known.lower()
    if _bare(one) == _bare(two):
        return True
    return _distance(one, two) <= max(1, min(len(one), len(two)) // 4)


def _bare(text: str) -> str:
    return text.replace("_", "").replace("-", "").replace(" ", "")


def _distance(one: str, two: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment)."""
    previous2: list[int] = []
    previous = list(range(len(two) + 1))
    for i, a in enumerate(one, 1):
        current = [i] + [0] * len(two)
        for j, b in enumerate(two, 1):
            cost = 0 if a == b else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a == two[j - 2] and one[i - 2] == b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]
