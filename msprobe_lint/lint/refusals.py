"""Combinations of valid values that msprobe refuses at start-up.

Each value passes the schema on its own; msprobe's config classes then
stop the job on the combination (a value the framework does not have, an
option another one excludes, a list that must not be empty). The checks
are reported under the codes of the schema family whose meaning they
share (rules/schema.py): PL102 a value of a type the framework does not
take, PL103 a value not allowed (with the framework, or with another
option), PL104 a list that must not be empty, PL107 a list of the wrong
length. Each says what msprobe does, in its own words, and applies only
to the frameworks and releases whose source shows it: mindstudio-probe
8.1.2 and 8.3.3 (``msprobe/core/common_config.py``,
``core/data_dump/scope.py``, ``mindspore/ms_config.py``,
``mindspore/debugger/debugger_config.py``,
``mindspore/debugger/precision_debugger.py``, ``pytorch/pt_config.py``,
``pytorch/debugger/debugger_config.py``). The 26.x releases are not
judged here (their sources were not read for these checks).

Every check reads the active task's section only: msprobe parses the
section of the task it runs (``parse_task_config``) and no other. When
both frameworks refuse a combination, it is reported with the framework
unknown too; when only one does, only once the framework is known (SPEC
3: a rule that needs a context value it does not have reports nothing).
"""
from __future__ import annotations

import re

from .diagnostic import Finding, set_value
from .positions import pointer

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterator, Optional

    from .config_view import ConfigView
    from .context import Context

#: the releases whose sources these checks were read from
RELEASES = ("8.1", "8.3")
_STOPS = "msprobe stops at start-up with"


def _framework(context: Context) -> Optional[str]:
    """``"pytorch"``, ``"mindspore"`` (MindSpore and MSAdapter share
    msprobe.mindspore's config classes) or None."""
    framework = context.framework
    return "mindspore" if framework == "msadapter" else framework


def _because(context: Context) -> str:
    said = context.describe("framework")
    return f" ({said})" if said else ""


def _quote(text: str) -> str:
    return f'"{text}"'


# ---------------------------------------------------------------- PL102


def wrong_type(config: ConfigView, context: Context) -> Iterator[Finding]:
    """PL102: PyTorch's statistics section takes summary_mode as a string
    only (``BaseConfig._check_summary_mode``: ``summary_mode not in
    Const.SUMMARY_MODE``; 8.1.2 pytorch/pt_config.py:82-85, 8.3.3
    :48-52); the list of statistics is MindSpore's."""
    if config.profile not in RELEASES or context.framework != "pytorch" or config.task != "statistics":
        return
    mode = config.get("statistics", "summary_mode")
    if isinstance(mode, list):
        yield Finding("PL102", "summary_mode must be a string (statistics or md5) for PyTorch, not a list of "
                               f"statistics{_because(context)}: {_STOPS} "
                               "\"summary_mode is invalid, summary_mode is not in ['statistics', 'md5']\"",
                      pointer="/statistics/summary_mode",
                      hint='write "summary_mode": "statistics" (a list of statistics is MindSpore only)',
                      fix=set_value("/statistics/summary_mode", "statistics", 'write "statistics"', safe=False))


# ---------------------------------------------------------------- PL103

# MindSpore's free_benchmark (mindspore/ms_config.py:88-92, mindspore/common/const.py:157,160)
_MS_DEVICES = ("npu",)
_MS_PERT = ("improve_precision", "add_noise", "bit_noise", "no_change", "change_value")
# PyTorch's (pytorch/free_benchmark/common/enums.py: FIX_MODE_LIST, FIX_STAGE_LIST, CPU_MODE_LIST)
_PT_FIX_PERT = ("improve_precision", "to_cpu")


def not_allowed(config: ConfigView, context: Context) -> Iterator[Finding]:
    """PL103: a value msprobe refuses with this framework or with another
    option's value (free_benchmark's device, perturbation and handler;
    summary_mode md5 with async_dump; level L2 with another task than
    tensor on PyTorch; a ``name-regex(...)`` that does not compile)."""
    if config.profile not in RELEASES:
        return
    task = config.task
    if task == "free_benchmark":
        yield from _free_benchmark(config, context)
    if config.profile == "8.3" and config.get("async_dump") is True and task in ("statistics", "tensor"):
        yield from _async_md5(config, context, task)
    if config.level == "L2" and isinstance(task, str):
        yield from _l2_task(config, context, task)
        yield from _bad_regex(config, context, task)


