"""Schema family (PL101-PL107): the config checked against the JSON Schema
in ``schema/``, each failing keyword mapped to a stable code (the way
cfn-lint maps schema keywords to rule ids).

Default map: ``additionalProperties`` -> PL101/PL105, ``type`` -> PL102,
``enum``/``const`` -> PL103, ``required`` -> PL104, ranges and lengths ->
PL107. A subschema may override it with ``x-probe-code`` (one code for every
failure under it, or a ``{keyword: code}`` map) and add ``x-probe-hint``.
``deprecated: true`` properties give PL106. Integers are strict: a JSON
number with a fraction or exponent (``3.0``, ``1e2``) or a boolean is not an
integer, unlike jsonschema's default type checker. What JSON Schema cannot
say is added under the same codes: PL107 has a check function of its own
(grad_probe's bounds must ascend), run with the semantic rules.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..diagnostic import Finding, FixSpec, Severity, remove, set_value
from ..positions import pointer as make_pointer
from ..refusals import length_out_of_range, not_allowed, required_empty, wrong_type
from ..schema.files import ATB, key_index
from .base import define

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator, Optional

    from ..config_view import ConfigView
    from ..context import Context

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
    (iteration, support_device, ...) are unknown here too. The rename fix is
    offered only for a slip of the keyboard (case, separators, or one edit per
    four letters away from the only key that close), never for a key another
    release, section or tool reads (dump_enable and bench_path are 26.x keys,
    filter_level the ATB dump config's: the message says which), and it is
    safe only when the value fits the key it becomes. A top-level key that is
    a slip of a key of the active task's section ("overflow_num" with task
    overflow_check) gets the hint to write that key in that section, and no
    fix.

    Bad:
        "overflow_check": {"overflow_number": 3}
    Good:
        "overflow_check": {"overflow_nums": 3}
    """)

define("PL102", "wrong-type", "error", "Value has the wrong type", "schema", fix="safe/unsafe", check=wrong_type,
       doc="""
    msprobe checks types at start-up and stops with one bare exception at a
    time. Integers are strict: 3.0, 1e2 and true are not integers. rank and
    step are lists even for one entry. Some types are one framework's: a
    list of statistics as summary_mode is MindSpore's (PyTorch takes
    "statistics" or "md5"). A null task, level, rank, step, overflow_nums,
    check_mode or task section is a warning: msprobe reads it as absent
    and takes its default (statistics, L1, every rank or step, 1, "all",
    the section's defaults), and the JSON Schema accepts it. A null
    section of the active task is an error once the framework is known
    to be PyTorch, whose msprobe fails on it.

    Bad:
        "rank": 0,
        "overflow_check": {"overflow_nums": "3"}
    Good:
        "rank": [0],
        "overflow_check": {"overflow_nums": 3}
    """)

define("PL103", "value-not-allowed", "error", "Value not among the allowed ones", "schema", fix="safe/unsafe",
       check=not_allowed, doc="""
    Enumerated options (task, level, check_mode, summary_mode, ...) are
    case-sensitive. The hint gives the case-insensitive or closest match.
    A task misspelt with one clear match ("overflow-check") is judged by
    the other rules as the task it means, so the level and that task's
    options are reported in the same run; a task near no task, or near
    two, leaves the rules of any task silent.
    Some values msprobe refuses only with a framework or beside another
    option, each stopping it at start-up (mindstudio-probe 8.1 and 8.3):
    in free_benchmark, fuzz_device "cpu" or pert_mode "to_cpu" on
    MindSpore, one without the other on PyTorch, handler_type "fix" with
    a pert_mode other than improve_precision (PyTorch: or to_cpu), with
    fuzz_stage "backward" or (PyTorch) with if_preheat true, and on
    PyTorch a list beside a scope; summary_mode md5 with "async_dump":
    true (8.3); on PyTorch level L2 with a task other than tensor; on
    MindSpore at L2 a name-regex(...) in list that does not compile.
    These are reported when the framework is known, or when every
    framework refuses them. An empty task or level is a warning: msprobe
    reads it as absent (statistics, L1). An empty check_mode, which
    MindSpore reads as "all" and PyTorch refuses, is a warning unless the
    framework is known to be PyTorch (then an error). The JSON Schema
    accepts these empty values.

    Bad:
        "level": "l1"
    Good:
        "level": "L1"
    """)

define("PL104", "required-missing", "error", "Required key missing or empty", "schema", check=required_empty,
       doc="""
    dump_path is required and must not be empty: without it msprobe stops at
    start-up. A dump_path= argument to PrecisionDebugger(config_path=...,
    dump_path=...) overrides the config's and serves as well: with --script
    showing every PrecisionDebugger given one, this is not reported. With
    "async_dump": true, task tensor needs a non-empty list (but at level
    debug): msprobe 8.1 and 8.3 stop at start-up without one.

    Bad:
        {"task": "overflow_check", "level": "L1"}
    Good:
        {"task": "overflow_check", "level": "L1", "dump_path": "/data/dump"}
    """)

define("PL105", "key-misplaced", "warning", "Key valid elsewhere in the config, not here", "schema",
       fix="unsafe", doc="""
    The key is one msprobe knows, but in another place: at the top level
    instead of in its task section or the other way round. Where it stands it
    is ignored. The message names the active task's section when that one
    reads the key ("task": "tensor" with a top-level list: the tensor
    section), and the fix moves it there; no key is moved into or out of a
    section msprobe does not read.

    Bad:
        {"task": "overflow_check", "overflow_nums": 3}
    Good:
        {"task": "overflow_check", "overflow_check": {"overflow_nums": 3}}
    """)

define("PL106", "deprecated-key", "warning", "Deprecated key", "schema", fix="safe/unsafe", doc="""
    seed, is_deterministic, enable_dataloader and backward_input were
    accepted by older releases and no longer do anything (8.3 stopped
    reading the online run_ut keys of the tensor and run_ut sections, which
    8.1 reads: online_run_ut, is_online, nfs_path, host, port, rank_list,
    tls_path, online_run_ut_recompute; 26.x also stopped reading
    enable_dataloader, 26.0 overflow_nums, 26.1 the tensor section's
    file_format). Removing one is safe, but for "enable_dataloader": true,
    which 8.x PyTorch still honours: that removal is an unsafe fix.

    Bad:
        {"task": "overflow_check", "seed": 1234}
    Good:
        {"task": "overflow_check"}   (call seed_all() in the script)
    """)

