"""The PrecisionDebugger objects of a script: each construction, the
start()/stop()/step() calls on it (also through the class, a singleton in
msprobe), and whether every use of it can be seen (``escapes`` says why
not: passed on, stored, rebound, used in a helper function).
"""
from __future__ import annotations

import ast
from typing import Optional

from .model import UNKNOWN, Debugger, DebuggerCall
from .names import Index, ScopeNode, inside, loop_pos, pos
from .namespaces import DEBUGGER_METHODS


def collect_debuggers(index: Index) -> list[Debugger]:
    """Every PrecisionDebugger construction, in source order, with the
    start/stop/step calls on it and whether every use of it can be seen."""
    class_calls: list[tuple[DebuggerCall, ast.AST]] = []
    constructions: list[tuple[Debugger, ast.Call]] = []
    for node in ast.walk(index.tree):
        if not isinstance(node, ast.Call):
            continue
        origin = _is_debugger_class(index, node.func)
        if origin is not None:
            constructions.append((_construction(index, node, origin), node))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in DEBUGGER_METHODS \
                and _is_debugger_class(index, node.func.value):
            class_calls.append((_call(index, node), index.scope_of[node]))
    for debugger, node in constructions:
        scope = index.scope_of[node]
        if debugger.name is not None and debugger.escapes is None:
            _follow_name(index, debugger, node, scope)
        for call, call_scope in class_calls:
            if call_scope is not scope:
                debugger.escapes = debugger.escapes or (
                    f"PrecisionDebugger.{call.method}() is called in another function (line {call.line})")
            debugger.calls.append(call)
        debugger.calls.sort(key=lambda c: c.order)
    return [d for d, _ in sorted(constructions, key=lambda x: (x[1].lineno, x[1].col_offset))]


def _is_debugger_class(index: Index, node: ast.AST) -> Optional[str]:
    qual = index.qualname(node)
    if qual and qual.endswith(".PrecisionDebugger") and qual.startswith(("msprobe", "probe_runtime")):
        return qual.rsplit(".", 1)[0]
    return None


def _construction(index: Index, node: ast.Call, origin: str) -> Debugger:
    line, col = pos(node)
    loops = index.loops_of.get(node, ())
    loop = loop_pos(loops[-1]) if loops else None
    debugger = Debugger(line, col, None, loop, origin)
    parent = index.parents.get(node)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        debugger.name = parent.targets[0].id
    elif isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
        debugger.name = parent.target.id
    elif isinstance(parent, ast.Expr):
        pass  # used through the class (a singleton in msprobe)
    else:
        debugger.escapes = f"the debugger is not bound to a plain variable (line {line})"
    given = [k.value for k in node.keywords if k.arg == "config_path"] + node.args[:1]
    if given and isinstance(given[0], ast.Constant) and isinstance(given[0].value, str):
        debugger.config_path = given[0].value
    elif given and not _is_none(given[0]):
        try:
            source = ast.unparse(given[0])
        except RecursionError:  # ast.unparse recurses: an expression nested deeper than it goes
            source = "(an expression nested too deep to show)"
        if "PROBE_CONFIG" not in source:  # os.environ["PROBE_CONFIG"] reads what probe run gives
            debugger.config_path_expression = source
    for keyword in node.keywords:
        if keyword.arg == "dump_path":
            debugger.dump_path_given = not _is_none(keyword.value)
        if keyword.arg is None:
            debugger.level_given = debugger.step_given = True
            debugger.level = debugger.step = UNKNOWN
        elif keyword.arg == "level":
            debugger.level_given = True
            debugger.level = keyword.value.value if isinstance(keyword.value, ast.Constant) else UNKNOWN
        elif keyword.arg == "step":
            debugger.step_given = True
            try:
                debugger.step = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                debugger.step = UNKNOWN
    starred = [i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)]
    if len(node.args) > 2 and not (starred and starred[0] <= 2) and not _is_none(node.args[2]):
        debugger.dump_path_given = True  # PrecisionDebugger(config_path, task, dump_path, ...)
    if len(node.args) > 1 or any(isinstance(a, ast.Starred) for a in node.args):
        # PrecisionDebugger(config_path, task, dump_path, level, ...) positionally
        debugger.level_given = debugger.step_given = True
        debugger.level = debugger.step = UNKNOWN
    return debugger


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _call(index: Index, node: ast.Call) -> DebuggerCall:
    method = node.func.attr  # type: ignore[attr-defined]
    has_model: Optional[bool] = None
    if method == "start":
        given = [a for a in node.args] + [k.value for k in node.keywords if k.arg == "model"]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            has_model = None
        elif not given:
            has_model = False
        else:
            has_model = not (isinstance(given[0], ast.Constant) and given[0].value is None)
    line, col = pos(node)
    loops = tuple(loop_pos(loop) for loop in index.loops_of.get(node, ()))
    return DebuggerCall(method, line, col, has_model, loops, (line, col))