def _free_benchmark(config: ConfigView, context: Context) -> Iterator[Finding]:
    framework = _framework(context)
    if context.framework == "msadapter":
        return  # no free_benchmark on MSAdapter: PL205
    section = "free_benchmark"
    device = config.get(section, "fuzz_device")
    pert = config.get(section, "pert_mode")
    handler = config.get(section, "handler_type")
    stage = config.get(section, "fuzz_stage")
    here = {key: pointer(section, key) for key in ("fuzz_device", "pert_mode", "handler_type", "fuzz_stage",
                                                    "if_preheat", "list")}
    # CPU: MindSpore has neither fuzz_device cpu nor pert_mode to_cpu; PyTorch needs both together
    # (pt_config.py:152-161, 8.3.3 :120-129: "You need to and can only set fuzz_device as cpu when pert_mode in
    # ['to_cpu']"). One of them alone is refused by both; both together by MindSpore only.
    cpu_told = False
    pt_xor = "\"You need to and can only set fuzz_device as cpu when pert_mode in ['to_cpu']\""
    if (device == "cpu") != (pert == "to_cpu") and framework in (None, "pytorch", "mindspore"):
        key, value = ("pert_mode", pert) if pert == "to_cpu" else ("fuzz_device", device)
        if framework == "mindspore":
            yield _ms_cpu(key, value, here[key], context)
        else:
            other = "fuzz_device \"cpu\"" if key == "pert_mode" else "pert_mode \"to_cpu\""
            said = pt_xor if framework == "pytorch" else (
                f"{pt_xor} (PyTorch; MindSpore has no {key} {_quote(value)})")
            yield Finding("PL103", f"{key} {_quote(value)} is not allowed without {other}{_because(context)}: "
                                   f"{_STOPS} {said}", pointer=here[key],
                          hint='for PyTorch\'s CPU comparison set both "fuzz_device": "cpu" and "pert_mode": '
                               f'"to_cpu"; otherwise remove {key}')
        cpu_told = True
    elif device == "cpu" and pert == "to_cpu" and framework == "mindspore":
        for key, value in (("fuzz_device", device), ("pert_mode", pert)):
            yield _ms_cpu(key, value, here[key], context)
        cpu_told = True
    if handler == "fix":
        # MindSpore: pert_mode must be improve_precision, the stage forward (mindspore/debugger/
        # debugger_config.py:64-72); PyTorch: pert_mode improve_precision or to_cpu, stage forward, no preheat
        # (pt_config.py:128-129, 222-243; 8.3.3 :96-97, 195-216)
        # with the framework unknown: what both refuse (MindSpore alone refuses to_cpu, told above)
        allowed = _MS_PERT[:1] if framework == "mindspore" else _PT_FIX_PERT
        if isinstance(pert, str) and pert not in allowed and not (pert == "to_cpu" and cpu_told):
            said = {"mindspore": f"\"pert_mode must be improve_precision or empty when handler_type is fix, but "
                                 f"got {pert}.\"",
                    "pytorch": "\"The pert_mode when opening fix handler must be one of ['improve_precision', "
                               "'to_cpu']\""}.get(framework or "", "\"The pert_mode when opening fix handler must "
                                                                   "be one of ['improve_precision', 'to_cpu']\" "
                                                                   "(PyTorch; MindSpore: \"pert_mode must be "
                                                                   "improve_precision or empty when handler_type is "
                                                                   "fix\")")
            yield Finding("PL103", f"pert_mode {_quote(pert)} is not allowed with handler_type \"fix\""
                                   f"{_because(context)}: {_STOPS} {said}", pointer=here["pert_mode"],
                          hint=f"fix replaces an output with the one computed at {' or '.join(allowed)}: use "
                               f"{'that pert_mode' if len(allowed) == 1 else 'one of those'}, or "
                               "\"handler_type\": \"check\" to compare with other perturbations")
        if stage == "backward":
            said = {"mindspore": "\"handler_type must be check or empty when fuzz_stage is backward, but got fix.\"",
                    "pytorch": "\"The fuzz_stage when opening fix handler must be one of ['forward']\""}.get(
                framework or "", "\"The fuzz_stage when opening fix handler must be one of ['forward']\" (PyTorch; "
                                 "MindSpore: \"handler_type must be check or empty when fuzz_stage is backward\")")
            yield Finding("PL103", f"fuzz_stage \"backward\" is not allowed with handler_type \"fix\""
                                   f"{_because(context)}: {_STOPS} {said}", pointer=here["fuzz_stage"],
                          hint="fix works in the forward pass only: use \"fuzz_stage\": \"forward\", or "
                               "\"handler_type\": \"check\" for the backward pass")
        if framework == "pytorch" and config.get(section, "if_preheat") is True:
            yield Finding("PL103", "if_preheat true is not allowed with handler_type \"fix\""
                                   f"{_because(context)}: {_STOPS} \"Preheating is not supported for fix handler "
                                   "type\"", pointer=here["if_preheat"],
                          hint="remove if_preheat (or set it to false); preheating works with \"handler_type\": "
                               "\"check\" only",
                          fix=set_value(here["if_preheat"], False, "write false", safe=False))
    # PyTorch builds a ListScope for free_benchmark, which takes scope or list, not both
    # (core/data_dump/scope.py:37-38, 108-111; the same in 8.3.3)
    if framework == "pytorch" and config.get(section, "scope") and config.get(section, "list"):
        yield Finding("PL103", f"a list is not allowed beside a non-empty scope in the free_benchmark section"
                               f"{_because(context)}: msprobe stops when the dump starts with a ScopeException "
                               "(\"scope和api_list不可以同时配置\": scope and list cannot both be set)",
                      pointer=here["list"], hint="keep one of them: scope names the APIs to perturb exactly, list "
                                                 "by name fragments; empty the other")


