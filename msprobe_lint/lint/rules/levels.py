"""Levels family (PL201-PL207): which task, level and options fit which
framework and execution mode (SPEC 2.3, from msprobe's
13.overflow_check_MindSpore.md, 30.overflow_check_MSAdapter.md and
02.config_introduction.md)."""
from __future__ import annotations

from ..config_view import ConfigView
from ..context import Context
from ..diagnostic import Finding, Severity, remove, set_value
from .base import rule

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterator

L2_MIN_EXCLUSIVE = "2.5.0"
CHECK_MODE_LAST_HONOURED = "2.3.0"


def _overflow_scenario(config: ConfigView, context: Context) -> str | None:
    """``"graph"`` or ``"dynamic"`` for an overflow_check config, None when
    the scenario is unknown. L2 with the mode unknown is taken to be static
    graph, its only valid scenario (SPEC 3, "Unknown context"). L0/L1 with
    the mode unknown are not taken to be dynamic graph: the SPEC makes the
    L2 inference only, and leaves every other rule that lacks a context
    value silent (a check_mode at L1 may be the trace of a static-graph
    config whose level is what is wrong: "remove check_mode" would then be
    the wrong advice; PL201 says what is wrong once the mode is known)."""
    if context.mode == "graph":
        return "graph"
    if context.mode == "pynative" or context.framework in ("msadapter", "pytorch"):
        return "dynamic"
    if config.level == "L2" and context.framework in (None, "mindspore"):
        return "graph"
    return None


def _because(context: Context, *names: str) -> str:
    said = context.describe(*names)
    return f" ({said})" if said else ""


def _remove_here(ptr: str):
    """Removing an option that has no effect in this scenario: unsafe, as
    the verdict rests on the scenario (mode, framework, versions), and the
    same config may be used in another where the option counts."""
    return remove(ptr, f"remove {ptr.rpartition('/')[2]!r}, which has no effect here", safe=False)


# What probe_runtime (probe run, its PrecisionDebugger) runs in static graph.
_RUNTIME_L2 = ("probe_runtime checks static graph at L2: kernel by kernel on the CPU backend (a step that "
               "overflows is run again under MindSpore's dump), through MindSpore's overflow dump on Ascend")
#: the devices probe_runtime runs level L2 on
_RUNTIME_L2_DEVICES = ("cpu", "ascend")
#: why probe_runtime's L2 on the CPU backend does not run in a distributed job (measured: msrun, CPU)
RUNTIME_L2_DISTRIBUTED = ("MindSpore's CPU AllReduce fails while its dump config is set (\"RunRingAllReduce Memcpy "
                          "error\", msrun on MindSpore 2.7.0 and 2.10.0)")
#: what to do instead
RUNTIME_L2_INSTEAD = ("check the step in one process (python train.py, no launcher), or use level L1 or L0 in "
                      "PyNative mode, which run in every rank")


