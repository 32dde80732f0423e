"""Script family (PL501-PL506): the training script given with --script,
analysed statically with ``ast`` (never run or imported; see
``msprobe_lint/lint/script/``). Findings are reported at the script's own
line and column. Rules that must see every call on the debugger (PL502,
PL504, PL505) stay silent when it is passed on, stored elsewhere or used
from a helper function."""
from __future__ import annotations

from ..config_view import ConfigView
from ..context import Context
from ..diagnostic import Finding
from .base import rule

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:  # and the analysis module only when there is a script
    from typing import Any, Iterator, Optional

    from ..script import Debugger, DebuggerCall, ScriptAnalysis


def _script(context: Context) -> Optional[ScriptAnalysis]:
    if context.script is None:
        return None
    from ..script import ScriptAnalysis

    return context.script if isinstance(context.script, ScriptAnalysis) else None


def _at(script: ScriptAnalysis, code: str, line: int, column: int, message: str,
        hint: Optional[str] = None) -> Finding:
    return Finding(code, message, hint=hint, path=script.path, line=line, column=column)


def _level(config: ConfigView, debugger: Optional[Debugger] = None) -> tuple[Any, str]:
    """The level in force and where it came from: the constructor's
    ``level=`` overrides the config."""
    if debugger is not None and debugger.level_given:
        return debugger.level, f"PrecisionDebugger(level=...) at line {debugger.line}"
    if config.level_set():
        return config.level, config.path
    return config.level, f"{config.path} (default)"


def _scenario(config: ConfigView, context: Context) -> tuple[Optional[str], str]:
    """(``"dynamic"``, ``"graph"`` or None, why). Like the level rules,
    an overflow_check level fixes the scenario when the mode is unknown:
    L2 only runs in static graph, L0/L1 only in dynamic graph."""
    said = context.describe("framework", "mode")
    if context.mode == "graph":
        return "graph", context.describe("mode")
    if context.mode == "pynative":
        return "dynamic", context.describe("mode")
    if context.framework in ("msadapter", "pytorch"):
        return "dynamic", context.describe("framework")
    if config.task == "overflow_check" and context.framework in (None, "mindspore"):
        if config.level == "L2":
            return "graph", "overflow_check level L2 runs only in static graph"
        if config.level in ("L0", "L1"):
            return "dynamic", f"overflow_check level {config.level} runs only in dynamic graph"
    return None, said


def _because(why: str) -> str:
    return f" ({why})" if why else ""


@rule("PL501", "direct-api-import", "warning",
      "(script) Function imported by name from an intercepted namespace bypasses L1 interception")
