"""Schema family (PL101-PL107): the config checked against the JSON Schema
in ``schema/``, each failing keyword mapped to a stable code (the way
cfn-lint maps schema keywords to rule ids).

Default map: ``additionalProperties`` -> PL101/PL105, ``type`` -> PL102,
``enum``/``const`` -> PL103, ``required`` -> PL104, ranges and lengths ->
PL107. A subschema may override it with ``x-probe-code`` (one code for every
failure under it, or a ``{keyword: code}`` map) and add ``x-probe-hint``.
``deprecated: true`` properties give PL106. Integers are strict: a JSON
number with a fraction or exponent (``3.0``, ``1e2``) or a boolean is not an
integer, unlike jsonschema's default type checker.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..diagnostic import Finding, FixSpec, remove, set_value
from ..positions import pointer as make_pointer
from .base import define

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator, Optional

KEYWORD_CODES = {
    "additionalProperties": "PL101",
    "type": "PL102",
    "enum": "PL103",
    "const": "PL103",
    "pattern": "PL103",
    "required": "PL104",
    "minLength": "PL107",
    "maxLength": "PL107",
    "minimum": "PL107",
    "maximum": "PL107",
    "exclusiveMinimum": "PL107",
    "exclusiveMaximum": "PL107",
    "minItems": "PL107",
    "maxItems": "PL107",
    "not": "PL107",
}
# Keys of MindSpore's own dump JSON: unknown to msprobe wherever they appear.
MINDSPORE_DUMP_KEYS = {"common_dump_settings", "e2e_dump_settings", "dump_mode", "path", "net_name",
                       "iteration", "saved_data", "input_output", "kernels", "support_device",
                       "op_debug_mode", "file_format"}

define("PL101", "unknown-key", "error", "Unknown key (suggests the closest known key)", "schema",
       fix="safe/unsafe", doc="""
    msprobe ignores keys it does not know, so a misspelt option silently keeps
    its default: "overflow_number": 3 leaves overflow_nums at 1 and the job
    stops after the first overflow. Keys of MindSpore's own dump JSON
    (iteration, support_device, ...) are unknown here too.

    Bad:
        "overflow_check": {"overflow_number": 3}
    Good:
        "overflow_check": {"overflow_nums": 3}
    """)

define("PL102", "wrong-type", "error", "Value has the wrong type", "schema", fix="safe", doc="""
    msprobe checks types at start-up and stops with one bare exception at a
    time. Integers are strict: 3.0, 1e2 and true are not integers. rank and
    step are lists even for one entry.

    Bad:
        "rank": 0,
        "overflow_check": {"overflow_nums": "3"}
    Good:
        "rank": [0],
        "overflow_check": {"overflow_nums": 3}
    """)

define("PL103", "value-not-allowed", "error", "Value not among the allowed ones", "schema", fix="safe/unsafe", doc="""
    Enumerated options (task, level, check_mode, summary_mode, ...) are
    case-sensitive. The hint gives the case-insensitive or closest match.

    Bad:
        "level": "l1"
    Good:
        "level": "L1"
    """)

define("PL104", "required-missing", "error", "Required key missing or empty", "schema", """
    dump_path is required and must not be empty: without it msprobe stops at
    start-up.

    Bad:
        {"task": "overflow_check", "level": "L1"}
    Good:
        {"task": "overflow_check", "level": "L1", "dump_path": "/data/dump"}
    """)

define("PL105", "key-misplaced", "warning", "Key valid elsewhere in the config, not here", "schema",
       fix="unsafe", doc="""
    The key is one msprobe knows, but in another place: at the top level
    instead of in its task section or the other way round. Where it stands it
    is ignored.

    Bad:
        {"task": "overflow_check", "overflow_nums": 3}
    Good:
        {"task": "overflow_check", "overflow_check": {"overflow_nums": 3}}
    """)

define("PL106", "deprecated-key", "warning", "Deprecated key", "schema", fix="safe", doc="""
    seed, is_deterministic, enable_dataloader and backward_input were
    accepted by older releases and no longer do anything.

    Bad:
        {"task": "overflow_check", "seed": 1234}
    Good:
        {"task": "overflow_check"}   (call seed_all() in the script)
    """)

define("PL107", "out-of-range", "error", "Number or list length out of range", "schema", """
    overflow_nums is -1 (no limit) or at least 1; a port is 0-65535; scope is
    empty or names exactly two APIs/Cells; data_mode "all" stands alone.

    Bad:
        "overflow_check": {"overflow_nums": 0}
    Good:
        "overflow_check": {"overflow_nums": 1}
    """)


@lru_cache(maxsize=None)
def _validator(profile: str = "8.3"):
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    from ..schema.files import load_schema

    def is_integer(_checker: Any, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_integer)
    cls = extend(Draft202012Validator, type_checker=checker)
    return cls(load_schema(profile))


@lru_cache(maxsize=None)
def key_index(profile: str = "8.3") -> dict[str, dict[str, Any]]:
    """Location (``""`` for top level, else the section name) -> {key:
    resolved subschema} of every key the schema of release ``profile``
    accepts."""
    from ..schema.files import load_schema, resolve, sections

    root = load_schema(profile)
    index = {"": {k: resolve(v, root) for k, v in root["properties"].items()}}
    for name, section in sections(root).items():
        index[name] = {k: resolve(v, root) for k, v in section.get("properties", {}).items()}
    return index


def _where(location: str) -> str:
    return "at the top level" if not location else f"in the {location} section"


def describe_type(value: Any) -> str:
    """JSON type name of a parsed value, for messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number with a fraction or exponent" if value == value and abs(value) != float("inf") else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def suggest(word: str, choices: Iterable[str]) -> Optional[str]:
    """Case-insensitive match, else the closest choice by similarity."""
    import difflib

    choices = list(choices)
    for choice in choices:
        if choice.lower() == word.lower():
            return choice
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
        close = [c for c in choices if close and c.lower() == close[0]]
    return close[0] if close else None


