"""Release profiles: what each mindstudio-probe release line accepts.

A config is judged by the release it targets, the way ruff judges code by
``target-version``. The facts come from the mindstudio-probe 8.1.2, 8.3.3,
26.0.0 and 26.2.0 wheels (``msprobe/core/common/const.py`` task lists,
``core/common_config.py`` and the framework config classes; see
docs/profiles-research.md):

- 8.3 is the hand-written ``schema/msprobe-config.schema.json`` (the format
  SPEC section 2 documents, and the default target);
- 8.1 lacks the exception_dump task and the top-level ``precision`` (8.1
  reads ``precision`` inside the statistics section only), and knows fewer
  statistics names for a MindSpore ``summary_mode`` list;
- 26.x renamed run_ut to acc_check, replaced PyTorch's overflow_check by
  diff_check (``overflow_nums`` -> ``diff_nums``), dropped overflow_check
  for MindSpore (26.0 kept only static-graph L2, 26.2 removed it), dropped
  free_benchmark and grad_probe, stopped reading enable_dataloader, and
  added nan_check and the top-level keys dump_enable, extra_info,
  risk_level, custom_op_namespaces and load.

The schemas of 8.1 and 26.x are generated from the 8.3 schema and the
changes below by ``tools/build_schemas.py`` (tests check they are current),
so editors get a schema per release and the linter validates with the same
files.
"""
from __future__ import annotations

from collections import namedtuple
from types import MappingProxyType

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional

DEFAULT = "8.3"
RUNTIME = "8.3"  # probe_runtime implements the 8.x overflow_check task

_STRING_LIST = {"type": "array", "items": {"type": "string"}, "default": []}
_INDEX_LIST = {"$ref": "#/$defs/indexList"}


_NONE: MappingProxyType = MappingProxyType({})


class Profile(namedtuple("Profile", "name label tasks top_add top_remove deprecate sections_add keys_add keys_remove "
                                    "enums schema_file",
                         defaults=(_NONE, (), _NONE, _NONE, _NONE, _NONE, _NONE, "msprobe-config.schema.json"))):
    """What one release line accepts, as changes to the 8.3 schema.

    Attributes:
        name: ``"8.1"``, ``"8.3"`` or ``"26"``.
        label: shown in messages, e.g. ``"mindstudio-probe 26.x"``.
        tasks: the task names it accepts (the ``task`` enum and the
            sections, in that order).
        top_add: top-level keys it adds (name -> schema).
        top_remove: top-level keys it does not accept.
        deprecate: keys (``"key"`` or ``"section.key"``) it accepts but no
            longer reads -> reason shown with PL106.
        sections_add: new task sections (name -> section schema).
        keys_add: section -> {key: schema} added to an existing section.
        keys_remove: section -> keys it does not accept there.
        enums: schema JSON pointer -> replacement enum list.
        schema_file: file name under ``schema/``.
    """

    __slots__ = ()


TASKS_8_3 = ("statistics", "tensor", "overflow_check", "free_benchmark", "run_ut", "grad_probe", "structure",
             "exception_dump")
SUMMARY_LIST = "/$defs/statisticsSection/properties/summary_mode/anyOf/1/items/enum"