def _bounds_not_ascending(config: ConfigView, context: Context) -> Iterator[Finding]:
    """PL107 for what JSON Schema cannot say: grad_probe's ``bounds`` must
    ascend. msprobe's checks (mindstudio-probe 8.1.2 and 8.3.3; 26.x has no
    grad_probe task): MindSpore's ``GradProbeConfig`` (msprobe/mindspore/
    ms_config.py) calls ``check_numeral_list_ascend`` of
    msprobe/core/grad_probe/utils.py, which compares the list with its
    sorted copy ("The input list should be ascending": a repeated bound
    passes); PyTorch's ``GradToolConfig`` (msprobe/pytorch/pt_config.py)
    calls ``check_bounds`` there, which wants each bound strictly greater
    than the one before ("bounds list is not ascending"). So a bound below
    the one before it is reported always, a repeated one only when the
    framework is known to be PyTorch. Every grad_probe section is checked,
    active or not, as the schema checks every section (SPEC 2.6)."""
    from ..profiles import PROFILES

    if "grad_probe" not in PROFILES[config.profile].tasks:
        return  # the section is unknown there (PL101)
    bounds = config.get("grad_probe", "bounds")
    if not isinstance(bounds, list) or not all(
            isinstance(b, (int, float)) and not isinstance(b, bool) and b == b for b in bounds):
        return  # an item of another type is the schema's PL102 (msprobe stops on it first)
    strict = context.framework == "pytorch"
    for index in range(1, len(bounds)):
        before, here = bounds[index - 1], bounds[index]
        if here > before or (here == before and not strict):
            continue
        said = {"pytorch": '"bounds list is not ascending"', "mindspore": '"The input list should be ascending"'}.get(
            context.framework or "", '"The input list should be ascending" (MindSpore; PyTorch: "bounds list is '
                                     'not ascending")')
        what = "repeats" if here == before else "is less than"
        fixed = sorted(set(bounds)) if strict else sorted(bounds)
        yield Finding("PL107", f"grad_probe bounds must ascend: bounds[{index}] {_json(here)} {what} the bound "
                               f"before it, {_json(before)}{_because(context) if strict else ''}; msprobe stops at "
                               f"start-up with {said}", pointer=make_pointer("grad_probe", "bounds", index),
                      hint=f"sort the bounds{' and drop the repeats' if strict and len(fixed) < len(bounds) else ''}:"
                           f" {_json(fixed)}")


def _because(context: Context) -> str:
    said = context.describe("framework")
    return f" ({said})" if said else ""


def _out_of_range(config: ConfigView, context: Context) -> Iterator[Finding]:
    """PL107's checks beyond the schema: grad_probe's bounds, PyTorch's
    L2 filters (refusals.py)."""
    yield from _bounds_not_ascending(config, context)
    yield from length_out_of_range(config, context)