def _override(error: Any) -> Optional[str]:
    code = error.schema.get("x-probe-code") if isinstance(error.schema, dict) else None
    if isinstance(code, str):
        return code
    if isinstance(code, dict):
        return code.get(error.validator)
    return None


def _leaf(error: Any) -> Any:
    """For anyOf/oneOf failures without an override, the most relevant
    branch error."""
    from jsonschema.exceptions import best_match

    while error.validator in ("anyOf", "oneOf", "allOf") and error.context and not _override(error):
        # A branch whose type matched the value says more than a branch of
        # another type: "l3" in a list of summary modes is an enum error,
        # not "summary_mode must be a string".
        wrong_type = {e.relative_schema_path[0] for e in error.context
                      if e.validator == "type" and not e.relative_path}
        matched = [e for e in error.context if e.relative_schema_path[0] not in wrong_type]
        error = best_match(matched or error.context)
    return error


def _name(path: list) -> str:
    for part in reversed(path):
        if isinstance(part, str):
            return part if part == path[-1] else f"{part}[{path[-1]}]"
    return "value"


def validate(data: dict, *, skip: Iterable[str] = (), profile: str = "8.3",
             why: str = "the default target") -> tuple[list[Finding], set[str]]:
    """Run the schema of release ``profile`` over ``data``.

    Args:
        data: the parsed config (a dict).
        skip: pointers already reported (NaN literals): no schema finding
            on them.
        profile: ``"8.1"``, ``"8.3"`` or ``"26"`` (profiles.py).
        why: where the profile came from, for the messages of findings
            whose verdict depends on it (a key or task another release
            accepts).
    Returns:
        (findings, bad): the findings, and the pointers of every value that
        failed a structural check (the semantic rules must not see them).
    """
    skipped = set(skip)
    findings: list[Finding] = []
    bad: set[str] = set(skipped)
    from ..schema.fast import is_valid  # a valid config never needs jsonschema

    for error in () if is_valid(data, profile) else _validator(profile).iter_errors(data):
        path = list(error.absolute_path)
        ptr = make_pointer(*path)
        if ptr in skipped:
            continue
        if error.validator == "additionalProperties":
            findings.extend(_release_note(f, profile, why) for f in _unknown_keys(error, path, profile))
            continue
        leaf = _leaf(error)
        code = _override(error) or _override(leaf) or KEYWORD_CODES.get(leaf.validator, "PL102")
        hint = (error.schema.get("x-probe-hint") if isinstance(error.schema, dict) else None) or (
            leaf.schema.get("x-probe-hint") if isinstance(leaf.schema, dict) else None)
        finding = _describe(code, leaf, path, ptr, hint)
        if ptr == "/task" and isinstance(error.instance, str):
            finding = _release_note(finding, profile, why, name=error.instance)
        findings.append(finding)
        bad.add(ptr)
    findings.extend(_release_note(f, profile, why) for f in _deprecated(data, profile))
    return findings, bad