PROFILES: dict[str, Profile] = {
    "8.1": Profile(
        name="8.1", label="mindstudio-probe 8.1", schema_file="msprobe-config-8.1.schema.json",
        tasks=TASKS_8_3[:-1],
        top_remove=("precision", "exception_dump"),
        enums={SUMMARY_LIST: ["max", "min", "mean", "l2norm", "md5"]},
    ),
    "8.3": Profile(name="8.3", label="mindstudio-probe 8.3", tasks=TASKS_8_3),
    "26": Profile(
        name="26", label="mindstudio-probe 26.x", schema_file="msprobe-config-26.schema.json",
        tasks=("statistics", "tensor", "acc_check", "structure", "diff_check", "exception_dump", "nan_check"),
        top_remove=("overflow_check", "free_benchmark", "run_ut", "grad_probe"),
        deprecate={"enable_dataloader": "mindstudio-probe 26.x no longer reads it"},
        top_add={
            "dump_enable": {"title": "Dump switch", "description": "Turns dumping on or off while the job runs "
                            "(mindstudio-probe 26.x); null leaves it to the debugger's start/stop.",
                            "type": ["boolean", "null"]},
            "extra_info": {"title": "Extra information", "description": "Write extra information with the dump "
                           "(mindstudio-probe 26.x).", "type": "boolean", "default": True},
            "risk_level": {"title": "Risk level", "description": "Which APIs to dump by risk (mindstudio-probe "
                           "26.x): CORE, FOCUS or ALL.", "type": "string", "enum": ["CORE", "FOCUS", "ALL"],
                           "default": "FOCUS"},
            "custom_op_namespaces": {"title": "Custom operator namespaces", "description": "PyTorch namespaces "
                                     "of custom operators to dump (mindstudio-probe 26.2).", **_STRING_LIST},
            "load": {"title": "Load", "description": "Re-run recorded modules from an earlier dump "
                     "(mindstudio-probe 26.2).", "type": "object", "additionalProperties": False,
                     "required": ["path"],
                     "properties": {"path": {"type": "string", "minLength": 1, "x-probe-code": {"minLength": "PL104"}},
                                    "modules": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                    "step": _INDEX_LIST, "rank": _INDEX_LIST,
                                    "dump_after_load": {"type": "boolean"}}},
        },
        sections_add={
            "acc_check": {"title": "acc_check task section", "description": "Options of the acc_check task "
                          "(PyTorch; the 8.x run_ut).", "type": "object", "additionalProperties": False,
                          "properties": {"white_list": _STRING_LIST, "black_list": _STRING_LIST,
                                         "error_data_path": {"type": "string", "description": "Where failing "
                                                             "API data is written (an absolute path)."}}},
            "diff_check": {"title": "diff_check task section", "description": "Options of the diff_check task "
                           "(PyTorch; the 8.x overflow_check).", "type": "object", "additionalProperties": False,
                           "properties": {
                               "diff_nums": {"type": "integer", "minimum": -1, "not": {"const": 0},
                                             "x-probe-code": {"not": "PL107"}, "default": 1,
                                             "description": "Stop after this many findings; -1 never stops."},
                               "check_mode": {"type": "string", "enum": ["all", "aicore", "atomic"],
                                              "description": "Read by 26.0 only."}}},
            "nan_check": {"title": "nan_check task section", "description": "Options of the nan_check task "
                          "(PyTorch on NPU, level L1, mindstudio-probe 26.2).", "type": "object",
                          "additionalProperties": False,
                          "properties": {"scope": {"$ref": "#/$defs/scope"}, "list": {"$ref": "#/$defs/list"},
                                         "data_mode": {"$ref": "#/$defs/dataMode"},
                                         "tensor_list": _STRING_LIST}},
        },
        keys_add={"tensor": {"bench_path": {"type": "string", "description": "Benchmark data (PyTorch, 26.x)."},
                             "slice": {"type": "array", "items": {"type": "object"},
                                       "description": "Slices of each tensor to save (26.2)."},
                             "request_id": {"description": "Request to dump (26.2)."}}},
        keys_remove={"tensor": ("online_run_ut", "nfs_path", "host", "port")},
        enums={"/$defs/statisticsSection/properties/summary_mode/anyOf/0/enum": ["statistics", "md5", "xor"],
               "/$defs/tensorSection/properties/summary_mode/enum": ["statistics", "md5", "xor"]},
    ),
}

# What a key or task means in the other release line, for migration hints:
# (profile the config is judged by, name) -> message.
MIGRATION_NOTES: dict[tuple[str, str], str] = {
    ("8", "acc_check"): "acc_check is the mindstudio-probe 26.x name of run_ut",
    ("8", "diff_check"): "diff_check is the mindstudio-probe 26.x name of PyTorch's overflow_check",
    ("8", "diff_nums"): "diff_nums is the mindstudio-probe 26.x name of overflow_nums",
    ("8", "nan_check"): "nan_check is a task of mindstudio-probe 26.2",
    ("26", "run_ut"): "mindstudio-probe 26.x renamed run_ut to acc_check",
    ("26", "overflow_check"): ("mindstudio-probe 26.x removed overflow_check: for MindSpore use probe_runtime "
                               "(probe_runtime.PrecisionDebugger runs it); for PyTorch it is diff_check"),
    ("26", "overflow_nums"): "mindstudio-probe 26.x calls it diff_nums (in the diff_check section)",
    ("26", "free_benchmark"): "mindstudio-probe 26.x removed free_benchmark",
    ("26", "grad_probe"): "mindstudio-probe 26.x removed grad_probe",
}