define("PL107", "out-of-range", "error", "Number or list length out of range", "schema", check=_out_of_range,
       doc="""
    overflow_nums is -1 (no limit) or at least 1; a port is 0-65535;
    data_mode "all" stands alone; grad_probe's bounds ascend (each at
    least the one before it; strictly greater with PyTorch, whose msprobe
    refuses a repeated bound); data_mode holds at most 4 modes; PyTorch's
    level L2 (task tensor) takes no scope and exactly one API in list; a
    rank or step list holds at most 1000000 entries as written (msprobe
    counts them before it expands the "a-b" ranges, so ["0-1999999"] is
    one entry, refused for its bound instead); a scope (range) holds no names
    or exactly two. (Two names that are not full dump names are PL305; a
    rank or step over 1000000 is PL301.)

    Bad:
        "overflow_check": {"overflow_nums": 0}
        "grad_probe": {"bounds": [1, 0.5]}
    Good:
        "overflow_check": {"overflow_nums": 1}
        "grad_probe": {"bounds": [0.5, 1]}
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
             why: str = "the default target", given_in_code: Iterable[str] = (),
             framework: Optional[str] = None, runtime: bool = False) -> tuple[list[Finding], set[str]]:
    """Run the schema of release ``profile`` over ``data``.

    Args:
        data: the parsed config (a dict).
        skip: pointers already reported (NaN literals): no schema finding
            on them.
        profile: ``"8.1"``, ``"8.3"``, ``"26.0"``, ``"26.1"``, ``"26.2"``
            (profiles.py), or ``"atb"`` for msprobe's ATB dump config
            (lint/atb.py).
        why: where the profile came from, for the messages of findings
            whose verdict depends on it (a key or task another release
            accepts).
        given_in_code: top-level keys the training script passes to
            PrecisionDebugger, overriding the config (``dump_path``): their
            absence or emptiness is no PL104.
        framework: the framework when known (``"mindspore"``,
            ``"msadapter"``, ``"pytorch"``): an empty check_mode or a null
            active section, which PyTorch refuses, is then graded
            (:func:`_defaulted`).
        runtime: inside probe_runtime's gate or ``probe run``: a value
            msprobe reads as absent stays the plain error (probe_runtime
            needs the plain form).
    Returns:
        (findings, bad): the findings, and the pointers of every value that
        failed a structural check (the semantic rules must not see them).
    """
    skipped = set(skip)
    findings: list[Finding] = []
    bad: set[str] = set(skipped)
    from ..schema.fast import is_valid  # a valid config never needs jsonschema

    defaulted = [] if profile == ATB else _defaulted(data, profile, framework, runtime, skipped)
    bad.update(f.pointer for f in defaulted if f.pointer is not None)
    if is_valid(data, profile):
        return ([] if profile == ATB else defaulted + [_release_note(f, profile, why)
                                                       for f in _deprecated(data, profile)]), bad
    active = _active_task(data, profile)
    converted: set[str] = set()  # an integer written 0.0 or "0" that is out of range as 0 too
    too_long: list[tuple[str, int, int]] = []
    for error in _validator(profile).iter_errors(_shrunk(data, profile, too_long)):
        path = list(error.absolute_path)
        ptr = make_pointer(*path)
        if ptr in skipped:
            continue
        if error.validator == "additionalProperties":
            findings.extend(_release_note(f, profile, why) for f in _unknown_keys(error, path, profile, data, active))
            continue
        leaf = _leaf(error)
        code = _override(error) or _override(leaf) or KEYWORD_CODES.get(leaf.validator, "PL102")
        if code == "PL104" and "dump_path" in given_in_code and ptr in ("", "/dump_path"):
            bad.add(ptr)
            continue
        hint = (error.schema.get("x-probe-hint") if isinstance(error.schema, dict) else None) or (
            leaf.schema.get("x-probe-hint") if isinstance(leaf.schema, dict) else None)
        finding = _describe(code, leaf, path, ptr, hint)
        integer = leaf.validator_value in ("integer", ["integer", "null"])  # null: read as absent (_DEFAULTED)
        if finding.code == "PL102" and finding.fix is not None and integer:
            ranged = _out_of_range_once_converted(leaf, path, ptr, hint, profile)
            if ranged is not None:
                finding = ranged
                converted.add(ptr)
        if ptr == "/task" and isinstance(error.instance, str):
            if finding.fix is not None and _task_elsewhere(error.instance):
                finding = finding._replace(fix=None)  # another release's task, not a typo
            finding = _release_note(finding, profile, why, name=error.instance)
        findings.append(finding)
        bad.add(ptr)
    for key, length, most in too_long:
        ptr = make_pointer(key)
        if ptr not in skipped:
            findings.append(_too_many(key, ptr, length, most, None))
            bad.add(ptr)
    # one diagnostic per fault: a value of the wrong type ("level": ["L1"]) is not also "not allowed"
    wrong_type = {f.pointer for f in findings if f.code == "PL102"}
    findings = [f for f in findings if not (f.code == "PL103" and f.pointer in wrong_type)]
    findings = _one_range_finding_each(findings, converted)
    findings.extend(defaulted)
    if profile != ATB:
        findings.extend(_release_note(f, profile, why) for f in _deprecated(data, profile))
    return findings, bad


# Values msprobe reads as absent, taking its default; the schema accepts them (an editor and
# check-jsonschema agree with the lint's exit status) and the lint warns. Read in mindstudio-probe
# 8.1.2 (8.3.3 and 26.0.0 read them alike):
# - task: CommonConfig checks it only when truthy (core/common_config.py:36); the debugger's base then
#   sets statistics for a falsy task (core/debugger/precision_debugger.py:146-147), PyTorch's
#   DebuggerConfig too ("task or common_config.task or statistics", pytorch/debugger/debugger_config.py:25).
# - level: checked only when truthy (core/common_config.py:42); MindSpore's DebuggerConfig takes L1 for a
#   falsy level (mindspore/debugger/debugger_config.py:39), PyTorch's likewise (debugger_config.py:28).
# - rank/step: get_real_step_or_rank returns [] for None (core/common/utils.py:506-507, 8.1.2-26.2.0).
# - overflow_nums: checked only when not None (mindspore/ms_config.py:74-77, pytorch/pt_config.py:99-102),
#   then 1 for a falsy value (mindspore/debugger/debugger_config.py:46).
# - check_mode: MindSpore checks it only when truthy (ms_config.py:78) and takes "all" for a falsy one
#   (debugger_config.py:114-115); PyTorch refuses anything but None and the three modes
#   (pt_config.py:103): "" stops PyTorch's msprobe ("check_mode is invalid").
# - the active task's section: MindSpore reads a falsy one as {} (ms_config.py:140-142); PyTorch hands the
#   null to the section's config class, whose first .get fails (pt_config.py:328, core/common_config.py:57:
#   AttributeError). msprobe never reads the section of another task.
# pointer -> (value, what it then means, the frameworks that refuse it).
_DEFAULTED: dict[str, tuple[tuple[Any, str, tuple[str, ...]], ...]] = {
    "/task": ((None, "statistics", ()), ("", "statistics", ())),
    "/level": ((None, "L1", ()), ("", "L1", ())),
    "/rank": ((None, "every rank", ()),),
    "/step": ((None, "every step", ()),),
    "/overflow_check/overflow_nums": ((None, "1", ()),),
    "/overflow_check/check_mode": ((None, '"all"', ()), ("", '"all"', ("pytorch",))),
}
_TYPE_NAMES = {"/task": "string", "/level": "string", "/rank": "array", "/step": "array",
               "/overflow_check/overflow_nums": "integer", "/overflow_check/check_mode": "string"}


def _defaulted(data: dict, profile: str, framework: Optional[str], runtime: bool,
               skip: set[str]) -> list[Finding]:
    """PL102 (null) and PL103 ("") for the values msprobe reads as absent
    (:data:`_DEFAULTED`, and a null task section): a warning saying what
    msprobe then does; an error where the framework (when known) refuses
    the value, and inside probe_runtime's gate and ``probe run``, which
    need the plain form (the plain message then)."""
    from ..schema.files import load_schema

    section = data.get("overflow_check")
    if not any(v is None or v == "" for v in data.values()) and not (
            isinstance(section, dict) and any(v is None or v == "" for v in section.values())):
        return []  # the common case: nothing to look up
    found: list[Finding] = []
    cases = dict(_DEFAULTED)
    types = dict(_TYPE_NAMES)
    properties = load_schema(profile).get("properties", {})
    active = _active_task(data, profile)
    for key, sub in properties.items():
        # Another task's section is never read: PL206 says so, for null as for any value.
        if key == active and isinstance(sub, dict) and str(sub.get("$ref", "")).endswith("Section"):
            cases["/" + key] = ((None, "every option of the section at its default", ("pytorch",)),)
            types["/" + key] = "object"
    for ptr, options in cases.items():
        tokens = ptr.strip("/").split("/")
        node: Any = data
        for token in tokens:
            node = node.get(token, _ABSENT) if isinstance(node, dict) else _ABSENT
        if node is _ABSENT or ptr in skip or (len(tokens) > 1 and "/" + tokens[0] in skip):
            continue
        for value, meaning, refusing in options:
            if node != value or type(node) is not type(value):
                continue
            name = tokens[-1]
            code = "PL102" if value is None else "PL103"
            plain = _plain_default_finding(code, name, ptr, types[ptr], profile)
            if runtime:
                found.append(plain)
            elif framework is not None and framework in refusing:
                said = ("stops at start-up with \"check_mode is invalid\"" if code == "PL103" else
                        "fails at start-up reading the section's options (AttributeError)")
                found.append(plain._replace(message=f"{plain.message}; PyTorch's msprobe {said}",
                                            hint="write {} or remove the section" if code == "PL102" and
                                            types[ptr] == "object" else plain.hint))
            else:
                shown = "null" if value is None else '""'
                also = " (PyTorch's msprobe refuses it)" if refusing else ""
                fix = set_value(ptr, [], "write []") if types[ptr] == "array" else None
                found.append(Finding(code, f"{name} is {shown}: msprobe accepts it and reads it as absent, "
                                           f"meaning {meaning}{also}", pointer=ptr, severity=Severity.WARNING,
                                     hint="write []" if fix is not None else
                                     f"remove {name}, or write the value you mean", fix=fix))
    return found


def _plain_default_finding(code: str, name: str, ptr: str, kind: str, profile: str) -> Finding:
    """The plain PL102/PL103 a null or "" gets where it is refused: as
    the schema's message would read without the default accepted."""
    if code == "PL102":
        article = "an" if kind[0] in "aeiou" else "a"
        fix = set_value(ptr, [], "write rank as []".replace("rank", name)) if kind == "array" else None
        return Finding("PL102", f"{name} must be {article} {kind}, not null", pointer=ptr,
                       hint="write []" if fix is not None else None, fix=fix)
    allowed = _allowed(ptr, profile)
    return Finding("PL103", f'"" is not an allowed {name}; allowed: {", ".join(allowed)}', pointer=ptr,
                   hint=f"use one of: {', '.join(allowed)}")


def _allowed(ptr: str, profile: str) -> list[str]:
    """The allowed string values of the enum at config pointer ``ptr``."""
    from ..schema.files import load_schema, resolve

    root = load_schema(profile)
    node: Any = root
    for token in ptr.strip("/").split("/"):
        node = resolve(node, root).get("properties", {}).get(token, {}) if isinstance(node, dict) else {}
    node = resolve(node, root) if isinstance(node, dict) else {}
    return [v for v in node.get("enum", ()) if isinstance(v, str) and v]


_ABSENT: Any = object()

# A list longer than this that its own schema accepts is cut to one item for jsonschema.
_LONG = 1000


def _shrunk(data: dict, profile: str, too_long: Optional[list] = None) -> dict:
    """``data`` for jsonschema's search for errors, with every long list
    (a 600,000-entry rank list) that the fast validator finds valid under
    its key's own schema replaced by its first item (jsonschema descends
    into every item, about 10 us each, though none can be an error). Only
    the top level and the task sections' keys are looked at; the schema
    constrains a key by its own subschema alone (no condition at the top
    level or in a section refers to another key's list), so the errors
    found are the same, at the same places. Anything else, or a list the
    fast validator cannot judge, is left as it is. A top-level list whose
    items are valid but that is longer than its ``maxItems`` is cut too,
    and (key, length, maxItems) appended to ``too_long`` for the caller
    to report (:func:`_too_many`)."""
    from ..schema.fast import fits
    from ..schema.files import load_schema, resolve

    root = load_schema(profile)
    too_long = [] if too_long is None else too_long

    def cut(node: dict, schema: Any) -> dict:
        properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
        out = node
        for key, value in node.items():
            sub = properties.get(key)
            if sub is None:
                continue
            if isinstance(value, list) and len(value) > _LONG:
                short = value[:1]
                if fits(value, sub, profile) and fits(short, sub, profile):
                    out = dict(out) if out is node else out
                    out[key] = short
                    continue
                whole = resolve(sub, root)
                most = whole.get("maxItems") if isinstance(whole, dict) else None
                if node is data and isinstance(most, int) and len(value) > most and short and \
                        fits(value, {k: v for k, v in whole.items() if k != "maxItems"}, profile):
                    # Only its length is wrong (a rank list of 1000001 valid entries): told by the caller,
                    # not by jsonschema walking every item (minutes for a million).
                    out = dict(out) if out is node else out
                    out[key] = short
                    too_long.append((key, len(value), most))
            elif isinstance(value, dict) and node is data and any(
                    isinstance(v, list) and len(v) > _LONG for v in value.values()):
                inner = cut(value, resolve(sub, root))
                if inner is not value:
                    out = dict(out) if out is node else out
                    out[key] = inner
        return out

    try:
        return cut(data, root)
    except (KeyError, TypeError, AttributeError):  # a schema shape this does not know: look at everything
        return data


def _task_elsewhere(task: str) -> bool:
    """True when some release (or the ATB dump tool) accepts ``task``."""
    from ..profiles import ATB_TASKS, PROFILES

    return task in ATB_TASKS or any(task in p.tasks for p in PROFILES.values())


def _active_task(data: dict, profile: str) -> Optional[str]:
    """The task whose section msprobe reads: the ``task`` value when this
    release accepts it, ``statistics`` when absent, the task a misspelt
    value clearly means (:func:`meant_task`), else None."""
    if profile == ATB:
        return None
    from ..profiles import PROFILES

    task = data.get("task", "statistics")
    if task is None or task == "":  # read as absent (_DEFAULTED)
        return "statistics"
    if isinstance(task, str) and task in PROFILES[profile].tasks:
        return task
    return meant_task(data, profile)


def meant_task(data: dict, profile: str) -> Optional[str]:
    """The task of release ``profile`` that a ``task`` value it refuses
    (PL103) clearly means: the same name in another case
    (``"Overflow_Check"``), or the only task that close (``"overflow-check"``
    -> ``overflow_check``, the did-you-mean of its PL103). None for an
    accepted or absent task, a value that is not a string, a task another
    release (or the ATB dump tool) accepts (not a typo: its PL103 says
    what it is), and a value near no task or near two.

    The semantic rules judge the config as if it named that task, so a
    typo in the task does not hide the other problems (the level, the
    task's section) until it is fixed; a value with no clear match
    leaves them silent, as before.

    >>> meant_task({"task": "overflow-check"}, "8.3")
    'overflow_check'
    >>> meant_task({"task": "dump"}, "8.3") is None
    True
    """
    if profile == ATB:
        return None
    import difflib

    from ..profiles import PROFILES

    value = data.get("task")
    tasks = PROFILES[profile].tasks
    if not isinstance(value, str) or value in tasks or _task_elsewhere(value):
        return None
    guess = suggest(value, tasks)
    if guess is None or guess.lower() == value.lower():
        return guess
    close = difflib.get_close_matches(value.lower(), [task.lower() for task in tasks], n=2, cutoff=0.6)
    return guess if close == [guess.lower()] else None


def foreign_task(data: dict, profile: str) -> bool:
    """The ``task`` value is a string that no release (nor the ATB dump
    tool) accepts and that is near no task of any release
    (``"translation"``): the file may be another program's config that
    happens to have a ``task`` key, so the fixes the msprobe rules know
    (renaming ``steps`` to ``step``) are not applied to it (a hunt's
    finding: the pre-commit fix hook renamed a trainer config's key).

    >>> foreign_task({"task": "translation"}, "8.3"), foreign_task({"task": "overflow-check"}, "8.3")
    (True, False)
    """
    from ...project.sniff import foreign_task as foreign

    value = data.get("task")
    return profile != ATB and isinstance(value, str) and foreign(value)  # "" is read as absent (statistics)


def _release_note(finding: Finding, profile: str, why: str, name: Optional[str] = None) -> Finding:
    """Add, to a finding about a key or task that another release line
    (or the ATB dump tool) accepts, what it is there, which release the
    verdict is for, and what to do: lint for that release, let
    ``probe migrate`` rename it, or remove it."""
    if profile == ATB:
        return finding
    from ..profiles import MIGRATION_NOTES, PROFILES, line

    tokens = (finding.pointer or "").strip("/").split("/")
    name = name or tokens[-1]
    location = tokens[0] if len(tokens) > 1 else ""
    is_task = finding.pointer == "/task"
    suffix = f" [judged against {PROFILES[profile].label}: {why}]"
    if finding.code == "PL106":  # the schema's description already says why
        if name in PROFILES[profile].deprecate or f"{location}.{name}" in _deprecations(profile):
            return finding._replace(message=finding.message + suffix)
        return finding
    if finding.code not in ("PL101", "PL103", "PL105"):
        return finding
    note = MIGRATION_NOTES.get((line(profile), name))
    others = [p for p in sorted(PROFILES.values(), key=_preference) if p.name != profile and (
        _reads(key_index(p.name).get(location, {}), name, p.name, location) if not is_task else name in p.tasks)]
    if note is None and others:
        note = f"{name!r} is accepted {'as a task' if is_task else _where(location)} by {_releases(others)}"
    elif note is None and finding.code == "PL101":
        note = _known_elsewhere(name, profile)
    if note is None:
        return finding
    hint = finding.hint
    if others and finding.code == "PL105":
        hint = f"if the config is for {others[0].label}, lint it with --msprobe-version {others[0].name}; else {hint}"
    elif others:
        renamed = _renamed(name, profile, location, is_task)
        hint = (f"if the config is for {others[0].label}, lint it with --msprobe-version {others[0].name}; "
                + (renamed or f"{PROFILES[profile].label} has no such {'task' if is_task else 'setting'}: "
                              f"{'choose another task' if is_task else 'remove it'}"))
    elif finding.code == "PL101":
        hint = f"remove it: {PROFILES[profile].label} does not read it {_where(location)}"
    return finding._replace(message=f"{finding.message}; {note}{suffix}", hint=hint)


def _reads(keys: dict, name: str, profile: str, location: str) -> bool:
    """True when ``name`` is among ``keys`` (``profile``'s key_index entry
    for ``location``) and that release reads it: a key its schema marks
    deprecated (8.3's online run_ut keys, 26.0's overflow_nums, the old
    backward_input) is accepted there but does nothing, so no hint or
    rename sends the user to it, unless the release still honours it
    (``profiles.STILL_READ``: PyTorch 8.x reads enable_dataloader)."""
    schema = keys.get(name)
    if schema is None:
        return False
    if not (isinstance(schema, dict) and schema.get("deprecated")):
        return True
    from ..profiles import STILL_READ

    return location == "" and name in STILL_READ.get(profile, {})


def _preference(profile: Any) -> tuple:
    """Order in which hints name other releases: the default target, then
    the newest."""
    from ..profiles import DEFAULT

    return profile.name != DEFAULT, [-int(x) for x in profile.name.split(".")]


def _releases(profiles: list) -> str:
    """``mindstudio-probe 26.0, 26.1 and 26.2``."""
    names = [p.name for p in sorted(profiles, key=lambda p: [int(x) for x in p.name.split(".")])]
    return "mindstudio-probe " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])


