"""The lint engine: load, parse, validate, run the rules, collect.

Stages, each feeding the next only what passed it (one diagnostic per
fault): syntax (loader.py, PL001-PL007), schema (rules/schema.py,
PL101-PL107), then every registered semantic rule over (config, context).
A rule's finding drops the findings it declares it supersedes
(``RuleInfo.supersedes``, e.g. PL601 over the 26.x schema's PL103 on the
task): relations between rules live on the rule, not here.
Positions are computed from the text only for what is reported.
"""
from __future__ import annotations

from collections import namedtuple

from ..exit import ExitStatus
from .config_view import ConfigView
from .context import Context
from .diagnostic import Diagnostic, Finding, Severity
from .fixes.edits import resolve
from .loader import Document, load, nested_too_deep
from .positions import split
from .rules import load_all
from .selection import Selection, matches

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, Optional

    from .rules.base import RuleInfo


class Result:
    """Outcome of linting one file.

    Attributes:
        path: the file, as given.
        diagnostics: its diagnostics, sorted by position.
        unreadable: it could not be read at all (PL006: the run exits 2).
        source: the text that was linted (None when it was not decoded),
            which the text report quotes instead of reading the file again
            (standard input has no file); not compared.
        folder: a folder a walk could not list, not a file (counted apart
            in the summary).
    """

    __slots__ = ("path", "diagnostics", "unreadable", "source", "folder")

    def __init__(self, path: str, diagnostics: list[Diagnostic], unreadable: bool = False,
                 source: Optional[str] = None, folder: bool = False) -> None:
        self.path = path
        self.diagnostics = diagnostics
        self.unreadable = unreadable
        self.source = source
        self.folder = folder

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and (self.path, self.diagnostics, self.unreadable, self.folder) == (
            other.path, other.diagnostics, other.unreadable, other.folder)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (f"Result(path={self.path!r}, diagnostics={self.diagnostics!r}, unreadable={self.unreadable!r}, "
                f"folder={self.folder!r})")


class LintRun(namedtuple("LintRun", "results status")):
    """What a lint of several files gave: ``results``, a Result per file,
    and ``status``, the exit status of the whole run (0, 1 or 2: see
    exit_status)."""

    __slots__ = ()


#: added to PL103 of a task no release knows and near none: why no fix is applied to the file
FOREIGN = (" (no fix is applied to this file while its task names no msprobe task: it may be another program's "
           "config; give it an msprobe task, or leave it out of the files linted)")

def lint_file(path: str, context: Optional[Context] = None, *, selection: Optional[Selection] = None,
              overrides: Optional[Mapping[str, Any]] = None, raw: Optional[bytes] = None,
              extra_findings: Iterable[Finding] = ()) -> Result:
    """Lint one config file.

    Args:
        path: the config's path (shown in diagnostics as given).
        context: what is known of the scenario; unknown when None.
        selection: rule selection and re-grading.
        overrides: top-level keys replacing the file's values before the
            rules run (probe_runtime's keyword arguments); their findings
            point at the key in the file when it is there.
        raw: the file's bytes, when already read.
        extra_findings: findings from elsewhere (the script analysis) to be
            filtered and graded with the rest.
    Returns:
        A Result, diagnostics sorted by position, without duplicates.
    Never raises for bad input.
    """
    context = context or Context()
    selection = selection or Selection()
    doc = load(path, raw)
    findings = list(doc.findings)
    if not doc.fatal:
        data = dict(doc.data)
        if overrides:
            data.update({k: v for k, v in overrides.items() if v is not None})
        found = check_data(data, context, selection=selection, path=path, skip=doc.nonfinite)
        if overrides:  # a value given in code, not the file's: no edit of the file fixes it, and its
            # position is the file's key, whose value is not the one judged: the message says so
            found = [_given_in_code(f, doc.data) if _overridden(f.pointer, overrides) else f for f in found]
        findings.extend(found)
    elif any(f.code == "PL001" for f in findings) and selection.enabled("PL410"):
        from .rules.paths import config_name_findings  # the name is wrong whatever the file holds

        findings.extend(config_name_findings(path, context.check_fs))
    findings.extend(extra_findings)
    return Result(path, to_diagnostics(findings, doc, selection), unreadable=doc.unreadable,
                  source=doc.text or None)


def unreadable_result(path: str, message: str, *, selection: Optional[Selection] = None) -> Result:
    """The Result for something that could not be read at all (PL006 with
    ``message``, e.g. a folder ``probe lint DIR`` cannot list); the run
    exits 2."""
    finding = Finding("PL006", message, path=path)
    return Result(path, to_diagnostics([finding], None, selection or Selection()), unreadable=True)