def _release_note(finding: Finding, profile: str, why: str, name: Optional[str] = None) -> Finding:
    """Add, to a finding about a key or task that another release line
    accepts, what it is there and which release the verdict is for."""

    from ..profiles import MIGRATION_NOTES, PROFILES, line

    tokens = (finding.pointer or "").strip("/").split("/")
    name = name or tokens[-1]
    location = tokens[0] if len(tokens) > 1 else ""
    note = MIGRATION_NOTES.get((line(profile), name))
    from ..profiles import DEFAULT

    others = [p for p in sorted(PROFILES.values(), key=lambda p: p.name != DEFAULT) if p.name != profile and (
        name in key_index(p.name).get(location, {}) or (finding.pointer == "/task" and name in p.tasks))]
    suffix = f" [judged against {PROFILES[profile].label}: {why}]"
    if finding.code == "PL106":  # the schema's description already says why
        if name in PROFILES[profile].deprecate:
            return finding._replace(message=finding.message + suffix)
        return finding
    if note is None and not others:
        return finding
    if note is None:
        note = f"{name!r} is accepted by {', '.join(p.label for p in others)}"
    target = others[0].name if others else None
    hint = finding.hint
    if target and finding.code != "PL106":
        hint = (f"if the config is for {PROFILES[target].label}, lint it with --msprobe-version {target}; "
                f"to convert it, probe migrate CONFIG --to {PROFILES[profile].name}")
    return finding._replace(message=f"{finding.message}; {note}{suffix}", hint=hint)


def _describe(code: str, error: Any, path: list, ptr: str, hint: Optional[str]) -> Finding:
    name = _name(path)
    value = error.instance
    keyword = error.validator
    if code == "PL104" and keyword == "required":
        missing = [k for k in error.validator_value if k not in (value or {})]
        where = _where(path[0] if path else "")
        return Finding("PL104", f"required key {', '.join(map(repr, missing))} is missing {where}", pointer=ptr,
                       at="key", hint=hint or 'add e.g. "dump_path": "/absolute/path/to/dump"')
    if code == "PL104":
        return Finding("PL104", f"{name} is empty", pointer=ptr,
                       hint=hint or "give an absolute path such as /home/user/dump")
    if code == "PL301":
        return Finding("PL301", f"{name} entry {_json(value)} is neither an integer >= 0 nor an \"a-b\" range",
                       pointer=ptr, hint=hint or _index_hint(value), fix=_as_integer(value, ptr))
    if keyword == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        article = "an" if expected[0] in "aeiou" else "a"
        fix = hint
        edit = _as_integer(value, ptr) if expected == "integer" else None
        if fix is None and edit is not None:
            fix = f"write {int(value)}" + (" without quotes" if isinstance(value, str) else "")
        if expected == "array" and not isinstance(value, (dict, list)):
            fix = fix or (f"write [{_json(value)}]" if value not in (None, "") else "write []")
            edit = FixSpec(f"write {name} as a list", (("value", ptr, "[]"),) if value in (None, "")
                           else (("wrap", ptr),))
        return Finding("PL102", f"{name} must be {article} {expected}, not {describe_type(value)} {_json(value)}",
                       pointer=ptr, hint=fix, fix=edit)
    if keyword in ("enum", "const"):
        allowed = error.validator_value if keyword == "enum" else [error.validator_value]
        guess = suggest(value, [str(a) for a in allowed]) if isinstance(value, str) else None
        fix = hint or (f"did you mean {guess!r}?" if guess else f"use one of: {', '.join(map(str, allowed))}")
        # Only the case differs: plainly meant. A near spelling may be another value meant.
        edit = set_value(ptr, guess, f"replace {value!r} with {guess!r}",
                         safe=guess.lower() == value.lower()) if guess and guess in allowed else None
        return Finding(code, f"{_json(value)} is not an allowed {name}; allowed: {', '.join(map(str, allowed))}",
                       pointer=ptr, hint=fix, fix=edit)
    if keyword == "not":
        return Finding(code, f"{name} {_json(value)} is out of range", pointer=ptr,
                       hint=hint or ("use -1 (no limit) or a count >= 1" if name == "overflow_nums" else None))
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[keyword]
        extra = " (-1 means no limit)" if name == "overflow_nums" else ""
        return Finding(code, f"{name} {_json(value)} is out of range: must be {bound} {error.validator_value}{extra}",
                       pointer=ptr, hint=hint)
    if keyword in ("minItems", "maxItems"):
        return Finding(code, f"{name} has {len(value)} item(s): {error.message}", pointer=ptr, hint=hint)
    if keyword in ("minLength", "maxLength"):
        return Finding(code, f"{name} length is out of range: {error.message}", pointer=ptr, hint=hint)
    return Finding(code, f"{name}: {error.message}", pointer=ptr, hint=hint)