def _deprecations(profile: str) -> set[str]:
    """``section.key`` (section by its task name) of the section keys
    ``profile`` deprecates."""
    from ..profiles import PROFILES

    out = set()
    for key in PROFILES[profile].deprecate:
        ref, _, name = key.rpartition(".")
        if ref:
            out.add(_task_of(ref) + "." + name)
    return out


def _task_of(ref: str) -> str:
    """``tensor`` for the ``$defs`` name ``tensorSection``."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", ref[:-len("Section")]).lower()


def _renamed(name: str, profile: str, location: str, is_task: bool) -> Optional[str]:
    """What ``probe migrate`` does with ``name`` when converting a config to
    ``profile``'s release line, as a hint, or None when it has no rename
    for it."""
    from ..profiles import RENAMES, line

    target = line(profile)
    for from_line, to_line, where, old, new, only_for in RENAMES:
        for source, old_name, new_name in ((from_line, old, new), (to_line, new, old)):
            if source == target or old_name != name:
                continue
            if (where == "task") != (is_task or location == ""):
                continue
            framework = f" --framework {only_for}" if only_for else ""
            return f"probe migrate CONFIG --to {profile}{framework} renames it to {new_name!r}"
    return None


def _known_elsewhere(name: str, profile: str) -> Optional[str]:
    """What ``name`` is in the releases and tools this project knows (when
    this release has no place for it), e.g. ``'filter_level' is a key of
    msprobe's ATB dump config``; None for a key nothing knows."""
    from ..atb import LABEL
    from ..profiles import PROFILES
    from ..schema.keys import known_places

    places = known_places(name)
    if not places:
        return None
    by_location: dict[str, list] = {}
    for release, location in places:
        if release != ATB:
            by_location.setdefault(location, []).append(PROFILES[release])
    parts = [f"{_where(location)} by {_releases(releases)}" for location, releases in by_location.items()]
    if any(release == ATB for release, _ in places):
        parts.append(f"in msprobe's {LABEL}")
    return f"{name!r} is read " + ", and ".join(parts)