def _ms_cpu(key: str, value: str, at: str, context: Context) -> Finding:
    said = ("\"fuzz_device must be npu or empty\"" if key == "fuzz_device" else
            "\"pert_mode must be improve_precision, add_noise, bit_noise, no_change, change_value or empty\"")
    allowed = _MS_DEVICES if key == "fuzz_device" else _MS_PERT
    return Finding("PL103", f"{key} {_quote(value)} is not allowed for MindSpore{_because(context)}: {_STOPS} "
                            f"{said}", pointer=at,
                   hint=f"MindSpore's free_benchmark allows {key} {', '.join(allowed)}: remove it or use one of "
                        "those (the CPU comparison is PyTorch's)")


def _async_md5(config: ConfigView, context: Context, task: str) -> Iterator[Finding]:
    """8.3.3: async_dump refuses md5 (mindspore/debugger/debugger_config.py:134-139: the string, or a list
    holding it; pytorch/debugger/debugger_config.py:87-91: the string)."""
    mode = config.get(task, "summary_mode")
    framework = _framework(context)
    if mode == "md5":
        said = {"pytorch": "\"The parameters async_dump is true, the parameters summary_mode cannot be md5.\""}.get(
            framework or "", "\"The parameters async_dump is true, the parameters summary_mode cannot be/contain "
                             "md5.\"")
        at = pointer(task, "summary_mode")
    elif isinstance(mode, list) and "md5" in mode and framework == "mindspore":
        said = "\"The parameters async_dump is true, the parameters summary_mode cannot be/contain md5.\""
        at = pointer(task, "summary_mode", mode.index("md5"))
    else:
        return
    yield Finding("PL103", f"summary_mode md5 is not allowed with \"async_dump\": true{_because(context)}: "
                           f"{_STOPS} {said}", pointer=at,
                  hint="use another summary_mode (statistics), or set async_dump to false to compute md5")


def _l2_task(config: ConfigView, context: Context, task: str) -> Iterator[Finding]:
    """PyTorch at L2 dumps one API's kernels, for task tensor only
    (pytorch/debugger/debugger_config.py:64-66, 135-144; 8.3.3 :55-57,
    130-139). overflow_check at L2 is PL201's; grad_probe never reaches
    the check (the debugger returns before)."""
    if context.framework != "pytorch" or task in ("tensor", "overflow_check", "grad_probe"):
        return
    yield Finding("PL103", f"level L2 is not allowed with task {task} for PyTorch{_because(context)}: {_STOPS} "
                           "\"When level is set to L2, the task must be set to tensor.\"", pointer=config.where_level(),
                  hint="PyTorch's L2 dumps the kernels of one API with task tensor; for task "
                       f"{task} use level L1 (or L0, mix)")


