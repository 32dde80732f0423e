"""The rule catalogue: every code the linter can report, with its metadata.

Each module of this folder is one family of rules (syntax, schema, levels,
ranks, paths, script, environment), declaring its rules with
``base.rule``/``base.define``. :func:`load_all` imports every module it
finds in the folder, so a new family file is loaded without being listed
anywhere, and the families import only ``base``: the catalogue points at
the rules, never the other way round.

Example::

    >>> from msprobe_lint.lint.rules import load_all
    >>> load_all()["PL201"].name
    'level-not-allowed'
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from .base import RuleInfo

_CATALOGUE: dict[str, "RuleInfo"] = {}


def load_all() -> dict[str, "RuleInfo"]:
    """Every rule, sorted by code (the families are imported once, on the
    first call). The dict is shared: read it, do not change it."""
    if not _CATALOGUE:
        from importlib import import_module

        from .base import RULES

        for family in _family_names():
            import_module(f"{__name__}.{family}")
        _CATALOGUE.update(sorted(RULES.items()))
    return _CATALOGUE


def _family_names() -> list[str]:
    """The modules of this folder but ``__init__`` and ``base``, sorted."""
    import os

    names = {entry[:-3] for folder in __path__ for entry in os.listdir(folder)
             if entry.endswith(".py") and entry[:-3].isidentifier()}
    return sorted(names - {"__init__", "base"})


def lookup(text: str) -> "RuleInfo":
    """The rule ``text`` names: a code in any case (``pl204``) or a rule
    name (``level-not-allowed``).

    Raises:
        LookupError: with a message for the user: ``text`` is a prefix of
            several codes (as ``--select`` takes), or no rule (with the
            closest code when there is one).
    """
    rules = load_all()
    wanted = text.strip()
    info = rules.get(wanted.upper()) or next((r for r in rules.values() if r.name == wanted.lower()), None)
    if info is not None:
        return info
    prefixed = [code for code in rules if code.startswith(wanted.upper())] if wanted else []
    if prefixed:
        raise LookupError(f"{text!r} is a prefix of {len(prefixed)} rules ({', '.join(prefixed)}); "
                          "explain takes one code")
    from difflib import get_close_matches

    # a code is close when one edit away (PL1O1, PL1011, PL110): PL999 is not "PL409"; of several, the most
    # alike (PL1O1 is PL101, not PL411: difflib alone rated them the same and took the larger)
    close = (get_close_matches(wanted.upper(), [code for code in rules if _one_edit(wanted.upper(), code)], n=1,
                               cutoff=0)
             or get_close_matches(wanted.lower(), [r.name for r in rules.values()], n=1))
    raise LookupError(f"unknown rule {text!r}" + (f"; did you mean {close[0]}?" if close else "; see `probe rules`"))


def _one_edit(typed: str, code: str) -> bool:
    """``typed`` is ``code`` with one character changed, added or left
    out, or two neighbours swapped.

    >>> _one_edit("PL1O1", "PL101"), _one_edit("PL110", "PL101"), _one_edit("PL999", "PL409")
    (True, True, False)
    """
    if typed == code or abs(len(typed) - len(code)) > 1:
        return False
    if len(typed) == len(code):
        differ = [i for i, (x, y) in enumerate(zip(typed, code)) if x != y]
        return len(differ) == 1 or (len(differ) == 2 and differ[1] == differ[0] + 1
                                    and typed[differ[0]] == code[differ[1]] and typed[differ[1]] == code[differ[0]])
    short, long = sorted((typed, code), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))