def _describe(code: str, error: Any, path: list, ptr: str, hint: Optional[str]) -> Finding:
    name = _name(path)
    value = error.instance
    keyword = error.validator
    if code == "PL104" and keyword == "required":
        missing = [k for k in error.validator_value if k not in (value or {})]
        where = _where(path[0] if path else "")
        return Finding("PL104", f"required key {', '.join(map(repr, missing))} is missing {where}", pointer=ptr,
                       at="key", hint=hint or ('add e.g. "dump_path": "/data/msprobe_dump", or pass dump_path= to '
                                               "PrecisionDebugger(config_path=..., dump_path=...), which overrides "
                                               "the config (lint with --script TRAIN.py to show it)"
                                               if "dump_path" in missing else None))
    if code == "PL104":
        return Finding("PL104", f"{name} is empty", pointer=ptr,
                       hint=hint or ("give an absolute path such as /data/msprobe_dump, or pass dump_path= to "
                                     "PrecisionDebugger, which overrides the config" if name == "dump_path" else None))
    if keyword == "anyOf" and name == "scope":  # SPEC 3.1: a scope neither empty nor two names is PL107
        return Finding(code, f"{name} holds {len(value)} name(s): it is not a filter list but a range, exactly two "
                                "full dump names (the first and the last call to collect), or none", pointer=ptr,
                       hint='to collect only some APIs or Cells, put their names in "list" and leave scope empty')
    if code == "PL301":
        maximum = _index_maximum(error.schema)
        if isinstance(value, int) and not isinstance(value, bool) and maximum is not None and value > maximum:
            key = next((part for part in reversed(path) if isinstance(part, str)), "value")
            # msprobe's words: get_real_step_or_rank, core/common/utils.py (8.1.2, 8.3.3, 26.0.0-26.2.0)
            return Finding("PL301", f"{name} entry {value} is over {maximum}, the largest {key} msprobe accepts: "
                                    "mindstudio-probe 8.1 to 26.2 stop at start-up with \"Each element of "
                                    f"{key} must be between 0 and {maximum}\"", pointer=ptr,
                           hint=hint or f"use {key}s between 0 and {maximum}")
        return Finding("PL301", f"{name} entry {_json(value)} is neither an integer >= 0 nor an \"a-b\" range",
                       pointer=ptr, hint=hint or _index_hint(value), fix=_as_index(value, ptr))
    if keyword == "type":
        expected = error.validator_value
        if isinstance(expected, list):  # null is accepted only as "absent" (_DEFAULTED): not a type to suggest
            expected = [t for t in expected if t != "null"] or expected
            expected = expected[0] if len(expected) == 1 else expected
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        article = "an" if expected[0] in "aeiou" else "a"
        fix = hint
        edit = _as_integer(value, ptr) if expected == "integer" else None
        if fix is None and edit is not None:
            fix = f"write {int(value)}" + (" without quotes" if isinstance(value, str) else "")
        ids = _as_id_list(value) if name in ("rank", "step") else None
        if expected == "array" and ids is not None:  # "0" -> [0], "0,2-3" -> [0, "2-3"]: what msprobe accepts
            edit = set_value(ptr, ids, f"write {name} as {_json(ids)}")
            fix = fix or f"write {_json(ids)}"
        elif expected == "array" and name in ("rank", "step") and value not in (None, ""):
            edit = None  # wrapped as it is, it would be a list entry msprobe refuses (PL301)
            fix = fix or 'write a list of integers >= 0 and "a-b" ranges, e.g. [0, "2-3"]'
        elif expected == "array" and not isinstance(value, (dict, list)):
            fix = fix or (f"write [{_json(value)}]" if value not in (None, "") else "write []")
            edit = FixSpec(f"write {name} as a list", (("value", ptr, "[]"),) if value in (None, "")
                           else (("wrap", ptr),))
        elif expected.startswith("boolean") and isinstance(value, str) and value.strip().lower() in ("true", "false"):
            edit = set_value(ptr, value.strip().lower() == "true", f"write {value.strip().lower()} without quotes")
            fix = fix or edit.description
        elif expected == "string" and isinstance(value, int) and not isinstance(value, bool) and \
                isinstance(error.schema, dict) and error.schema.get("x-probe-quote"):
            edit = set_value(ptr, str(value), f'write "{value}" in quotes')  # an id list taken as a number
        kind = describe_type(value)
        shown = "" if kind == _json(value) else f" {_json(value)}"  # null is its own name: not "null null"
        return Finding("PL102", f"{name} must be {article} {expected}, not {kind}{shown}",
                       pointer=ptr, hint=fix, fix=edit)
    if keyword in ("enum", "const"):
        allowed = error.validator_value if keyword == "enum" else [error.validator_value]
        allowed = [a for a in allowed if a is not None and a != ""] or allowed  # "absent" (_DEFAULTED): no choice
        guess = suggest(value, [str(a) for a in allowed]) if isinstance(value, str) else None
        fix = hint or (f"did you mean {guess!r}?" if guess else f"use one of: {', '.join(map(str, allowed))}")
        # Only the case differs: plainly meant. A near spelling may be another value meant.
        edit = set_value(ptr, guess, f"replace {value!r} with {guess!r}",
                         safe=guess.lower() == value.lower()) if guess and guess in allowed else None
        return Finding(code, f"{_json(value)} is not an allowed {name}; allowed: {', '.join(map(str, allowed))}",
                       pointer=ptr, hint=fix, fix=edit)
    if keyword == "pattern":
        return Finding(code, f"{_json(value)} is not a valid {name}", pointer=ptr, hint=hint)
    if keyword == "not":
        return Finding(code, f"{name} {_json(value)} is out of range", pointer=ptr,
                       hint=hint or ("use -1 (no limit) or a count >= 1" if name == "overflow_nums" else None))
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[keyword]
        extra = " (-1 means no limit)" if name == "overflow_nums" else ""
        return Finding(code, f"{name} {_json(value)} is out of range: must be {bound} {error.validator_value}{extra}",
                       pointer=ptr, hint=hint)
    if keyword == "maxItems" and name in ("rank", "step"):
        return _too_many(name, ptr, len(value), error.validator_value, hint)
    if keyword in ("minItems", "maxItems"):
        return Finding(code, f"{name} has {len(value)} item(s): {error.message}", pointer=ptr, hint=hint)
    if keyword in ("minLength", "maxLength"):
        return Finding(code, f"{name} length is out of range: {error.message}", pointer=ptr, hint=hint)
    return Finding(code, f"{name}: {error.message}", pointer=ptr, hint=hint)


