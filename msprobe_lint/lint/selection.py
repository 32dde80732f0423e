"""Which rules run, and how they are graded: rule-code prefixes as
``--select``/``--ignore``/``--extend-select`` and ``[tool.probe-lint]``
give them, parsed, checked against the catalogue and matched.

A prefix is ``ALL`` or ``PL`` and one to three digits (``PL2`` is the level
family, ``PL201`` one rule); it must match at least one rule.

Example::

    >>> from msprobe_lint.lint.selection import Selection, parse_codes
    >>> selection = Selection(select=parse_codes(["pl2, PL401"]))
    >>> selection.enabled("PL204"), selection.enabled("PL101")
    (True, False)
"""
from __future__ import annotations

from collections import namedtuple
from types import MappingProxyType

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterable, Optional

ALL = "ALL"
#: the rules probe_runtime cannot run without, enforced as errors whatever
#: the project's settings say when the lint takes the runtime's view
#: (``probe run``, ``PrecisionDebugger``'s gate: ``Selection.always``): a
#: config that breaks them cannot run at all (not JSON, a missing or
#: mistyped key the debugger reads, a level, task or step/rank entry it
#: cannot use); turning them off only moved the refusal into the job. Nor
#: can it run safely into a dump_path it cannot write (PL407: detection is
#: turned off, and the job ends with a false "no overflow found") or that
#: holds another run's dump (PL411: the new run overwrites and mixes with
#: it, and ``probe report`` names the old run's origin)
RUNTIME_ESSENTIAL = ("PL00", "PL102", "PL103", "PL104", "PL107", "PL201", "PL205", "PL301", "PL407", "PL411")


class SelectionError(ValueError):
    """A code prefix that is malformed or matches no rule; the message says
    which and names the code."""


def matches(code: str, patterns: Iterable[str]) -> bool:
    """True when ``code`` starts with one of ``patterns`` (``PL2``,
    ``PL201``, ``ALL``)."""
    return any(p == ALL or code.startswith(p) for p in patterns)


def known_codes(prefix: str) -> list[str]:
    """The catalogue's codes that ``prefix`` matches, in order."""
    from .rules import load_all

    return [code for code in load_all() if matches(code, (prefix,))]


def check_code(text: str) -> str:
    """``text`` as a code prefix: stripped, upper case, and checked; a rule
    name (``unknown-key``, as ``probe explain`` takes) is its code.

    Raises:
        SelectionError: empty, not ``ALL`` nor ``PL`` and 1-3 digits nor a
            rule name, or a prefix of no rule.
    """
    code = text.strip().upper()
    if code != ALL and not (code.startswith("PL") and 3 <= len(code) <= 5 and code[2:].isdigit()):
        from .rules import load_all

        named = next((c for c, info in load_all().items() if info.name == text.strip().lower()), None)
        if named is not None:  # a rule name, as `probe explain` takes: unknown-key is PL101
            return named
        if not code:
            raise SelectionError("an empty code selects nothing (ruff refuses it too: `Unknown rule selector`); "
                                 "give codes such as PL2 or PL201, or leave the option out")
        from difflib import get_close_matches

        close = get_close_matches(text.strip().lower(), [info.name for info in load_all().values()], n=1)
        raise SelectionError(f"{code!r} is not a rule code, prefix or name (e.g. PL201, PL2, ALL, unknown-key)"
                             + (f"; did you mean {close[0]}?" if close else ""))
    if not known_codes(code):
        raise SelectionError(f"{code!r} matches no rule; see `probe rules`")
    return code


def parse_codes(values: Iterable[str]) -> tuple[str, ...]:
    """Comma-separated lists of code prefixes or rule names (as the command
    line repeats them), split and checked by :func:`check_code`; empty
    items between commas (``PL1,,PL2``, a trailing comma) are skipped, but
    a value with no code at all (``--select ""``) is refused: it would
    otherwise select every rule.

    Raises:
        SelectionError: see :func:`check_code`.
    """
    codes: list[str] = []
    for value in values:
        items = [item for item in value.split(",") if item.strip()]
        if not items:
            check_code("")
        codes.extend(check_code(item) for item in items)
    return tuple(codes)


class Selection(namedtuple("Selection", "select ignore severity pointer_ignores always",
                           defaults=((), (), MappingProxyType({}), (), ()))):
    """Which rules run and how they are graded (immutable; a changed copy:
    ``selection._replace(ignore=...)``).

    Attributes:
        select: code prefixes to run (empty = all).
        ignore: code prefixes not to run.
        severity: code -> Severity overrides.
        pointer_ignores: (JSON pointer prefix, code prefixes) pairs:
            findings at or under that pointer with those codes are dropped.
        always: code prefixes that run and grade as errors whatever the
            others say (:data:`RUNTIME_ESSENTIAL` in the runtime's view).
    """

    __slots__ = ()

    def enabled(self, code: str) -> bool:
        """True when ``code`` is selected and not ignored (or ``always``)."""
        if self.always and matches(code, self.always):
            return True
        if self.select and not matches(code, self.select):
            return False
        return not matches(code, self.ignore)

    def keeps(self, code: str, pointer: Optional[str]) -> bool:
        """False when a pointer-scoped ignore drops this finding."""
        if pointer is None or (self.always and matches(code, self.always)):
            return True
        for prefix, codes in self.pointer_ignores:
            if (pointer == prefix or pointer.startswith(prefix.rstrip("/") + "/")) and matches(code, codes):
                return False
        return True