def _given_in_code(finding: Finding, file_data: Any) -> Finding:
    """A finding about a top-level key probe_runtime's caller gave as a
    keyword argument: no fix of the file, and a message that says the value
    judged is the keyword's (the position is the file's key, when it has
    one)."""
    key = split(finding.pointer or "")[0]
    where = ", which replaces the file's value" if isinstance(file_data, dict) and key in file_data else ""
    return finding._replace(fix=None, message=f"{finding.message} (the {key}= given to PrecisionDebugger{where})")


def _overridden(ptr: Optional[str], overrides: Mapping[str, Any]) -> bool:
    tokens = split(ptr or "")
    return bool(tokens) and overrides.get(tokens[0]) is not None


def check_data(data: dict, context: Context, *, selection: Selection, path: str = "<config>",
               skip: Iterable[str] = ()) -> list[Finding]:
    """Schema stage and semantic rules over parsed ``data`` (no positions).
    An ATB dump config (lint/atb.py) gets its own schema only, outside
    probe_runtime (whose PrecisionDebugger cannot take one).

    Rules crash-proofing: a rule that raises is reported as an internal
    error finding (code of the rule, severity error) rather than a
    traceback, since a linter that hides a crash would pass a bad config.
    """
    from .profiles import ATB_ONLY_KEYS, select
    from .rules.schema import foreign_task, meant_task, validate

    if not (ATB_ONLY_KEYS.isdisjoint(data) and data.get("task") != "all") and not context.runtime:
        from .atb import is_atb_config

        if is_atb_config(data):  # msprobe's ATB dump config: its own schema, none of PrecisionDebugger's rules
            try:
                return validate(data, skip=skip, profile="atb")[0]
            except RecursionError:
                return [nested_too_deep(data)]

    rules = load_all()
    profile, why = select(context)
    script = context.script
    given = ("dump_path",) if script is not None and getattr(script, "passes_dump_path", False) else ()
    try:  # json.loads read it, but jsonschema recurses further per level (and repr()s a value it rejects)
        findings, bad = validate(data, skip=skip, profile=profile.name, why=why, given_in_code=given,
                                 framework=context.framework, runtime=context.runtime)
    except RecursionError:  # nested nearly as deep as json.loads reads: PL001, as deeper is, never a traceback
        return [nested_too_deep(data)]
    # a misspelt task with a clear did-you-mean: the rules judge the task meant, so the typo's PL103 does
    # not hide the level's or the section's findings until it is fixed (a lint reports every problem at once)
    meant = meant_task(data, profile.name) if "/task" in bad else None
    view = ConfigView(data, bad, path, profile=profile.name, given_in_code=frozenset(given), meant_task=meant)
    for info in rules.values():
        if info.check is None or not selection.enabled(info.code):
            continue
        if info.filesystem and not context.check_fs:
            continue
        try:
            findings.extend(info.check(view, context))
        except RecursionError:  # a rule recursing into a value nested too deep for it: the same PL001
            return [nested_too_deep(data)]
        except Exception as err:  # pragma: no cover - a bug in a rule
            findings.append(Finding(info.code, f"internal error in rule {info.code} ({info.name}): "
                                               f"{type(err).__name__}: {err}; please report it",
                                    severity=Severity.ERROR))
    if "/task" in bad and foreign_task(data, profile.name):  # maybe another program's config: fix nothing in it
        findings = [f._replace(fix=None, message=f.message + FOREIGN) if f.code == "PL103" and f.pointer == "/task"
                    else f._replace(fix=None) for f in findings]
    superseded = {pair for f in findings if f.code in rules for pair in rules[f.code].supersedes}
    if superseded:  # a rule's precise diagnosis replaces the findings it declares (RuleInfo.supersedes)
        findings = [f for f in findings if (f.code, f.pointer) not in superseded]
    return findings


#: the codes of a file msprobe cannot even load (as ruff reports a syntax error whatever is selected):
#: one that cannot be read (PL006), is not UTF-8 or starts with a byte-order mark (PL004: json.load
#: refuses it), is not JSON (PL001, PL008) or not a JSON object (PL003). Never filtered nor re-graded
#: (``--ignore``, ``--select``, per-file ignores, a severity): nothing else is checked on such a file
#: (PL004 aside), so turning them off would make a file msprobe refuses "pass"
ALWAYS_REPORTED = ("PL001", "PL003", "PL004", "PL006", "PL008")