def _too_many(name: str, ptr: str, length: int, most: int, hint: Optional[str]) -> Finding:
    """PL107 for a rank or step list of more than ``most`` entries.
    msprobe's get_real_step_or_rank (core/common/utils.py:510-512 in
    8.1.2, 8.3.3 alike) refuses a list longer than STEP_RANK_MAXIMUM_VALUE
    (1000000) as written, before it expands the "a-b" ranges; a range
    past 1000000 ("0-2000000") is refused for its bound instead (PL301)."""
    return Finding("PL107", f"{name} has {length} entries, more than the {most} msprobe accepts: it stops at "
                            f"start-up with \"{name} is invalid, its length cannot exceed {most}\"", pointer=ptr,
                   hint=hint or f'write runs of consecutive {name}s as "a-b" ranges (["0-1999"] is one entry), '
                                f"or use [] for every {name}")


def _index_maximum(schema: Any) -> Optional[int]:
    """The ``maximum`` of the integer branch of a rank/step entry's schema
    (``$defs/indexList``: msprobe's 1000000), or None."""
    branches = schema.get("anyOf", ()) if isinstance(schema, dict) else ()
    for branch in branches:
        if isinstance(branch, dict) and branch.get("type") == "integer" and "maximum" in branch:
            return int(branch["maximum"])
    return None


