"""``mode`` and ``jit_level`` from the script: the ``set_context`` calls
executed at module level, followed in order into the module functions
called there (``if __name__ == "__main__": main()``), with every branch
and loop joined: a value stays known only when every path agrees.
Otherwise jit_level comes from ``JitConfig(jit_level=...)``, else from
``jit(..., jit_level=...)``, when every such call agrees (see
docs/lint-design.md).

Example::

    >>> import ast
    >>> from msprobe_lint.lint.script.model import ScriptAnalysis
    >>> source = "import mindspore as ms; ms.set_context(mode=ms.GRAPH_MODE)"
    >>> result = ScriptAnalysis("train.py")
    >>> resolve_context(Index(ast.parse(source), "train.py"), result)
    True
    >>> result.facts["mode"].value
    'graph'
"""
from __future__ import annotations

import ast
from typing import Any, Optional

from ..context import Fact, normalise
from .model import UNKNOWN, ScriptAnalysis
from .names import Index, walk_no_scopes
from .namespaces import JIT, JIT_CONFIG, MODE_VALUES, SET_CONTEXT

BUDGET = 20_000  # statements followed while resolving set_context


def resolve_context(index: Index, result: ScriptAnalysis) -> bool:
    """Put the ``mode`` and ``jit_level`` facts the script sets into
    ``result`` (or a note saying why not); True when it calls
    ``set_context`` at all (the framework inference uses that)."""
    flow = _Flow(index, result)
    flow.run()
    return flow.set_context_seen


def resolve_name(node: ast.AST, state: Optional["_State"], depth: int = 0) -> ast.AST:
    """``node``, or the module constant a name in it stands for (``MODE =
    ms.GRAPH_MODE`` ... ``mode=MODE``), followed up to 10 times."""
    if state is None:
        return node
    while isinstance(node, ast.Name) and node.id in state.consts and depth < 10:
        node = state.consts[node.id]
        depth += 1
    return node


def level_literal(node: ast.AST, state: Optional["_State"] = None) -> Any:
    """The jit_level a literal (or a constant naming one) gives, UNKNOWN
    for anything else."""
    node = resolve_name(node, state)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return normalise("jit_level", node.value, "").value
        except ValueError:
            return UNKNOWN
    return UNKNOWN