# Renames applied by `probe migrate`: (from line, to line, where, old, new).
# where: "task" (the task value and its section key) or "<section>" (a key
# inside that section). PyTorch-only renames carry framework "pytorch".
RENAMES: tuple[tuple[str, str, str, str, str, Optional[str]], ...] = (
    ("8", "26", "task", "run_ut", "acc_check", None),
    ("8", "26", "task", "overflow_check", "diff_check", "pytorch"),
    ("8", "26", "overflow_check", "overflow_nums", "diff_nums", "pytorch"),
)


def line(name: str) -> str:
    """``"8"`` for the 8.x profiles, ``"26"`` for 26.x."""
    return "26" if name == "26" else "8"


def for_version(version: Any) -> str:
    """Profile name for a mindstudio-probe version (a packaging Version or
    a string such as ``"8.1.2"``, ``"26"``): releases before 8.3 are judged
    as 8.1, 8.3 up to 26 as 8.3, 26 and later as 26.

    Raises:
        ValueError: for a string that is not a version.
    """
    from packaging.version import InvalidVersion, Version

    if not isinstance(version, Version):
        try:
            version = Version(str(version))
        except InvalidVersion:
            raise ValueError(f"not a mindstudio-probe version: {version!r}") from None
    if version >= Version("26"):
        return "26"
    if version >= Version("8.3"):
        return "8.3"
    return "8.1"


def select(context: Any) -> tuple[Profile, str]:
    """The profile a context targets, and why (for messages):
    probe_runtime's own profile in the runtime, else the ``msprobe_version``
    fact (flag, pyproject or installed package), else the default."""
    if getattr(context, "runtime", False):
        return PROFILES[RUNTIME], "probe_runtime's own profile"
    fact = context.fact("msprobe_version") if context is not None else None
    if fact is not None:
        return PROFILES[for_version(fact.value)], fact.describe("msprobe_version")
    return PROFILES[DEFAULT], "the default target"


def _at(schema: dict, ptr: str) -> tuple[dict, str]:
    parts = ptr.strip("/").split("/")
    node: Any = schema
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, parts[-1]


def build_schema(base: dict, profile: Profile) -> dict:
    """The JSON Schema of ``profile``, derived from the 8.3 ``base``
    (not modified)."""
    import copy

    schema = copy.deepcopy(base)
    if profile.name == "8.3":
        return schema
    schema["$id"] = f"urn:msprobe-lint:schema:msprobe-config-{profile.name}"
    schema["title"] = f"msprobe config.json ({profile.label})"
    props = schema["properties"]
    for key in profile.top_remove:
        props.pop(key, None)
    for key, sub in profile.top_add.items():
        props[key] = copy.deepcopy(sub)
    for name, section in profile.sections_add.items():
        ref = name.title().replace("_", "") + "Section"
        schema["$defs"][ref[0].lower() + ref[1:]] = copy.deepcopy(section)
        props[name] = {"$ref": f"#/$defs/{ref[0].lower() + ref[1:]}"}
    task = props["task"]
    task["enum"] = list(profile.tasks)
    task["description"] = f"What msprobe collects ({profile.label}): " + ", ".join(profile.tasks) + "."
    task.pop("markdownDescription", None)
    task["examples"] = [profile.tasks[0]]
    for key, reason in profile.deprecate.items():
        section, _, name = key.rpartition(".")
        target = props if not section else schema["$defs"][section]["properties"]
        if name in target:
            target[name] = dict(target[name], deprecated=True, description=reason)
    for section, keys in profile.keys_add.items():
        section_schema = _section(schema, section)
        section_schema["properties"].update(copy.deepcopy(keys))
    for section, removed in profile.keys_remove.items():
        section_schema = _section(schema, section)
        for key in removed:
            section_schema["properties"].pop(key, None)
    for ptr, values in profile.enums.items():
        node, last = _at(schema, ptr)
        node[last] = list(values)
    return schema


def _section(schema: dict, name: str) -> dict:
    ref = schema["properties"][name]["$ref"]
    return schema["$defs"][ref.rsplit("/", 1)[-1]]