def _index_hint(value: Any) -> str:
    """A fix for a bad rank/step entry."""
    number = _integer_of(value)
    if isinstance(value, str) and number is not None and number >= 0:
        return f"write {number} (a bare number string is not accepted; ranges are \"a-b\")"
    if isinstance(value, int) and not isinstance(value, bool) and value < 0 \
            or isinstance(value, (str, float)) and str(value).strip().startswith("-") \
            and _INTEGER.fullmatch(str(value).strip().removesuffix(".0")):
        return "ranks and steps count from 0"
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return f"write {int(value)}"
    return 'write an integer such as 3, or a range such as "2-5" (first <= last)'


# ASCII digits only: str.isdigit() also accepts '¹' or '٣', which int() refuses or reads otherwise.
_INTEGER = re.compile(r"-?[0-9]+")


def _as_id_list(value: Any) -> Optional[list]:
    """A rank or step given as one value, as the list msprobe accepts:
    ``3`` or ``"3"`` -> ``[3]``, ``"0, 2-3"`` -> ``[0, "2-3"]``; None when
    some part is neither an integer >= 0 nor an ``"a-b"`` range with
    a <= b."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] if value >= 0 else None
    if not isinstance(value, str) or not value.strip():
        return None
    out: list = []
    for part in value.replace(",", " ").split():
        if _INTEGER.fullmatch(part) and not part.startswith("-") and len(part) < 19:
            out.append(int(part))
            continue
        first, dash, last = part.partition("-")
        if not (dash and _INTEGER.fullmatch(first) and _INTEGER.fullmatch(last)
                and len(first) < 19 and len(last) < 19 and int(first) <= int(last)):
            return None  # digits capped as in _integer_of: int() refuses over 4300 of them
        out.append(f"{int(first)}-{int(last)}")
    return out


def _as_index(value: Any, ptr: str) -> Optional[FixSpec]:
    """The fix of a bad rank/step entry: ``_as_integer``'s, only when the
    number is one msprobe accepts there (>= 0). ``"-1"`` written as ``-1``
    would still be refused: no fix (a fix must not just move the error)."""
    fix = _as_integer(value, ptr)
    if fix is None or int(fix.ops[0][2]) < 0:
        return None
    return fix


def _as_integer(value: Any, ptr: str) -> Optional[FixSpec]:
    """The fix writing ``3.0`` or ``"3"`` as the integer 3 (safe: the
    same number, in the type msprobe reads); None for anything else."""
    number = _integer_of(value)
    if number is None:
        return None
    return set_value(ptr, number, f"write {number}")


def _integer_of(value: Any) -> Optional[int]:
    """The integer ``3.0`` or ``"3"`` stands for, or None."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()) and len(value.strip()) < 19:
        return int(value)
    return None


def _out_of_range_once_converted(error: Any, path: list, ptr: str, hint: Optional[str],
                                 profile: str) -> Optional[Finding]:
    """For ``error``, an integer written as ``0.0`` or ``"0"`` (PL102, whose
    fix writes the integer): the finding about that integer when the
    schema refuses it too (out of range: PL107), with no fix and the value
    as written; None when the integer is valid (the type fix stands). A
    safe fix must not write a value that is still wrong, and the fault
    the user has to decide on is the range (SPEC 3: one diagnostic per
    fault)."""
    number = _integer_of(error.instance)
    if number is None or not isinstance(error.schema, dict):
        return None
    problems = list(_validator(profile).evolve(schema=error.schema).iter_errors(number))
    if not problems:
        return None
    problem = problems[0]
    problem.instance = error.instance  # the message shows what the file says
    code = _override(problem) or KEYWORD_CODES.get(problem.validator, "PL107")
    return _describe(code, problem, path, ptr, hint)


def _one_range_finding_each(findings: list[Finding], converted: set[str]) -> list[Finding]:
    """At most one PL107 for each of the ``converted`` pointers (``0.0``
    fails both the type and the range of overflow_nums; both now say "out
    of range")."""
    seen: set = set()
    out = []
    for finding in findings:
        if finding.code == "PL107" and finding.pointer in converted:
            if finding.pointer in seen:
                continue
            seen.add(finding.pointer)
        out.append(finding)
    return out