def _follow_name(index: Index, debugger: Debugger, construction: ast.Call, scope: ScopeNode) -> None:
    """Record the method calls on the debugger's variable and decide
    whether every use of it can be seen."""
    name = debugger.name
    own_target = index.parents[construction]
    users: dict[ast.AST, int] = {}  # module-level functions using a module-level debugger: first line
    here: Optional[int] = None  # the line of a method call in the construction's own scope
    for node in ast.walk(index.tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            debugger.escapes = f"{name} is declared {type(node).__name__.lower()} (line {node.lineno})"
            return
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        node_scope = index.scope_of[node]
        if node_scope is not scope:
            if isinstance(scope, ast.Module) and isinstance(node_scope, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and index.scope_of[node_scope] is scope:
                if _is_parameter(node_scope, name):
                    continue  # the function's own variable of that name
                # A module-level debugger used in a module-level function (the
                # training loop in main()): followed there, as long as that
                # is the only place its methods are called (checked below).
                users.setdefault(node_scope, node.lineno)
            elif inside(scope, node, index.parents):
                # A nested scope uses it: its calls cannot be placed in the
                # training loop.
                debugger.escapes = f"{name} is used in a nested function (line {node.lineno})"
                return
            else:
                continue
        elif here is None and isinstance(index.parents.get(node), ast.Attribute):
            here = node.lineno
        parent = index.parents.get(node)
        if isinstance(node.ctx, ast.Store):
            if parent is own_target:
                continue
            debugger.escapes = f"{name} is assigned again (line {node.lineno})"
            return
        if isinstance(node.ctx, ast.Del):
            debugger.escapes = f"{name} is deleted (line {node.lineno})"
            return
        if isinstance(parent, ast.Attribute):
            grand = index.parents.get(parent)
            if isinstance(grand, ast.Call) and grand.func is parent:
                if parent.attr in DEBUGGER_METHODS:
                    debugger.calls.append(_call(index, grand))
                continue  # another method (set_init_step, ...): harmless
            if isinstance(parent.ctx, ast.Load) and parent.attr not in DEBUGGER_METHODS:
                continue  # reading an attribute
            debugger.escapes = f"{name}.{parent.attr} is used other than by calling it (line {node.lineno})"
            return
        debugger.escapes = f"{name} is passed on or stored (line {node.lineno})"
        return
    if len(users) > 1:
        lines = sorted(users.values())
        debugger.escapes = f"{name} is used in several functions (lines {lines[0]} and {lines[1]})"
    elif users and here is not None:
        line = next(iter(users.values()))
        debugger.escapes = (f"{name} is used both at module level (line {here}) and in a function (line {line}): "
                            "the order of their calls is not known")


def _is_parameter(function: ast.AST, name: str) -> bool:
    """True when ``name`` is a parameter of ``function`` (a FunctionDef)."""
    args = function.args  # type: ignore[attr-defined]
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return any(arg is not None and arg.arg == name for arg in every)
