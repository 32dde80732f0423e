"""Release profiles: what each mindstudio-probe release accepts.

A config is judged by the release it targets, the way ruff judges code by
``target-version``. The facts come from the mindstudio-probe 8.1.2, 8.3.3,
26.0.0, 26.1.0.post1 and 26.2.0 wheels (``msprobe/core/common/const.py``
task lists, ``core/common_config.py`` (26.x ``core/dump/common_config.py``)
and the framework config classes ``mindspore/ms_config.py`` and
``pytorch/pt_config.py`` (26.x under ``dump/``); see
docs/profiles-research.md):

- 8.3 is the hand-written ``schema/msprobe-config.schema.json`` (the format
  SPEC section 2 documents, and the default target);
- 8.1 lacks the exception_dump task and the top-level ``precision`` (8.1
  reads ``precision`` inside the statistics section only), and knows fewer
  statistics names for a MindSpore ``summary_mode`` list;
- 26.0 renamed run_ut to acc_check, replaced PyTorch's overflow_check by
  diff_check (``overflow_nums`` -> ``diff_nums``), kept MindSpore's
  overflow_check for static graph L2 only (its ``check_mode`` still read,
  ``overflow_nums`` no longer: ``ms_config.OverflowCheckConfig``; the
  MindSpore data processors have no overflow_check entry, so PyNative L0/L1
  fails in ``data_processor/factory.py``), dropped free_benchmark and
  grad_probe, stopped reading enable_dataloader, added the top-level keys
  dump_enable, extra_info and risk_level, the PyTorch tensor section's
  ``bench_path`` and ``diff_nums`` (with a bench_path, ``factory.py`` runs
  the diff_check processor for task tensor: an md5 comparison as it
  dumps) and the summary mode ``xor``. ``BaseConfig`` reads ``diff_nums``
  (and ``check_mode``) in every task section; only diff_check and the
  tensor section with a bench_path use ``diff_nums``;
- 26.1 removed overflow_check (``Const.TASK_LIST``), added nan_check
  (PyTorch) and the top-level custom_op_namespaces, and stopped reading
  ``check_mode`` and the tensor section's ``file_format``;
- 26.2 added the top-level ``load`` and the section keys ``slice`` and
  ``request_id`` (``LoadConfig`` and ``BaseConfig`` in 26.2.0's
  common_config.py).

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
        name: ``"8.1"``, ``"8.3"``, ``"26.0"``, ``"26.1"`` or ``"26.2"``.
        label: shown in messages, e.g. ``"mindstudio-probe 26.1"``.
        tasks: the task names it accepts (the ``task`` enum and the
            sections, in that order).
        top_add: top-level keys it adds (name -> schema).
        top_remove: top-level keys it does not accept.
        deprecate: keys (``"key"``, or ``"<$defs name>.key"`` for a section
            key) it accepts but no longer reads -> reason shown with PL106.
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
SUMMARY_STRINGS_26 = {"/$defs/statisticsSection/properties/summary_mode/anyOf/0/enum": ["statistics", "md5", "xor"],
                      "/$defs/tensorSection/properties/summary_mode/enum": ["statistics", "md5", "xor"]}
_DIFF_NUMS = {"type": "integer", "minimum": -1, "not": {"const": 0}, "x-probe-code": {"not": "PL107"}, "default": 1,
              "description": "Stop after this many differences; -1 never stops."}
_TOP_26 = {
    "dump_enable": {"title": "Dump switch", "description": "Turns dumping on or off while the job runs "
                    "(mindstudio-probe 26.x); null leaves it to the debugger's start/stop.",
                    "type": ["boolean", "null"]},
    "extra_info": {"title": "Extra information", "description": "Write extra information with the dump "
                   "(mindstudio-probe 26.x).", "type": "boolean", "default": True},
    "risk_level": {"title": "Risk level", "description": "Which APIs to dump by risk (mindstudio-probe "
                   "26.x): CORE, FOCUS or ALL.", "type": "string", "enum": ["CORE", "FOCUS", "ALL"],
                   "default": "FOCUS"},
}
_CUSTOM_OPS = {"custom_op_namespaces": {"title": "Custom operator namespaces", "description": "PyTorch namespaces "
                                        "of custom operators to dump (mindstudio-probe 26.1 and later).",
                                        **_STRING_LIST}}
_LOAD = {"load": {"title": "Load", "description": "Re-run recorded modules from an earlier dump "
                  "(mindstudio-probe 26.2).", "type": "object", "additionalProperties": False,
                  "required": ["path"],
                  "properties": {"path": {"type": "string", "minLength": 1, "x-probe-code": {"minLength": "PL104"}},
                                 "modules": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                 "step": _INDEX_LIST, "rank": _INDEX_LIST,
                                 "dump_after_load": {"type": "boolean"}}}}
_ACC_CHECK = {"title": "acc_check task section", "description": "Options of the acc_check task "
              "(PyTorch; the 8.x run_ut).", "type": "object", "additionalProperties": False,
              "properties": {"white_list": _STRING_LIST, "black_list": _STRING_LIST,
                             "error_data_path": {"type": "string", "description": "Where failing "
                                                 "API data is written (an absolute path)."}}}


def _diff_check(check_mode: bool) -> dict:
    properties: dict = {"diff_nums": _DIFF_NUMS}
    if check_mode:
        properties["check_mode"] = {"type": "string", "enum": ["all", "aicore", "atomic"],
                                    "description": "Read by 26.0 only."}
    return {"title": "diff_check task section", "description": "Options of the diff_check task "
            "(PyTorch; the 8.x overflow_check).", "type": "object", "additionalProperties": False,
            "properties": properties}


_NAN_CHECK = {"title": "nan_check task section", "description": "Options of the nan_check task "
              "(PyTorch on NPU, level L1, mindstudio-probe 26.1 and later).", "type": "object",
              "additionalProperties": False,
              "properties": {"scope": {"$ref": "#/$defs/scope"}, "list": {"$ref": "#/$defs/list"},
                             "data_mode": {"$ref": "#/$defs/dataMode"}, "tensor_list": _STRING_LIST}}
_TENSOR_26 = {"bench_path": {"type": "string", "description": "Benchmark dump to compare against while "
                             "dumping (PyTorch, 26.x): the tensor task then runs an md5 comparison."},
              "diff_nums": dict(_DIFF_NUMS, description="With bench_path: stop after this many differences; "
                                "-1 never stops (PyTorch, 26.x).")}
_TENSOR_26_2 = {"slice": {"type": "array", "items": {"type": "object"},
                          "description": "Slices of each tensor to save (26.2)."},
                "request_id": {"type": "string", "description": "Request to dump (26.2)."}}
_ONLINE_RUN_UT = ("online_run_ut", "nfs_path", "host", "port", "tls_path", "online_run_ut_recompute")
# Online run_ut (PyTorch): 8.1.2 reads these keys (``pytorch/pt_config.py``:
# ``TensorConfig`` and ``RunUTConfig``, the tls_path checked as a readable
# folder); 8.3.3 reads none of them (its TensorConfig and RunUTConfig no
# longer do), so the 8.3 schema marks them deprecated (PL106: accepted, not
# read) and 8.1 gets them back as they were.
_NOT_READ_8_3 = "mindstudio-probe 8.3 no longer reads it (online run_ut, PyTorch, was removed after 8.1)"
_ONLINE_KEYS_8_1 = {
    "tensor": {
        "online_run_ut": {"title": "Online run_ut", "type": "boolean", "default": False,
                          "description": "PyTorch: check APIs online while dumping (mindstudio-probe 8.1)."},
        "nfs_path": {"title": "NFS path", "type": "string", "description": "Shared folder for online run_ut."},
        "host": {"title": "Host", "type": "string", "description": "Address of the online run_ut peer."},
        "port": {"title": "Port", "$ref": "#/$defs/port",
                 "description": "Port of the online run_ut peer (0-65535)."},
        "tls_path": {"title": "TLS path", "type": "string", "description": "Folder of the TLS certificates "
                     "(client.key, client.crt, ca.crt) for online run_ut."},
        "online_run_ut_recompute": {"title": "Online run_ut recompute", "type": "boolean", "default": False,
                                    "description": "Online run_ut: the model uses recomputation."},
    },
    "run_ut": {
        "is_online": {"title": "Online", "type": "boolean", "default": False,
                      "description": "Re-run APIs online, on data sent from the training job (mindstudio-probe 8.1)."},
        "nfs_path": {"title": "NFS path", "type": "string", "description": "Shared folder for online run_ut."},
        "host": {"title": "Host", "type": "string", "description": "Address of the online run_ut peer."},
        "port": {"title": "Port", "$ref": "#/$defs/port"},
        "rank_list": {"title": "Rank list", "type": "array", "items": {"type": "integer", "minimum": 0},
                      "description": "Ranks (integers >= 0) whose APIs are re-run online."},
        "tls_path": {"title": "TLS path", "type": "string",
                     "description": "Folder of the TLS certificates for online run_ut."},
    },
}
_DROPPED_26 = ("free_benchmark", "run_ut", "grad_probe")
_NOT_READ_26 = "mindstudio-probe 26.x no longer reads it"

PROFILES: dict[str, Profile] = {
    "8.1": Profile(
        name="8.1", label="mindstudio-probe 8.1", schema_file="msprobe-config-8.1.schema.json",
        tasks=TASKS_8_3[:-1],
        top_remove=("precision", "exception_dump"),
        enums={SUMMARY_LIST: ["max", "min", "mean", "l2norm", "md5"]},
        keys_add=_ONLINE_KEYS_8_1,
    ),
    # deprecate: only named here (for the release note of PL106); the 8.3
    # schema file itself marks them (build_schema leaves 8.3 as written)
    "8.3": Profile(name="8.3", label="mindstudio-probe 8.3", tasks=TASKS_8_3,
                   deprecate={**{f"tensorSection.{key}": _NOT_READ_8_3 for key in _ONLINE_RUN_UT},
                              **{f"runUtSection.{key}": _NOT_READ_8_3 for key in _ONLINE_KEYS_8_1["run_ut"]}}),
    "26.0": Profile(
        name="26.0", label="mindstudio-probe 26.0", schema_file="msprobe-config-26.0.schema.json",
        tasks=("statistics", "tensor", "acc_check", "structure", "overflow_check", "diff_check", "exception_dump"),
        top_remove=_DROPPED_26,
        deprecate={"enable_dataloader": _NOT_READ_26,
                   "overflowCheckSection.overflow_nums": "mindstudio-probe 26.0 no longer reads it (its MindSpore "
                                                         "overflow_check runs at L2 in static graph only)"},
        top_add=_TOP_26,
        sections_add={"acc_check": _ACC_CHECK, "diff_check": _diff_check(check_mode=True)},
        keys_add={"tensor": _TENSOR_26},
        keys_remove={"tensor": _ONLINE_RUN_UT},
        enums=SUMMARY_STRINGS_26,
    ),
    "26.1": Profile(
        name="26.1", label="mindstudio-probe 26.1", schema_file="msprobe-config-26.1.schema.json",
        tasks=("statistics", "tensor", "acc_check", "structure", "diff_check", "exception_dump", "nan_check"),
        top_remove=("overflow_check",) + _DROPPED_26,
        deprecate={"enable_dataloader": _NOT_READ_26,
                   "tensorSection.file_format": "mindstudio-probe 26.1 and later no longer read it"},
        top_add={**_TOP_26, **_CUSTOM_OPS},
        sections_add={"acc_check": _ACC_CHECK, "diff_check": _diff_check(check_mode=False), "nan_check": _NAN_CHECK},
        keys_add={"tensor": _TENSOR_26},
        keys_remove={"tensor": _ONLINE_RUN_UT},
        enums=SUMMARY_STRINGS_26,
    ),
}
PROFILES["26.2"] = PROFILES["26.1"]._replace(
    name="26.2", label="mindstudio-probe 26.2", schema_file="msprobe-config-26.2.schema.json",
    top_add={**_TOP_26, **_CUSTOM_OPS, **_LOAD}, keys_add={"tensor": {**_TENSOR_26, **_TENSOR_26_2}})

# Deprecated keys a release still reads, with the default that makes them
# inert: removing one is safe only when it holds that default (8.x PyTorch
# still honours "enable_dataloader": true, core/common_config.py and
# pytorch/debugger/precision_debugger.py of 8.3.3).
STILL_READ: dict[str, dict[str, Any]] = {"8.1": {"enable_dataloader": False}, "8.3": {"enable_dataloader": False}}

# msprobe's ATB dump config (26.x, ``load_atb_probe.sh --config``; lint/atb.py
# tells it apart and says where the facts come from): its keys, the ones
# only it has, and its tasks. Kept here, beside the release data, so the
# engine can rule a file out without loading anything.
ATB_ONLY_KEYS = frozenset({"exec_range", "ids", "op_name", "save_child", "filter_level"})
ATB_KEYS = ATB_ONLY_KEYS | {"task", "dump_enable", "device"}
ATB_TASKS = ("tensor", "statistics", "all")

# What a key or task means in the other release line, for migration hints:
# (release line the config is judged by, name) -> message.
MIGRATION_NOTES: dict[tuple[str, str], str] = {
    ("8", "acc_check"): "acc_check is the mindstudio-probe 26.x name of run_ut",
    ("8", "diff_check"): "diff_check is the mindstudio-probe 26.x name of PyTorch's overflow_check",
    ("8", "diff_nums"): "diff_nums is the mindstudio-probe 26.x name of overflow_nums",
    ("8", "nan_check"): "nan_check is a task of mindstudio-probe 26.1 and later",
    ("26", "run_ut"): "mindstudio-probe 26.x renamed run_ut to acc_check",
    ("26", "overflow_check"): ("mindstudio-probe 26.1 removed overflow_check (26.0 kept it for MindSpore static "
                               "graph at L2 only): for MindSpore use probe_runtime (probe_runtime.PrecisionDebugger "
                               "runs it); for PyTorch it is diff_check"),
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
    return "26" if name.startswith("26") else "8"


def for_version(version: Any) -> str:
    """Profile name for a mindstudio-probe version (a packaging Version or
    a string such as ``"8.1.2"``, ``"26.1.0.post1"``): releases before 8.3
    are judged as 8.1, 8.3 up to 26 as 8.3, then 26.0, 26.1, and 26.2 and
    later as 26.2. A bare ``"26"`` is 26.0, as version numbers compare.

    Raises:
        ValueError: for a string that is not a version, or a version of no
            release line (:func:`no_release_line`).
    """
    from packaging.version import InvalidVersion, Version

    if not isinstance(version, Version):
        try:
            version = Version(str(version))
        except InvalidVersion:
            raise ValueError(f"not a mindstudio-probe version: {version!r}") from None
    wrong = no_release_line(version)
    if wrong:
        raise ValueError(wrong)
    if version >= Version("26.2"):
        return "26.2"
    if version >= Version("26.1"):
        return "26.1"
    if version >= Version("26"):
        return "26.0"
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
        section = copy.deepcopy(section)
        if section.get("type") == "object":  # null: read as absent, as every section (rules/schema.py, _DEFAULTED)
            section["type"] = ["object", "null"]
        schema["$defs"][ref[0].lower() + ref[1:]] = section
        props[name] = {"$ref": f"#/$defs/{ref[0].lower() + ref[1:]}"}
    task = props["task"]
    task["enum"] = list(profile.tasks) + [None, ""]  # read as absent: statistics (rules/schema.py, _DEFAULTED)
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


def no_release_line(version: Any) -> str:
    """Why ``version`` (a packaging Version) names no mindstudio-probe
    release: its release lines are 1.x, 8.x and 26.x and later (PyPI's
    release history); "" for a version on one of them."""
    if version.major in (1, 8) or version.major >= 26:
        return ""
    return f"there is no mindstudio-probe {version}: its release lines are 1.x, 8.x and 26.x"