def direct_import(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    At L1, msprobe and probe_runtime intercept APIs by replacing the
    functions on their modules (mindspore.ops, mindspore.mint,
    mindspore.mint.nn.functional, torch, torch.nn.functional). A name bound
    with `from mindspore.ops import relu` keeps the original function, so
    no call through it is recorded under the API's name: probe_runtime
    still records the Primitive calls inside it (`Primitive.ReLU`), without
    the API's name and arguments; a tool that intercepts only the module
    functions records nothing. Importing modules or classes
    (`from mindspore import nn, ops, Tensor`) is fine. Reported at the
    import; only at levels that intercept APIs (L1, mix).

    Bad:
        from mindspore.ops import relu
        out = relu(x)
    Good:
        from mindspore import ops
        out = ops.relu(x)
    """
    script = _script(context)
    if script is None or config.level not in ("L1", "mix"):
        return
    from ..script import MINDSPORE_NAMESPACES, TORCH_NAMESPACES

    framework = context.framework
    for item in script.direct_imports:
        if item.module in MINDSPORE_NAMESPACES and framework == "pytorch":
            continue
        if item.module in TORCH_NAMESPACES and framework == "mindspore":
            continue
        parent, _, leaf = item.module.rpartition(".")
        use_module = f"`from {parent} import {leaf}`" if parent else f"`import {item.module}`"
        if item.name == "*":
            yield _at(script, "PL501", item.line, item.column,
                      f"`from {item.module} import *` binds its functions by name: calls through them bypass "
                      f"level {config.level} API interception (at most the Primitive calls inside are recorded)",
                      hint=f"{use_module} and call {leaf}.<function>(...)")
            continue
        used = f" (first called at line {item.first_use})" if item.first_use else ""
        yield _at(script, "PL501", item.line, item.column,
                  f"{item.name} is bound directly from {item.module}: calls through {item.bound}{used} bypass "
                  f"level {config.level} API interception (at most the Primitive calls inside are recorded)",
                  hint=f"{use_module} and call {leaf}.{item.name}(...)")


@rule("PL502", "debugger-not-started", "error",
      "(script) Debugger never started, or start()/stop() out of order in the training loop")
def not_started(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Nothing is collected until start() runs. In PyNative (dynamic graph)
    with a training loop (a for/while whose body calls start()), each step
    must call start() before stop(): a stop() first ends nothing and the
    step runs unchecked, and a start() with no stop() leaves the step's data
    unwritten. In graph mode or with Model.train only "never started"
    applies. A step that begins with stop() and ends with start(), after a
    start() before the loop, is fine (each step is stopped, the next one
    started). A module-level debugger used in one function only is judged
    in that function. Silent when the debugger is passed to other
    functions, stored elsewhere, or driven from helper functions.

    Bad:
        debugger = PrecisionDebugger(config_path="./config.json")
        for x in loader:
            debugger.start()
            net(x)
    Good:
        debugger = PrecisionDebugger(config_path="./config.json")
        for x in loader:
            debugger.start()
            net(x)
            debugger.stop()
            debugger.step()
    """
    script = _script(context)
    if script is None:
        return
    for debugger in script.debuggers:
        if debugger.escapes:
            continue
        starts = debugger.called("start")
        if not starts:
            yield _at(script, "PL502", debugger.line, debugger.column,
                      "PrecisionDebugger is created but start() is never called: nothing is collected",
                      hint="call debugger.start() (start(model) at L0) before the training step")
            continue
        scenario, why = _scenario(config, context)
        if scenario != "dynamic" or script.model_train is not None:
            continue
        yield from _loop_order(script, debugger, starts, why)


def _loop_order(script: ScriptAnalysis, debugger: Debugger, starts: list[DebuggerCall],
                why: str) -> Iterator[Finding]:
    reported: set[tuple[int, int]] = set()
    for start in starts:
        if not start.loops:
            continue
        loop = start.loops[-1]
        if loop in reported:
            continue
        in_loop = [c for c in debugger.calls if loop in c.loops and c.method in ("start", "stop")]
        stops = [c for c in in_loop if c.method == "stop"]
        if not stops:
            reported.add(loop)
            yield _at(script, "PL502", start.line, start.column,
                      f"start() runs on every pass of the training loop at line {loop[0]} but stop() is never "
                      f"called in it: msprobe writes a step's data at stop(), so it is never written"
                      f"{_because(why)}",
                      hint="call debugger.stop() at the end of each step (then debugger.step())")
            continue
        first = min(in_loop, key=lambda c: c.order)
        last = max(in_loop, key=lambda c: c.order)
        started_before = any(c.method == "start" and loop not in c.loops and c.order < loop
                             for c in debugger.calls)
        if first.method == "stop" and last.method == "start" and started_before:
            continue  # start() before the loop, then stop(); start() per step: every step is checked
        if first.method == "stop":
            reported.add(loop)
            yield _at(script, "PL502", first.line, first.column,
                      f"stop() comes before start() in the training loop at line {loop[0]}: each step runs "
                      f"unchecked{_because(why)}",
                      hint="call debugger.start() first in the step, stop() after the backward and optimizer")


@rule("PL503", "debugger-in-loop", "warning", "(script) PrecisionDebugger constructed inside a loop")
def debugger_in_loop(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    PrecisionDebugger reads and checks its config, and sets up its hooks,
    when it is constructed; it is meant to be created once before training.
    Constructed inside the training loop, it redoes that work every step
    (msprobe keeps a single instance, so later constructions are ignored or
    reset its state).

    Bad:
        for x in loader:
            debugger = PrecisionDebugger(config_path="./config.json")
            debugger.start()
    Good:
        debugger = PrecisionDebugger(config_path="./config.json")
        for x in loader:
            debugger.start()
    """
    script = _script(context)
    if script is None:
        return
    for debugger in script.debuggers:
        if debugger.loop is not None:
            yield _at(script, "PL503", debugger.line, debugger.column,
                      f"PrecisionDebugger is constructed inside the loop at line {debugger.loop[0]}: "
                      "it is set up again on every pass",
                      hint="construct it once, before the training loop")


@rule("PL504", "start-without-model", "error", "(script) Level L0/mix but start() called without a model")
def start_without_model(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    Level L0 (and mix, which includes it) hooks the Cells/Modules of the
    model passed to start(model); with start() alone there is no model to
    hook, so nothing is collected at Cell level. The level is the config's,
    or the constructor's level= when given. Silent when the debugger is
    passed on, stored elsewhere or started from a helper function, and when
    another start() of it passes a model (the script picks one by level).

    Bad:
        "level": "L0"  and  debugger.start()
    Good:
        "level": "L0"  and  debugger.start(net)
    """
    script = _script(context)
    if script is None:
        return
    for debugger in script.debuggers:
        if debugger.escapes:
            continue
        level, source = _level(config, debugger)
        if level not in ("L0", "mix"):
            continue
        starts = debugger.called("start")
        if any(call.has_model for call in starts):  # a model-less start() beside one with a model: a branch
            continue  # for another level (`start(net) if L0 else start()`), not sure to run at L0
        for call in starts:
            if call.has_model is False:
                yield _at(script, "PL504", call.line, call.column,
                          f"level {level} (from {source}) hooks the Cells of the model passed to start(), "
                          "but start() gets no model",
                          hint="pass the network: debugger.start(model)")


@rule("PL505", "step-never-called", "warning", "(script) Step filter set but step() never called")
def step_never_called(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    msprobe counts steps only through debugger.step(): without it every
    step is step 0, so a "step" filter such as [2, 3] never matches (or
    everything lands in step0). In dynamic graph (PyNative, MSAdapter,
    PyTorch) call step() at the end of each training step. Static graph
    counts steps itself, so the rule is silent there. Silent when the
    debugger is passed on (e.g. to a step callback), stored elsewhere or
    driven from helper functions.

    Bad:
        "step": [2, 3]  with start()/stop() in the loop but no step()
    Good:
        debugger.stop()
        debugger.step()
    """
    script = _script(context)
    if script is None:
        return
    scenario, why = _scenario(config, context)
    if scenario != "dynamic":
        return
    from ..script import UNKNOWN

    for debugger in script.debuggers:
        if debugger.escapes or not debugger.called("start") or debugger.called("step"):
            continue
        steps = debugger.step if debugger.step_given else config.get("step")
        if steps is UNKNOWN or not isinstance(steps, list) or not steps:
            continue
        source = f"PrecisionDebugger(step=...) at line {debugger.line}" if debugger.step_given else config.path
        yield _at(script, "PL505", debugger.line, debugger.column,
                  f"the step filter {steps} (from {source}) is set but debugger.step() is never called: "
                  f"every step counts as step 0{_because(why)}",
                  hint="call debugger.step() at the end of each training step")


@rule("PL506", "jit-not-seen", "info", "(script) mindspore.jit code runs as static graph, not seen at L0/L1")
def jit_not_seen(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    In PyNative mode, a function or Cell compiled with mindspore.jit runs
    as one static graph: the APIs and Cells inside it are not seen by L1
    (API) or L0 (Cell) collection, so an overflow inside it is reported at
    best as the whole jit call. Remove jit while debugging to see inside.

    Bad:
        @ms.jit
        def train_step(x, y): ...
    Good:
        def train_step(x, y): ...    # jit removed while debugging
    """
    script = _script(context)
    if script is None or config.level not in ("L0", "L1", "mix") or context.mode == "graph":
        return
    if context.framework == "pytorch":
        return
    said = _because(context.describe("mode"))
    for use in script.jit_uses:
        level = f" (jit_level {use.jit_level})" if use.jit_level else ""
        extra = ("; at L0 the Cells it calls are unhooked while it runs, so none of them is recorded there"
                 if config.level in ("L0", "mix") else "")
        yield _at(script, "PL506", use.line, use.column,
                  f"{use.target} is compiled by mindspore.jit{level}: it runs as static graph and level "
                  f"{config.level} does not see its APIs and Cells{said} (probe_runtime, in one process on the "
                  f"CPU backend, names the kernel inside a region that returns inf/nan, unless the region writes "
                  f"Parameters){extra}",
                  hint="remove jit while debugging to check the APIs inside it")