def _index_hint(value: Any) -> str:
    """A fix for a bad rank/step entry."""
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()) and not value.strip().startswith("-"):
        return f"write {int(value)} (a bare number string is not accepted; ranges are \"a-b\")"
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return "ranks and steps count from 0"
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return f"write {int(value)}"
    return 'write an integer such as 3, or a range such as "2-5" (first <= last)'


# ASCII digits only: str.isdigit() also accepts '¹' or '٣', which int() refuses or reads otherwise.
_INTEGER = re.compile(r"-?[0-9]+")


def _as_integer(value: Any, ptr: str) -> Optional[FixSpec]:
    """The fix writing ``3.0`` or ``"3"`` as the integer 3 (safe: the
    same number, in the type msprobe reads); None for anything else."""
    number: Optional[int] = None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        number = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()) and len(value.strip()) < 19:
        number = int(value)
    if number is None:
        return None
    return set_value(ptr, number, f"write {number}")


def _json(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unknown_keys(error: Any, path: list, profile: str = "8.3") -> Iterator[Finding]:
    import difflib

    location = path[0] if path else ""
    index = key_index(profile)
    here = index.get(location, {})
    for key in error.instance:
        if key in here:
            continue
        ptr = make_pointer(*path, key)
        elsewhere = [loc for loc, keys in index.items() if loc != location and key in keys]
        if elsewhere:
            target = elsewhere[0]
            # Unsafe: where it stands it is ignored; moved, it takes effect. Only
            # when one place reads it (scope fits several task sections).
            move = FixSpec(f"move {key!r} {_move_hint(target)}", (("move", ptr, target),), safe=False) \
                if len(elsewhere) == 1 and len(path) <= 1 else None
            yield Finding("PL105", f"{key!r} is not read {_where(location)}; msprobe reads it {_where(target)}",
                          pointer=ptr, at="key", hint=f"move {key!r} {_move_hint(target)}", fix=move)
            continue
        guess = suggest(key, list(here))
        fix = None
        if guess and guess not in error.instance and key not in MINDSPORE_DUMP_KEYS:
            # Safe when the match is clear: the same key in another case, or
            # the only known key that close to it.
            clear = guess.lower() == key.lower() or len(difflib.get_close_matches(key, list(here), n=2, cutoff=0.6)) < 2
            fix = FixSpec(f"rename {key!r} to {guess!r}", (("key", ptr, guess),), safe=clear)
        if key in MINDSPORE_DUMP_KEYS:
            message = f"unknown key {key!r} {_where(location)}: it belongs to MindSpore's own dump JSON, not msprobe's"
        else:
            message = f"unknown key {key!r} {_where(location)}; msprobe ignores it"
        yield Finding("PL101", message, pointer=ptr, at="key", fix=fix,
                      hint=f"did you mean {guess!r}?" if guess else f"known keys here: {', '.join(here)}")


def _move_hint(target: str) -> str:
    return "to the top level" if target == "" else f'into the "{target}" section'


def _deprecated(data: dict, profile: str = "8.3") -> Iterator[Finding]:
    index = key_index(profile)
    for location, keys in index.items():
        obj = data if location == "" else data.get(location)
        if not isinstance(obj, dict):
            continue
        for key in obj:
            schema = keys.get(key)
            if schema and schema.get("deprecated"):
                yield Finding("PL106", f"{key!r} is deprecated {_where(location)}: {schema.get('description', '')}".rstrip(": "),
                              pointer=make_pointer(*([location] if location else []), key), at="key",
                              hint=f"remove {key!r}", fix=remove(make_pointer(*([location] if location else []), key),
                                                                 f"remove the deprecated {key!r}"))