def _bad_regex(config: ConfigView, context: Context, task: str) -> Iterator[Finding]:
    """MindSpore's kernel dump (level L2) refuses a list whose
    ``name-regex(...)`` entry does not compile (core/common_config.py:
    126-134, mindspore/debugger/precision_debugger.py:80-81; 8.3.3 :131-139
    and :83-84); PyTorch does not look at it."""
    if _framework(context) != "mindspore":
        return
    names = config.get(task, "list")
    if not isinstance(names, list):
        return
    for index, name in enumerate(names):
        if not (isinstance(name, str) and name.startswith("name-regex(") and name.endswith(")")):
            continue
        try:
            re.compile(name[len("name-regex("):-1])
        except re.error as err:
            yield Finding("PL103", f"{_quote(name)} is not a valid regular expression ({err}){_because(context)}: "
                                   f"{_STOPS} \"Illegal regular expressions exist in the list.\"",
                          pointer=pointer(task, "list", index),
                          hint="fix the expression inside name-regex(...) (escape [ ] ( ) . * + ? with a backslash "
                               "where they are meant literally)")
            return  # msprobe stops at the first


# ---------------------------------------------------------------- PL104


def required_empty(config: ConfigView, context: Context) -> Iterator[Finding]:
    """PL104: with "async_dump": true, task tensor needs a non-empty list
    (but at level debug, which ignores it): 8.1.2 mindspore/debugger/
    debugger_config.py:118-123, pytorch/debugger/debugger_config.py:81-87;
    8.3.3 :125-133 and :78-86."""
    if config.profile not in RELEASES or config.task != "tensor" or config.get("async_dump") is not True:
        return
    if config.level in (None, "debug"):
        return
    names = config.get("tensor", "list")
    if names:
        return
    section = config.data.get("tensor")
    if pointer("tensor") in config.bad or pointer("tensor", "list") in config.bad:
        return  # the wrong type: the schema's finding
    if isinstance(section, dict) and "list" in section:
        at, where = "/tensor/list", "list is empty"
    else:
        at, where = ("/tensor" if isinstance(section, dict) else "/async_dump"), "list is missing"
    yield Finding("PL104", f"the tensor section's {where}, but \"async_dump\": true needs it: {_STOPS} "
                           "\"The parameters async_dump is true in tensor task, the parameters list cannot be "
                           "empty.\"", pointer=at, at="key" if at != "/tensor/list" else "value",
                  hint="name the APIs to dump in \"list\" (e.g. [\"conv2d\"]), or set async_dump to false")


# ---------------------------------------------------------------- PL107


def length_out_of_range(config: ConfigView, context: Context) -> Iterator[Finding]:
    """PL107: PyTorch's L2 (task tensor) takes no scope and a list of
    exactly one API (pytorch/debugger/debugger_config.py:135-141; 8.3.3
    :130-136). With another task at L2 the level is the fault (PL103;
    overflow_check's is PL201)."""
    if config.profile not in RELEASES or context.framework != "pytorch" or config.level != "L2":
        return
    task = config.task
    if task != "tensor":
        return  # another task at L2: its level is the fault (PL103), not the filters
    scope = config.get(task, "scope")
    if isinstance(scope, list) and scope:
        yield Finding("PL107", f"scope has {len(scope)} item(s) at level L2, where it must be empty for PyTorch"
                               f"{_because(context)}: {_STOPS} \"When level is set to L2, the scope cannot be "
                               "configured.\"", pointer=pointer(task, "scope"),
                      hint="empty scope and name the one API in list")
    names = config.get(task, "list")
    if not isinstance(names, list) or len(names) != 1:
        have = f"list has {len(names)} item(s)" if isinstance(names, list) else "list is missing"
        at = pointer(task, "list") if isinstance(names, list) else config.where_level()
        yield Finding("PL107", f"{have} at level L2, where PyTorch needs exactly one API name{_because(context)}: "
                               f"{_STOPS} \"When level is set to L2, the list must be configured as a list with "
                               "one api name.\"", pointer=at,
                      hint=f"write the one API whose kernels to dump, e.g. \"{task}\": {{\"list\": "
                           "[\"Functional.conv2d.0.forward\"]}")
