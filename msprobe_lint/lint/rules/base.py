"""What a rule is: :class:`RuleInfo`, and the two ways a family module
declares one. The family modules import this leaf module only; the
catalogue (``rules/__init__.py``) imports the families.

A rule is either a check function decorated with :func:`rule` (semantic
rules: ``(config, context) -> Iterable[Finding]``) or a code that an engine
stage emits (loading: PL001-PL007, schema: PL101-PL107), declared with
:func:`define`. Either way its documentation is written once, in a fixed
shape (a first paragraph saying why it matters, then ``Bad:`` and ``Good:``
examples), and rendered by ``probe explain``, ``probe rules``, SARIF and the
README table.

Example (in a family module)::

    from .base import rule

    @rule("PL299", "my-rule", "warning", "One line for probe rules")
    def my_rule(config, context):
        '''Why it matters.

        Bad:
            {"level": "L9"}
        Good:
            {"level": "L1"}
        '''
        return []
"""
from __future__ import annotations

from collections import namedtuple

from ..diagnostic import Finding, Severity

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Callable, Iterable, Optional

#: Every code declared so far (by the family modules imported so far);
#: read it through the catalogue, ``rules.load_all()``.
RULES: dict[str, "RuleInfo"] = {}


class RuleInfo(namedtuple("RuleInfo", "code name severity summary family raw_doc check filesystem fix supersedes",
                          defaults=(None, False, "", ()))):
    """Metadata of one rule code (immutable).

    Attributes:
        code: ``PL`` and three digits; the first digit is the family.
        name: kebab-case name, e.g. ``level-not-allowed``.
        severity: default severity.
        summary: one line for ``probe rules``.
        family: ``syntax``, ``schema``, ``levels``, ``ranks``, ``paths``,
            ``script`` or ``environment``.
        raw_doc: the documentation as written (a docstring, indented);
            ``doc`` is it dedented: a rationale, then ``Bad:`` and
            ``Good:`` examples.
        check: the check function, or None for codes an engine stage emits.
        filesystem: True for rules that only run with ``--check-fs``.
        fix: which fixes the rule attaches: ``"safe"``, ``"unsafe"``,
            ``"safe/unsafe"`` (which depends on the finding) or ``""``.
        supersedes: the findings of other rules that a finding of this one
            replaces, as (code, JSON pointer) pairs: when this rule reports
            in a file, the engine drops those (one diagnostic per fault: the
            precise diagnosis instead of its consequences). Declared on the
            rule, read by the engine for every rule alike.
    """

    __slots__ = ()

    @property
    def doc(self) -> str:
        """The documentation, dedented when asked (``probe explain``, SARIF
        and the server read it; a lint does not)."""
        return _dedent(self.raw_doc).strip()

    def section(self, title: str) -> str:
        """The text under ``Bad:``/``Good:`` in the doc, or ``""``."""
        lines = self.doc.splitlines()
        out: list[str] = []
        grab = False
        for line in lines:
            stripped = line.strip()
            if stripped in ("Bad:", "Good:"):
                grab = stripped == f"{title}:"
                continue
            if grab:
                out.append(line)
        return _dedent("\n".join(out)).strip("\n")

    @property
    def rationale(self) -> str:
        """The doc up to the first ``Bad:``."""
        return self.doc.split("Bad:")[0].strip()

    def explanation(self) -> str:
        """What ``probe explain CODE`` prints (no final newline): the
        headline, summary, rationale, and the indented bad and good
        examples."""
        def indent(text: str) -> str:
            return "\n".join("    " + line for line in text.splitlines())

        return (f"{self.code} {self.name} ({self.severity.value}, {self.family})\n\n{self.summary}.\n\n"
                f"{self.rationale}\n\nBad:\n{indent(self.section('Bad'))}\n\nGood:\n{indent(self.section('Good'))}")


def define(code: str, name: str, severity: str, summary: str, family: str, doc: str,
           *, check: Optional[Callable[..., Iterable[Finding]]] = None,
           filesystem: bool = False, fix: str = "", supersedes: tuple[tuple[str, str], ...] = ()) -> RuleInfo:
    """Register a code. Raises ValueError on a duplicate code or name, an
    unknown ``fix`` kind, or a ``supersedes`` entry that is not a
    (another code, JSON pointer) pair."""
    if fix not in ("", "safe", "unsafe", "safe/unsafe"):
        raise ValueError(f"rule {code}: fix must be safe, unsafe or safe/unsafe, not {fix!r}")
    for entry in supersedes:
        if not (isinstance(entry, tuple) and len(entry) == 2 and entry[0] != code
                and isinstance(entry[1], str) and (entry[1] == "" or entry[1].startswith("/"))):
            raise ValueError(f"rule {code}: supersedes takes (another code, JSON pointer) pairs, not {entry!r}")
    if code in RULES:
        raise ValueError(f"rule code {code} defined twice")
    if any(r.name == name for r in RULES.values()):
        raise ValueError(f"rule name {name} defined twice")
    info = RuleInfo(code, name, Severity(severity), summary, family,
                    doc, check, filesystem, fix, tuple(supersedes))
    RULES[code] = info
    return info


def rule(code: str, name: str, severity: str, summary: str, *, filesystem: bool = False, fix: str = "",
         supersedes: tuple[tuple[str, str], ...] = ()):
    """Decorator registering a check function under ``code``; its docstring
    is the rule's documentation and its module name the family
    (``supersedes``: see :class:`RuleInfo`)."""

    def wrap(func: Callable[..., Iterable[Finding]]):
        family = func.__module__.rsplit(".", 1)[-1]
        define(code, name, severity, summary, family, func.__doc__ or "", check=func,
               filesystem=filesystem, fix=fix, supersedes=supersedes)
        return func

    return wrap


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)
