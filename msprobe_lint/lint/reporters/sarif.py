"""``--format sarif``: a SARIF 2.1.0 log for code-scanning UIs.

One run: ``tool.driver`` names msprobe-lint with its version and its
page (``informationUri``, the package index page) and lists
every rule (id, name, short and full description, help with the bad and
good examples, default level); each diagnostic is a result with ruleId,
ruleIndex, level, message, a physical location (artifact URI relative to
the working folder under ``%SRCROOT%``, region with start and, where known,
end) and the JSON pointer as a logical location, and, when the rule knows
an exact replacement, ``fixes`` (see :func:`sarif_fix`). Columns count
Unicode code points (``columnKind``), as the linter's do.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from ..diagnostic import Diagnostic, Severity
from ..engine import Result

# The tool's page (SARIF tool.driver.informationUri): pyproject.toml names no
# project URL, so its package index page.
INFORMATION_URI = "https://pypi.org/project/msprobe-lint/"

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _fence(text: str) -> str:
    return "```\n" + text + "\n```"


def rule_descriptor(info: Any) -> dict[str, Any]:
    """A SARIF reportingDescriptor for one RuleInfo."""
    rationale = " ".join(info.rationale.split())
    bad, good = info.section("Bad"), info.section("Good")
    text = rationale
    markdown = rationale
    if bad:
        text += "\n\nBad:\n" + bad
        markdown += "\n\n**Bad:**\n\n" + _fence(bad)
    if good:
        text += "\n\nGood:\n" + good
        markdown += "\n\n**Good:**\n\n" + _fence(good)
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": rationale},
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[info.severity]},
        "properties": {"tags": [info.family]},
    }


def artifact_location(path: str, base: Optional[Path] = None) -> dict[str, str]:
    """``{"uri": ..., "uriBaseId": "%SRCROOT%"}`` for a path under the
    working folder (relative URI, forward slashes, percent-encoded); an
    absolute ``file://`` URI for a path outside it."""
    base = base or Path.cwd()
    absolute = Path(os.path.abspath(path))
    for root in (Path(os.path.abspath(base)), base.resolve()):
        try:
            relative = absolute.relative_to(root)
        except ValueError:
            continue
        # a file name that is not UTF-8 (a walk can find one) is percent-encoded byte by byte
        return {"uri": quote(os.fsencode(relative.as_posix())), "uriBaseId": SRCROOT}
    return {"uri": absolute.as_uri()}


def _result(diagnostic: Diagnostic, rule_index: dict[str, int], base: Path) -> dict[str, Any]:
    line, column, end_line, end_column = diagnostic.span()
    region: dict[str, int] = {"startLine": line, "startColumn": column}
    if end_line is not None and end_column is not None:
        region["endLine"] = end_line
        region["endColumn"] = end_column
    text = diagnostic.message if diagnostic.message.endswith(".") else diagnostic.message + "."
    if diagnostic.hint:
        text += f" Help: {diagnostic.hint}"
    location: dict[str, Any] = {"physicalLocation": {
        "artifactLocation": artifact_location(diagnostic.path, base), "region": region}}
    properties: dict[str, Any] = {"severity": diagnostic.severity.value}
    if diagnostic.hint:
        properties["hint"] = diagnostic.hint
    if diagnostic.pointer is not None:
        location["logicalLocations"] = [{"fullyQualifiedName": diagnostic.pointer or "/",
                                         "name": diagnostic.pointer.rpartition("/")[2] or "(root)",
                                         "kind": "property" if diagnostic.pointer else "object"}]
        properties["pointer"] = diagnostic.pointer
    result: dict[str, Any] = {"ruleId": diagnostic.code, "level": LEVELS[diagnostic.severity],
                              "message": {"text": text}, "locations": [location], "properties": properties}
    if diagnostic.code in rule_index:
        result["ruleIndex"] = rule_index[diagnostic.code]
    if diagnostic.fix is not None:
        result["fixes"] = [sarif_fix(diagnostic, base)]
    return result


def sarif_fix(diagnostic: Diagnostic, base: Path) -> dict[str, Any]:
    """A SARIF fix object: one artifactChange with a replacement per edit,
    the deleted region by character offset and length (code points, a
    byte-order mark counted); ``properties.applicability`` is ``safe`` or
    ``unsafe``."""
    fix = diagnostic.fix
    assert fix is not None
    replacements = [{"deletedRegion": {"charOffset": edit.start, "charLength": edit.end - edit.start},
                     "insertedContent": {"text": edit.text}} for edit in fix.edits]
    return {"description": {"text": fix.description},
            "artifactChanges": [{"artifactLocation": artifact_location(diagnostic.path, base),
                                 "replacements": replacements}],
            "properties": {"applicability": fix.applicability}}


def build_log(results: Iterable[Result], *, base: Optional[Path] = None) -> dict[str, Any]:
    """The SARIF log as a dict (see the module docstring)."""
    from ... import __version__
    from ..rules import load_all

    base = base or Path.cwd()
    rules = list(load_all().values())
    rule_index = {info.code: index for index, info in enumerate(rules)}
    results = list(results)
    sarif_results = [_result(d, rule_index, base) for r in results for d in r.diagnostics]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "msprobe-lint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI,
                                "rules": [rule_descriptor(info) for info in rules]}},
            "originalUriBaseIds": {SRCROOT: {"uri": base.resolve().as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{"executionSuccessful": not any(r.unreadable for r in results)}],
            "results": sarif_results,
        }],
    }


def render(results: Iterable[Result], *, color: bool = False) -> str:
    """The SARIF report (``color`` is ignored)."""
    return json.dumps(build_log(results), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