@rule("PL201", "level-not-allowed", "error", "overflow_check level not allowed in this framework/mode", fix="unsafe")
def level_not_allowed(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    overflow_check works at L0 (Cell/Module) or L1 (API) in MindSpore PyNative,
    MSAdapter and PyTorch, and at L2 (kernel) only in MindSpore static graph
    (GRAPH_MODE). mix and debug are never valid for overflow_check. Any other
    combination collects nothing or stops the job. Other tasks have no level
    rule. Needs the framework or the mode; silent when both are unknown
    (except for mix/debug). Judged for mindstudio-probe 26.0, whose
    MindSpore overflow_check runs at L2 in static graph only (its PyNative
    L0/L1 check is gone), L0 and L1 are reported whatever the mode. Inside
    probe_runtime (PrecisionDebugger, probe run), which checks PyNative at
    L0/L1 and static graph at L2 (on CPU too), the help suggests L2 for a
    static-graph script.

    Bad:
        {"task": "overflow_check", "level": "L1"}    with mode=graph
    Good:
        {"task": "overflow_check", "level": "L2"}    with mode=graph, jit_level=O2
    """
    if config.task != "overflow_check":
        return
    level = config.level
    if level is None:
        return
    at = config.where_level()
    implied = "" if config.level_set() else " (level defaults to L1)"
    framework, mode = context.framework, context.mode
    dynamic = mode == "pynative" or framework in ("msadapter", "pytorch")

    def fit(new: str):  # unsafe: another level collects other things
        return set_value("/level", new, f"change level {level} to {new} to fit the mode", safe=False) \
            if at == "/level" else None

    if config.profile == "26.0":
        if level != "L2" and framework in (None, "mindspore"):
            yield Finding("PL201", f"level {level} does not work for overflow_check in mindstudio-probe 26.0"
                                   f"{implied}: it checks MindSpore at L2 in static graph only (its PyNative L0/L1 "
                                   "check was removed; PrecisionDebugger stops with 'Processor not found')",
                          pointer=at, hint="use \"level\": \"L2\" in static graph, or run the L0/L1 check with "
                                           "probe_runtime's PrecisionDebugger (or mindstudio-probe 8.3)",
                          fix=fit("L2") if mode == "graph" else None)
            return
        if level == "L2" and mode == "pynative":
            yield Finding("PL201", f"level L2 (kernel) works for overflow_check only in MindSpore static graph, "
                                   f"not in PyNative mode{_because(context, 'mode')}", pointer=at,
                          hint="run in GRAPH_MODE with jit_level O2, or use probe_runtime at L1/L0 in PyNative")
        return  # PyTorch and MSAdapter: PL205
    if level in ("mix", "debug"):
        if context.runtime:
            hint = f"use L0 (Cell) or L1 (API) in PyNative mode, L2 in static graph; {_RUNTIME_L2}"
            fix = fit("L2") if mode == "graph" else fit("L1") if dynamic else None
        else:
            hint = "use L0 (Cell) or L1 (API) in PyNative/MSAdapter/PyTorch, L2 in MindSpore static graph"
            fix = fit("L2") if mode == "graph" else fit("L1") if dynamic else None
        yield Finding("PL201", f"level {level} is not valid for overflow_check{implied}", pointer=at, hint=hint,
                      fix=fix)
        return
    if mode == "graph" and level in ("L0", "L1"):
        if context.runtime:
            hint, fix = f"use \"level\": \"L2\", or run the script in PYNATIVE_MODE; {_RUNTIME_L2}", fit("L2")
        else:
            hint, fix = "use \"level\": \"L2\" (with jit_level O2), or run in PYNATIVE_MODE", fit("L2")
        yield Finding("PL201", f"level {level} does not work for overflow_check in MindSpore static graph"
                               f"{implied}{_because(context, 'mode')}", pointer=at, hint=hint, fix=fix)
    elif level == "L2" and dynamic:
        scenario = "PyNative mode" if mode == "pynative" else framework
        hint = "use \"level\": \"L1\" (API) or \"L0\" (Cell)"
        if context.runtime and mode == "pynative":  # a fresh user's finding: built before set_context(GRAPH_MODE)
            hint += (" for PyNative training; if the script switches to GRAPH_MODE later, create PrecisionDebugger "
                     "after set_context(mode=GRAPH_MODE) instead (L1 and L0 see nothing in static graph)")
        yield Finding("PL201", f"level L2 (kernel) works for overflow_check only in MindSpore static graph, "
                               f"not in {scenario}{_because(context, 'framework', 'mode')}", pointer=at,
                      hint=hint, fix=fit("L1"))


@rule("PL202", "l2-needs-jit-o2", "error", "overflow_check L2 in static graph needs jit_level O2")
def l2_needs_o2(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Kernel-level (L2) overflow detection in static graph relies on the O2
    (whole-graph sink) compile of MindSpore; at O0/O1 it finds nothing. When
    the jit_level is unknown this is a warning asking to verify it: set it
    with set_context(jit_config={"jit_level": "O2"}) and tell the linter with
    --jit-level or --script. This is msprobe's own L2 (on Ascend);
    inside probe_runtime (PrecisionDebugger, probe run) it applies on
    Ascend only: probe_runtime's L2 on the CPU backend replays the step
    under MindSpore's dump, which works at any jit_level.

    Bad:
        ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
    Good:
        ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O2"})
    """
    if config.task != "overflow_check" or config.level != "L2":
        return
    if _overflow_scenario(config, context) != "graph":
        return
    if context.runtime and str(context.value("device") or "").lower() != "ascend":
        return  # probe_runtime's CPU L2 replays under MindSpore's dump: any jit_level works
    jit = context.value("jit_level")
    at = config.where_level()
    if jit is None:
        yield Finding("PL202", "level L2 needs jit_level O2 in static graph; the jit_level is unknown, verify it",
                      pointer=at, severity=Severity.WARNING,
                      hint="set_context(jit_config={\"jit_level\": \"O2\"}), then pass --jit-level O2 or --script")
    elif jit != "O2":
        yield Finding("PL202", f"level L2 needs jit_level O2, not {jit}{_because(context, 'jit_level')}",
                      pointer=at, hint="set_context(jit_config={\"jit_level\": \"O2\"}); msprobe's L2 also needs "
                                       "an Ascend device (probe_runtime's L2 on CPU needs neither)")


@rule("PL203", "l2-needs-new-mindspore", "error", "overflow_check L2 in static graph needs MindSpore > 2.5.0")
def l2_needs_new_mindspore(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe's kernel-level overflow check in static graph needs MindSpore
    newer than 2.5.0 (2.5.0 itself is too old). Warning when the version is
    unknown.

    Bad:
        level L2, graph mode, MindSpore 2.5.0
    Good:
        level L2, graph mode, MindSpore 2.6.0
    """
    if config.task != "overflow_check" or config.level != "L2":
        return
    if _overflow_scenario(config, context) != "graph":
        return
    version = context.value("mindspore_version")
    at = config.where_level()
    if version is None:
        yield Finding("PL203", "level L2 needs MindSpore newer than 2.5.0; the version is unknown, verify it",
                      pointer=at, severity=Severity.WARNING,
                      hint="pass --mindspore-version or install MindSpore > 2.5.0")
    elif version <= _version(L2_MIN_EXCLUSIVE):
        yield Finding("PL203", f"level L2 needs MindSpore newer than 2.5.0, not {version}"
                               f"{_because(context, 'mindspore_version')}",
                      pointer=at, hint="upgrade MindSpore to 2.6 or later")


@rule("PL204", "option-no-effect", "warning", "overflow_check option that has no effect here", fix="unsafe")
def option_no_effect(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    check_mode is read only in MindSpore static graph, and only MindSpore
    older than 2.3.0 honours it: with any current MindSpore every check_mode
    draws this warning, whatever its value (even the default "all").
    overflow_nums is not used in static graph by msprobe (probe_runtime's
    L2 uses it: not reported inside probe_runtime). Fires whenever the key is
    present; remove it to silence the warning. With the mode unknown, an L2
    config is taken to be static graph (its only valid scenario), so
    overflow_nums there is reported; an L0/L1 config implies no mode, so
    check_mode there is reported only once the mode (pynative), the
    framework (msadapter, pytorch) or a MindSpore >= 2.3.0 is known.

    Bad:
        "overflow_check": {"check_mode": "aicore"}    with mode=pynative
    Good:
        "overflow_check": {"overflow_nums": 1}
    """
    if config.task != "overflow_check":
        return
    if config.has("overflow_check", "check_mode"):
        reasons = []
        if context.mode == "pynative" or context.framework in ("msadapter", "pytorch"):
            reasons.append("only MindSpore static graph reads it" + _because(context, "framework", "mode"))
        version = context.value("mindspore_version")
        if version is not None and version >= _version(CHECK_MODE_LAST_HONOURED):
            reasons.append("MindSpore 2.3.0 and later ignore it" + _because(context, "mindspore_version"))
        if reasons:
            yield Finding("PL204", "check_mode has no effect: " + "; ".join(reasons),
                          pointer="/overflow_check/check_mode", at="key", hint="remove check_mode",
                          fix=_remove_here("/overflow_check/check_mode"))
    if config.has("overflow_check", "overflow_nums") and _overflow_scenario(config, context) == "graph" \
            and not context.runtime \
            and not config.profile.startswith("26"):  # 26.0 no longer reads it at all: PL106
        yield Finding("PL204", "overflow_nums has no effect in MindSpore static graph" + _because(context, "mode"),
                      pointer="/overflow_check/overflow_nums", at="key", hint="remove overflow_nums",
                      fix=_remove_here("/overflow_check/overflow_nums"))


@rule("PL205", "task-not-available", "error", "Task not available for the framework (or for probe_runtime)")
def task_not_available(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    run_ut exists for PyTorch only; free_benchmark and grad_probe are not
    available on MSAdapter; mindstudio-probe 26.0 runs overflow_check for
    MindSpore static graph only (PyTorch's is diff_check); in 8.3,
    exception_dump is MindSpore's (PyTorch's config has no class for it and
    stops at start-up). Inside probe_runtime (PrecisionDebugger, probe
    run) it also reports what the bundled runtime cannot run: any task but
    overflow_check, level L2 on a device other than the CPU or Ascend
    (msprobe's own L2 needs Ascend; probe_runtime's runs on the CPU backend
    too), and level L2 on the CPU backend in a distributed job (world size
    over 1: MindSpore's CPU AllReduce fails while its dump config is set).

    Bad:
        {"task": "free_benchmark"}    with framework=msadapter
    Good:
        {"task": "overflow_check", "level": "L1"}    with framework=msadapter
    """
    task = config.task
    if task is None:
        return
    framework = context.framework
    at = "/task" if "task" in config.data else ""
    if task == "run_ut" and framework not in (None, "pytorch"):
        yield Finding("PL205", f"task run_ut is available for PyTorch only, not {framework}"
                               f"{_because(context, 'framework')}", pointer=at,
                      hint="use msprobe's MindSpore accuracy checker CLI instead")
    elif task in ("free_benchmark", "grad_probe") and framework == "msadapter":
        yield Finding("PL205", f"task {task} is not available on MSAdapter{_because(context, 'framework')}",
                      pointer=at)
    elif task == "overflow_check" and config.profile == "26.0" and framework in ("pytorch", "msadapter"):
        what = ("its PyTorch overflow check is the diff_check task" if framework == "pytorch" else
                "it checks MindSpore static graph at L2 only, and MSAdapter runs in PyNative")
        yield Finding("PL205", f"task overflow_check is not available for {framework} in mindstudio-probe 26.0: "
                               f"{what}{_because(context, 'framework')}", pointer=at,
                      hint="use \"task\": \"diff_check\"" if framework == "pytorch" else
                      "use probe_runtime's PrecisionDebugger, or mindstudio-probe 8.3")
    elif task == "exception_dump" and framework == "pytorch" and config.profile == "8.3":
        # 8.3.3 lists the task (core/common/const.py TASK_LIST) but pytorch/pt_config.py:273-286 has no
        # config class for it: parse_task_config calls TaskDict.get(task), None
        yield Finding("PL205", "task exception_dump is not available for PyTorch in mindstudio-probe 8.3"
                               f"{_because(context, 'framework')}: its PyTorch config has no exception_dump class, "
                               "so PrecisionDebugger stops at start-up with \"TypeError: 'NoneType' object is not "
                               "callable\"", pointer=at,
                      hint="exception_dump is MindSpore's in 8.3; for PyTorch use task tensor or statistics")
    if not context.runtime:
        return
    if task != "overflow_check":
        yield Finding("PL205", f"probe_runtime runs only task overflow_check, not {task}", pointer=at,
                      hint="use msprobe itself for other tasks, or set \"task\": \"overflow_check\"")
    elif config.level == "L2" and context.value("device") is not None \
            and str(context.value("device")).lower() not in _RUNTIME_L2_DEVICES:
        yield Finding("PL205", f"probe_runtime runs level L2 (kernel) on the CPU backend and on Ascend, not on "
                               f"{context.value('device')}{_because(context, 'device')}",
                      pointer=config.where_level(), hint="run on the CPU backend (device_target=\"CPU\"), or use "
                                                         "level L1 or L0 in PyNative mode")
    elif config.level == "L2" and str(context.value("device") or "").lower() == "cpu" \
            and (context.value("world_size") or 1) > 1:
        yield Finding("PL205", f"probe_runtime runs level L2 (kernel) on the CPU backend in a single process only, "
                               f"not in a distributed job of {context.value('world_size')} processes"
                               f"{_because(context, 'device', 'world_size')}: {RUNTIME_L2_DISTRIBUTED}",
                      pointer=config.where_level(), hint=RUNTIME_L2_INSTEAD)


@rule("PL206", "inactive-section", "info", "Section for a task other than the active one", fix="unsafe")
def inactive_section(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Only the section named by "task" is read; the others are ignored. Often
    harmless (msprobe's default config carries every section), but an
    option edited in the wrong section has no effect.

    Bad:
        {"task": "overflow_check", "statistics": {"summary_mode": "md5"}}
    Good:
        {"task": "overflow_check", "overflow_check": {"overflow_nums": 1}}
    """
    from ..profiles import PROFILES

    task = config.task
    if task is None:
        return
    # With no "task" of its own (msprobe's default task, or a misspelt key that another rule renames in the
    # same --fix run), the section is what the user meant: it is named, never removed (a fresh user lost
    # overflow_nums that way).
    chosen = isinstance(config.data, dict) and "task" in config.data
    for name in PROFILES[config.profile].tasks:
        if name != task and name in config.data:
            # a key the active section would read and does not set is a value put in the wrong section
            # (PL105 says so): removing the section would lose it, so that is left to the user
            misplaced = _misplaced(config, name, task)
            message = f"section {name!r} is ignored: the active task is {task}" + (
                "" if chosen else " (msprobe's default: the config sets no \"task\")")
            if chosen and misplaced:
                hint = (f"move {_quoted(misplaced)} into the {task} section (PL105), then remove it; or set "
                        f"\"task\": \"{name}\"")
            else:
                hint = f"remove it, or set \"task\": \"{name}\"" if chosen else f"set \"task\": \"{name}\""
            yield Finding("PL206", message, pointer=f"/{name}", at="key", hint=hint,
                          fix=remove(f"/{name}", f"remove the inactive section {name!r}", safe=False)
                          if chosen and not misplaced else None)


def _misplaced(config: ConfigView, name: str, task: str) -> list[str]:
    """The keys of the inactive section ``name`` that the ``task``
    section reads (schema key index of the config's profile) and does not
    set: values the user most likely meant for the active task."""
    from ..schema.files import key_index

    section, active = config.data.get(name), config.data.get(task)
    if not isinstance(section, dict):
        return []
    readable = key_index(config.profile).get(task, {})
    set_there = active if isinstance(active, dict) else {}
    return [key for key in section if key in readable and key not in set_there]


def _quoted(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


@rule("PL207", "option-unused-by-task", "warning", "Option set for a task or level that does not use it", fix="unsafe")
def option_unused(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    async_dump works only for tasks statistics and tensor at levels L0, L1,
    mix and debug; the top-level precision only for statistics and tensor.
    Elsewhere they are ignored.

    Bad:
        {"task": "overflow_check", "async_dump": true}
    Good:
        {"task": "statistics", "level": "L1", "async_dump": true}
    """
    task, level = config.task, config.level
    if task is None:
        return
    if config.get("async_dump") is True and level is not None:
        if task not in ("statistics", "tensor") or level not in ("L0", "L1", "mix", "debug"):
            yield Finding("PL207", f"async_dump has no effect with task {task} at level {level}; "
                                   "it works only for statistics/tensor at L0, L1, mix or debug",
                          pointer="/async_dump", at="key", hint="remove async_dump or set it to false",
                          fix=_remove_here("/async_dump"))
    if config.has("precision") and task not in ("statistics", "tensor"):
        yield Finding("PL207", f"precision has no effect with task {task}; it is used by statistics and tensor",
                      pointer="/precision", at="key", hint="remove precision", fix=_remove_here("/precision"))


def _version(text: str) -> Any:
    """``packaging.version.Version(text)`` (imported when a rule compares
    a known version)."""
    from packaging.version import Version

    return Version(text)