def _json(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unknown_keys(error: Any, path: list, profile: str, data: dict, active: Optional[str]) -> Iterator[Finding]:
    """PL105 for a key this release reads elsewhere, PL101 for the others
    (with a rename when the key reads as a slip of the keyboard)."""
    location = path[0] if path else ""
    index = key_index(profile)
    here = index.get(location, {})
    if profile == ATB:
        tasks: tuple = ()
    else:
        from ..profiles import PROFILES

        tasks = PROFILES[profile].tasks
    for key in error.instance:
        if key in here:
            continue
        ptr = make_pointer(*path, key)
        places = [loc for loc, keys in index.items() if loc != location and key in keys and (loc == "" or loc in tasks)]
        if places:
            yield _misplaced(key, ptr, location, places, active, movable=len(path) <= 1)
        else:
            section = index.get(active, {}) if location == "" and active else {}
            yield _unknown(key, ptr, location, error.instance, here, profile, active, section)


def _misplaced(key: str, ptr: str, location: str, places: list[str], active: Optional[str],
               movable: bool) -> Finding:
    """PL105: ``key`` stands where msprobe does not read it; ``places`` are
    where this release reads it. The move is offered (unsafe: the key then
    takes effect) only from where msprobe reads keys (the top level, the
    active task's section) to the other such place: a key moved into another
    task's section would still do nothing (and PL206's fix would remove it
    with that section), and a key in an inactive section is left to PL206."""
    readable = location in ("", active)
    target = "" if "" in places else (active if active in places else None)
    if not readable:
        target = None
    top = location == "" or "" in places
    sections = [p for p in places if p]
    where = ([f"in the {_and(sections)} section" + ("s" if len(sections) > 1 else "")] if sections else []) + \
        (["at the top level"] if "" in places else [])
    if target and target == active:
        where = [f"in the {active} section, the active task's"]
    message = (f"{key!r} {'is not read' if top else 'has no effect'} {_where(location)}; msprobe "
               f"{'reads' if top else 'uses'} it {' and '.join(where)}")
    if readable and active and target is None:
        message += f"; the active task is {active}"
    if target is not None:
        hint = f"move {key!r} {_move_hint(target)}"
    elif not readable:
        hint = f"the {location} section is not read" + (f" with task {active}" if active else "") + \
            f": remove {key!r}, or move it where msprobe reads it"
    elif len(sections) == 1:
        hint = f"move {key!r} {_move_hint(sections[0])} if the config is for task {sections[0]}, or remove it"
    else:
        hint = f"move {key!r} into the section of the task it is for, or remove it"
    move = FixSpec(f"move {key!r} {_move_hint(target)}", (("move", ptr, target),), safe=False) \
        if target is not None and movable else None
    return Finding("PL105", message, pointer=ptr, at="key", hint=hint, fix=move)


def _and(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else (names[0] if names else "")


def _unknown(key: str, ptr: str, location: str, siblings: dict, here: dict, profile: str,
             active: Optional[str] = None, section: Optional[dict] = None) -> Finding:
    """PL101 with the did-you-mean. A top-level key that is a slip of no
    top-level key but of a key of the active task's ``section`` (an
    ``overflow_num`` for overflow_check's ``overflow_nums``) is misspelt
    and misplaced at once: the hint names that key and its section, and
    an unsafe fix renames it and moves it there (not when the section
    already sets that key: the fix is then dropped).
    A rename is offered only when ``key``
    reads as a slip of the keyboard for a key of this place
    (schema/keys.py's plausible_misspelling) and is a key of no release,
    section or tool this project knows (else it is that other setting,
    not a typo: the release note says what it is). It is safe when the
    match is clear (the same key in another case, or the only key that
    close) and the value is valid for the new key; otherwise unsafe."""
    import difflib

    from ..schema.fast import fits
    from ..schema.keys import known_places, plausible_misspelling

    def slip_of(names: list[str]) -> Optional[str]:
        found = None if key in MINDSPORE_DUMP_KEYS else suggest(key, names)
        if found is not None and (known_places(key) or not plausible_misspelling(key, found)):
            return None
        return found

    # Only a key this release reads is suggested or renamed to: one it
    # deprecates (26.0's overflow_check overflow_nums) is ignored, and PL106
    # would then remove it, the user's value with it.
    read = [name for name in here if _reads(here, name, profile, location)]
    guess = slip_of(read)
    ignored = None if guess else slip_of([name for name in here if name not in read])
    elsewhere = None
    if not guess and not ignored and location == "" and active and section:
        elsewhere = slip_of([name for name in section if _reads(section, name, profile, active)])
    fix = None
    if guess and guess not in siblings:
        clear = guess.lower() == key.lower() or len(difflib.get_close_matches(key, read, n=2, cutoff=0.6)) < 2
        safe = clear and fits(siblings[key], here[guess], profile) is True
        fix = FixSpec(f"rename {key!r} to {guess!r}", (("key", ptr, guess),), safe=safe)
    elif elsewhere:  # renamed and moved at once: unsafe (two guesses), never over a key the section sets
        fix = FixSpec(f"rename {key!r} to {elsewhere!r} and move it into the {active!r} section",
                      (("move", ptr, active, elsewhere),), safe=False)
    if key in MINDSPORE_DUMP_KEYS:
        message = f"unknown key {key!r} {_where(location)}: it belongs to MindSpore's own dump JSON, not msprobe's"
    elif profile == ATB:
        from ..atb import LABEL
        from ..schema.keys import known_places

        message = f"unknown key {key!r} in an {LABEL}; the ATB dump module ignores it" + (
            "; it is a key of PrecisionDebugger's config" if known_places(key) else "")
    else:
        message = f"unknown key {key!r} {_where(location)}; msprobe ignores it"
    if guess and guess in siblings:  # a misspelt copy of a key the object sets too ("Task" beside "task")
        hint = f"did you mean {guess!r}? It is set already {_where(location)}: remove this copy"
    elif guess:
        hint = f"did you mean {guess!r}?"
    elif ignored:
        hint = f"did you mean {ignored!r}? {_label(profile)} no longer reads it {_where(location)}: remove it"
    elif elsewhere:
        hint = f"did you mean {elsewhere!r} in the {active} section? msprobe reads it there, not at the top level"
    else:
        hint = f"known keys here: {', '.join(read or here)}"
    return Finding("PL101", message, pointer=ptr, at="key", fix=fix, hint=hint)


def _label(profile: str) -> str:
    """``mindstudio-probe 26.0`` for ``"26.0"``."""
    from ..profiles import PROFILES

    return PROFILES[profile].label if profile in PROFILES else profile


def _move_hint(target: str) -> str:
    return "to the top level" if target == "" else f'into the "{target}" section'


def _deprecated(data: dict, profile: str = "8.3") -> Iterator[Finding]:
    """PL106 for each deprecated key. Removing it is safe when the release
    ignores it, or when it holds the default that makes it inert; a
    deprecated key the release still honours (8.x PyTorch's
    ``"enable_dataloader": true``) is removed only as an unsafe fix."""
    from ..profiles import STILL_READ

    index = key_index(profile)
    still_read = STILL_READ.get(profile, {})
    for location, keys in index.items():
        obj = data if location == "" else data.get(location)
        if not isinstance(obj, dict):
            continue
        for key in obj:
            schema = keys.get(key)
            if schema and schema.get("deprecated"):
                ptr = make_pointer(*([location] if location else []), key)
                inert = location != "" or key not in still_read or obj[key] == still_read[key]
                message = f"{key!r} is deprecated {_where(location)}: {schema.get('description', '')}".rstrip(": ")
                yield Finding("PL106", message,
                              pointer=ptr, at="key", hint=f"remove {key!r}",
                              fix=remove(ptr, f"remove the deprecated {key!r}", safe=inert))