class _Flow:
    """The module-level execution of one script, as far as set_context
    goes (a budget of statements bounds it)."""

    def __init__(self, index: Index, result: ScriptAnalysis):
        self.index = index
        self.result = result
        self.set_context_seen = False
        self.budget = BUDGET

    def run(self) -> None:
        functions = {s.name: s for s in self.index.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        state = _State()
        try:
            self._exec(self.index.tree.body, state, functions, ())
        except _OutOfBudget:
            self.result.notes.append("set_context not resolved: too many nested function calls to follow")
            return
        for name in ("mode", "jit_level"):
            known = state.values.get(name)
            if known is not None and known[0] is not UNKNOWN:
                self.result.facts[name] = Fact(known[0], self.result.where(known[1]))
            elif known is not None:
                self.result.notes.append(f"{name} set at line {known[1]} but not readable")
        if "jit_level" not in self.result.facts and not (state.values.get("jit_level")):
            fact = self._jit_level_elsewhere()
            if fact is not None:
                self.result.facts["jit_level"] = fact

    def _exec(self, body: list[ast.stmt], state: "_State", functions: dict, stack: tuple[str, ...]) -> None:
        for stmt in body:
            self._exec_stmt(stmt, state, functions, stack)

    def _exec_stmt(self, stmt: ast.stmt, state: "_State", functions: dict, stack: tuple[str, ...]) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise _OutOfBudget
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # defined, not executed (module functions are followed where called)
        if isinstance(stmt, ast.If):
            self._exec_if(stmt, state, functions, stack)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            self._calls_in(stmt.iter if not isinstance(stmt, ast.While) else stmt.test, state, functions, stack)
            before = state.copy()
            self._exec(stmt.body, state, functions, stack)
            state.merge(before)
            other = state.copy()
            self._exec(stmt.orelse, state, functions, stack)
            state.merge(other)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._calls_in(item.context_expr, state, functions, stack)
            self._exec(stmt.body, state, functions, stack)
            return
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self._exec(stmt.body, state, functions, stack)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                other = state.copy()
                self._exec(handler.body, other, functions, stack)
                state.merge(other)
            other = state.copy()
            self._exec(stmt.orelse, other, functions, stack)  # type: ignore[attr-defined]
            state.merge(other)
            self._exec(stmt.finalbody, state, functions, stack)  # type: ignore[attr-defined]
            return
        if type(stmt).__name__ == "Match":
            start = state.copy()
            for case in stmt.cases:  # type: ignore[attr-defined]
                branch = start.copy()
                self._exec(case.body, branch, functions, stack)
                state.merge(branch)
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            self._calls_in(stmt.value, state, functions, stack)
            state.consts[stmt.targets[0].id] = stmt.value
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        state.consts.pop(node.id, None)
            if stmt.value is not None:
                self._calls_in(stmt.value, state, functions, stack)
            return
        self._calls_in(stmt, state, functions, stack)

    def _exec_if(self, stmt: ast.If, state: "_State", functions: dict, stack: tuple[str, ...]) -> None:
        """An ``if``/``elif``/``else`` chain: each branch from the state its
        test leaves, all joined into ``state``. An ``elif`` is an ``if``
        nested in the ``else``, so a long chain nests as deep as it is long
        (500 elifs: deeper than Python's recursion limit if each were a
        call): the chain is walked in a loop, and joined innermost first,
        as the nested calls would."""
        branches: list[_State] = []  # the state of each branch taken after a test, outermost first
        current, here = stmt, state
        while True:
            if _is_main_guard(current.test):  # the script's entry point: always taken, no else
                self._exec(current.body, here, functions, stack)
                break
            self._calls_in(current.test, here, functions, stack)
            other = here.copy()
            self._exec(current.body, here, functions, stack)
            branches.append(here)
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif
                self.budget -= 1
                if self.budget < 0:
                    raise _OutOfBudget
                current, here = orelse[0], other
                continue
            self._exec(orelse, other, functions, stack)
            here = other
            break
        for branch in reversed(branches):  # branch.merge(what follows it), innermost first
            branch.merge(here)
            here = branch

    def _calls_in(self, node: ast.AST, state: "_State", functions: dict, stack: tuple[str, ...]) -> None:
        """Apply the set_context calls in ``node`` and follow calls of
        module functions, in evaluation order (approximately: source order)."""
        calls = [n for n in walk_no_scopes(node) if isinstance(n, ast.Call)]
        calls.sort(key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            qual = self.index.qualname(call.func)
            if qual in SET_CONTEXT:
                self.set_context_seen = True
                self._apply_set_context(call, state)
            elif isinstance(call.func, ast.Name) and call.func.id in functions and call.func.id not in stack \
                    and call.func.id not in self.index.names:
                if len(stack) >= 50:
                    raise _OutOfBudget
                fn = functions[call.func.id]
                self._exec(fn.body, state, functions, stack + (call.func.id,))

    def _apply_set_context(self, call: ast.Call, state: "_State") -> None:
        line = call.lineno
        if any(k.arg is None for k in call.keywords):  # **kwargs: anything may be set
            state.values["mode"] = (UNKNOWN, line)
            state.values["jit_level"] = (UNKNOWN, line)
        mode_node: Optional[ast.AST] = None
        if call.args:
            mode_node = call.args[0]
        for keyword in call.keywords:
            if keyword.arg == "mode":
                mode_node = keyword.value
            elif keyword.arg == "jit_config":
                state.values["jit_level"] = (self._jit_config_level(keyword.value, state), keyword.value.lineno)
            elif keyword.arg == "jit_level":
                state.values["jit_level"] = (level_literal(keyword.value, state), keyword.value.lineno)
        if mode_node is not None:
            state.values["mode"] = (self._mode_value(mode_node, state), line)

    def _mode_value(self, node: ast.AST, state: "_State") -> Any:
        node = resolve_name(node, state)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return {0: "graph", 1: "pynative"}.get(node.value, UNKNOWN)
        qual = self.index.qualname(node)
        return MODE_VALUES.get(qual or "", UNKNOWN)

    def _jit_config_level(self, node: ast.AST, state: "_State") -> Any:
        node = resolve_name(node, state)
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:  # {**other}
                    return UNKNOWN
                if isinstance(key, ast.Constant) and key.value == "jit_level":
                    return level_literal(value, state)
            return UNKNOWN  # jit_level left to MindSpore's default, which is never assumed
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and not node.args:
            for keyword in node.keywords:
                if keyword.arg == "jit_level":
                    return level_literal(keyword.value, state)
        return UNKNOWN

    def _jit_level_elsewhere(self) -> Optional[Fact]:
        """From JitConfig(jit_level=...), else jit(..., jit_level=...), when
        every such call in the script agrees."""
        state = _State()
        for group in (JIT_CONFIG, JIT):
            found: list[tuple[Any, int]] = []
            for node in ast.walk(self.index.tree):
                if isinstance(node, ast.Call) and self.index.qualname(node.func) in group:
                    for keyword in node.keywords:
                        if keyword.arg == "jit_level":
                            found.append((level_literal(keyword.value, state), keyword.value.lineno))
            if found:
                values = {v for v, _ in found}
                if len(values) == 1 and UNKNOWN not in values:
                    value, line = found[-1]
                    return Fact(value, self.result.where(line))
                return None
        return None


class _OutOfBudget(Exception):
    """Following module function calls took too long (a pathological
    script): the mode and jit_level are left unknown."""


class _State:
    """What the module-level execution has set so far: name -> (value,
    line), UNKNOWN when paths disagree; plus module constants."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[Any, int]] = {}
        self.consts: dict[str, ast.AST] = {}

    def copy(self) -> "_State":
        other = _State()
        other.values = dict(self.values)
        other.consts = dict(self.consts)
        return other

    def merge(self, other: "_State") -> None:
        """Join two paths: a value both agree on stays; others are unknown."""
        for name in set(self.values) | set(other.values):
            mine, theirs = self.values.get(name), other.values.get(name)
            if mine is not None and theirs is not None and mine[0] == theirs[0]:
                self.values[name] = max(mine, theirs, key=lambda v: v[1])
            else:
                line = max(v[1] for v in (mine, theirs) if v is not None)
                self.values[name] = (UNKNOWN, line)
        for name in set(self.consts) | set(other.consts):
            if self.consts.get(name) is not other.consts.get(name):
                self.consts.pop(name, None)


def _is_main_guard(test: ast.AST) -> bool:
    """``if __name__ == "__main__":``"""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")