def to_diagnostics(findings: Iterable[Finding], doc: Optional[Document], selection: Selection) -> list[Diagnostic]:
    """Position, filter, grade, de-duplicate and sort findings; those of a
    file msprobe cannot load are kept as errors whatever ``selection`` says
    (see :data:`ALWAYS_REPORTED`)."""
    rules = load_all()
    out: dict[tuple, Diagnostic] = {}
    for finding in findings:
        always = finding.code in ALWAYS_REPORTED
        if not always and (not selection.enabled(finding.code)
                           or not selection.keeps(finding.code, finding.pointer)):
            continue
        info: Optional[RuleInfo] = rules.get(finding.code)
        severity = selection.severity.get(finding.code) or finding.severity or (
            info.severity if info else Severity.ERROR)
        if always or (selection.always and matches(finding.code, selection.always)):
            severity = Severity.ERROR
        if finding.line is not None:
            line, column = finding.line, finding.column or 1
            end_line, end_column = finding.end_line, finding.end_column
            if end_line is None or end_column is None:  # a point (a syntax error, a script call): one character
                end_line, end_column = line, column + 1
        elif doc is not None and finding.pointer is not None and doc.text:
            span = doc.positions.locate(finding.pointer, finding.at)
            line, column, end_line, end_column = span.line, span.column, span.end_line, span.end_column
        else:
            line, column, end_line, end_column = 1, 1, None, None
        diagnostic = Diagnostic(path=finding.path or (doc.path if doc else "<config>"), line=line, column=column,
                                code=finding.code, severity=severity, message=_encodable(finding.message) or "",
                                hint=_encodable(finding.hint),
                                pointer=_encodable(finding.pointer) if finding.path is None else None,
                                end_line=end_line, end_column=end_column,
                                fix=resolve(finding.fix, doc) if finding.fix is not None else None)
        out.setdefault((diagnostic.path, line, column, diagnostic.code, diagnostic.message), diagnostic)
    return _one_fix_per_key(sorted(out.values(), key=Diagnostic.sort_key))


def _one_fix_per_key(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` where at most one fix creates each key: two fixes
    writing the same key (three slips of ``overflow_nums`` each renamed to
    it, a rename and a move into one section) can never both apply, since
    none renames or moves over a key that is there, so ``--fix`` applies
    one and the others are left. Only that one keeps its fix (the first
    safe one in the order ``--fix`` takes them, else the first), so the
    report counts as fixable what ``--fix`` fixes; the others' hint says
    which fix makes the key."""
    groups: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        if diagnostic.fix is not None and diagnostic.fix.edits:
            for written in diagnostic.fix.writes:
                groups.setdefault(written, []).append(diagnostic)
    dropped: dict[int, Diagnostic] = {}
    for written, group in groups.items():
        group = [d for d in group if id(d) not in dropped]
        if len(group) < 2:
            continue
        group.sort(key=lambda d: (min(e.start for e in d.fix.edits), d.sort_key()))  # type: ignore[union-attr]
        keep = next((d for d in group if d.fix.safe), group[0])  # type: ignore[union-attr]
        name = split(written)[-1]
        for other in group:
            if other is not keep:
                note = (f"only one key can be {name!r}: --fix makes it at {keep.line}:{keep.column} "
                        f"({keep.fix.description})")  # type: ignore[union-attr]
                hint = other.hint or ""
                hint = f"{hint} {note[0].upper()}{note[1:]}" if hint.endswith(("?", ".")) else \
                    f"{hint}; {note}" if hint else note
                dropped[id(other)] = other._replace(fix=None, hint=hint)
    if not dropped:
        return diagnostics
    return [dropped.get(id(d), d) for d in diagnostics]


def _encodable(text: Optional[str]) -> Optional[str]:
    """``text`` with lone surrogates (a config's ``"\\ud800"`` escapes, which
    no UTF-8 output can carry) written as ``\\ud800``."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def once_per_run(results: Iterable[Result], seen: Optional[set] = None) -> set:
    """Drop, in place, each finding about another file (the training
    script's, shown at its own line) that an earlier result of the run
    already holds: the script is analysed with every config it is linted
    with, and the same finding is one finding, said and counted once,
    under the first config. ``seen`` carries what was said across several
    runs (``probe run`` lints each config the job reads on its own);
    returns it, updated."""
    seen = set() if seen is None else seen
    for result in results:
        kept = []
        for diagnostic in result.diagnostics:
            if diagnostic.path != result.path:
                key = (diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.code, diagnostic.message)
                if key in seen:
                    continue
                seen.add(key)
            kept.append(diagnostic)
        result.diagnostics = kept
    return seen


def exit_status(results: Iterable[Result], *, strict: bool = False) -> int:
    """0 no errors; 1 an error (or a warning with ``strict``); 2 a file
    could not be read."""
    status = ExitStatus.OK
    for result in results:
        if result.unreadable:
            return ExitStatus.USAGE
        for diagnostic in result.diagnostics:
            if diagnostic.severity is Severity.ERROR or (strict and diagnostic.severity is Severity.WARNING):
                status = ExitStatus.PROBLEMS
    return status
