"""Static analysis of the training script given with ``--script``.

The script is parsed with :mod:`ast`; it is never run or imported. The
analysis gives two things:

* context facts (:class:`~msprobe_lint.lint.context.Fact`, each with a source
  such as ``"train.py:4"``): the execution ``mode`` and ``jit_level`` from
  ``set_context``, and the ``framework`` from the imports;
* what the PL5xx rules (``rules/script.py``) judge: the PrecisionDebugger
  objects and the start()/stop()/step() calls on them, function names
  imported from intercepted namespaces, ``mindspore.jit`` code, and
  ``Model.train`` calls.

It reports only what it is sure of. A value it cannot read (``mode=args.mode``)
makes that fact unknown rather than guessed, and a debugger object that is
passed to a function, stored elsewhere, rebound, or used from a helper
function is marked ``escapes``: the rules that need to see every call on it
(PL502, PL504, PL505) then stay silent.

Decisions (documented in docs/context.md):

* ``set_context``: the calls executed at module level are followed in order,
  including the bodies of module functions called at module level (so
  ``if __name__ == "__main__": main()`` is followed into ``main``). The last
  executed call that sets ``mode`` (or ``jit_config``) wins; ``mode`` and
  ``jit_config`` are independent, as in MindSpore. A call on only one branch
  of an ``if``, or in a loop body, makes the value unknown unless every path
  agrees. ``**kwargs`` makes both unknown.
* jit_level: ``set_context(jit_config={"jit_level": ...})`` first; else
  ``JitConfig(jit_level=...)`` when every JitConfig in the script agrees;
  else ``jit(..., jit_level=...)`` when every one agrees (it only describes
  that function's compile, hence last).
* framework: msadapter/mindtorch imported -> msadapter (MSAdapter scripts
  import mindspore and a torch-like API too); else the PrecisionDebugger's
  own import (``msprobe.pytorch`` -> pytorch, ``msprobe.mindspore`` or
  ``probe_runtime`` -> mindspore); else mindspore or torch when only one is
  imported; with both and no other clue, mindspore if ``set_context`` is
  called, otherwise unknown.
* function or not (PL501), without importing anything: a name is a function
  unless it is private (``_x``), starts with a capital letter (a class or a
  constant: ``Primitive``, ``Tensor``, ``GRAPH_MODE``), or is in a curated
  list of the namespace's submodules and non-operator objects (``nn``,
  ``functional``, ``operations``, dtypes such as ``float16``, transforms such
  as ``value_and_grad``, ``no_grad``, ``save``...).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union

from ..context import Fact, normalise

# Namespaces whose functions msprobe / probe_runtime intercept at L1 by
# replacing the module attribute: a name bound by `from M import f` keeps the
# original function.
MINDSPORE_NAMESPACES = ("mindspore.ops", "mindspore.mint", "mindspore.mint.nn.functional")
TORCH_NAMESPACES = ("torch", "torch.nn.functional")
INTERCEPTED = MINDSPORE_NAMESPACES + TORCH_NAMESPACES

_TORCH_DTYPES = {
    "float", "double", "half", "bfloat16", "float16", "float32", "float64", "int", "long", "short", "int8",
    "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex32", "complex64",
    "complex128", "cfloat", "cdouble", "chalf", "qint8", "quint8", "qint32", "quint4x2", "float8_e4m3fn",
    "float8_e5m2", "bits8", "bits16", "strided", "sparse_coo", "sparse_csr", "channels_last",
    "contiguous_format", "preserve_format", "channels_last_3d", "inf", "nan", "pi", "e", "newaxis",
}
# Names in each namespace that are not intercepted operator functions:
# submodules, dtypes and other objects, transforms, decorators, utilities.
NOT_FUNCTIONS: dict[str, frozenset[str]] = {
    "mindspore.ops": frozenset({
        "operations", "functional", "composite", "primitive", "function", "auto_generate", "op_info_register",
        "vm_impl_registry", "extend", "deprecated", "silent_check", "operations_", "functional_overload",
        "constexpr", "ms_kernel", "kernel", "custom_info_register", "prim_attr_register", "prim_arg_register",
        "grad", "value_and_grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "hessian", "derivative",
        "stop_gradient", "get_vm_impl_fn", "signature", "multitype_ops", "arg_dtype_cast", "arg_handler",
        "typing",
    }),
    "mindspore.mint": frozenset({
        "nn", "optim", "linalg", "special", "distributed", "fft", "functional", "distributions", "utils",
        "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool_",
    }),
    "mindspore.mint.nn.functional": frozenset(),
    "torch": frozenset({
        "nn", "optim", "utils", "cuda", "distributed", "autograd", "jit", "onnx", "fx", "backends",
        "multiprocessing", "amp", "linalg", "fft", "special", "sparse", "testing", "hub", "profiler",
        "quantization", "ao", "nested", "masked", "func", "library", "overrides", "random", "serialization",
        "types", "export", "compiler", "mps", "xpu", "npu", "futures", "package", "storage", "version",
        "functional", "distributions", "hub", "monitor", "quasirandom", "return_types", "signal", "accelerator",
        "device", "dtype", "layout", "memory_format", "finfo", "iinfo", "no_grad", "enable_grad",
        "set_grad_enabled", "inference_mode", "autocast", "save", "load", "manual_seed", "seed", "initial_seed",
        "set_printoptions", "is_tensor", "is_storage", "is_floating_point", "set_default_dtype",
        "get_default_dtype", "set_default_tensor_type", "set_default_device", "compile", "set_num_threads",
        "get_num_threads", "set_num_interop_threads", "use_deterministic_algorithms", "is_grad_enabled",
        "get_rng_state", "set_rng_state", "set_float32_matmul_precision", "vmap", "cond", "typename",
        "is_inference_mode_enabled", "set_anomaly_enabled", "is_anomaly_enabled", "no_grad",
    } | _TORCH_DTYPES),
    "torch.nn.functional": frozenset({"grad", "Tensor", "Optional", "List", "Tuple", "Callable", "Union",
                                      "Number", "DType", "utils", "math", "warnings", "importlib"}),
}

DEBUGGER_METHODS = ("start", "stop", "step")
_MODE_VALUES = {"mindspore.GRAPH_MODE": "graph", "mindspore.PYNATIVE_MODE": "pynative"}
_SET_CONTEXT = {"mindspore.set_context"}
_JIT = {"mindspore.jit", "mindspore.ms_function"}
_JIT_CONFIG = {"mindspore.JitConfig"}
# Canonical names: prefixes that name the same object as a shorter path.
_ALIASES = (("mindspore.context.", "mindspore."), ("mindspore.common.api.", "mindspore."),
            ("mindspore.common.jit_config.", "mindspore."), ("mindspore.common.", "mindspore."),
            ("mindspore.train.model.", "mindspore.train."), ("mindspore.nn.functional", "mindspore.ops"))
# What `from mindspore import *` binds that the analysis reads.
_MINDSPORE_STAR = {"set_context", "context", "GRAPH_MODE", "PYNATIVE_MODE", "jit", "JitConfig", "ms_function",
                   "ops", "mint", "nn", "Model"}


class ScriptError(ValueError):
    """The script cannot be analysed: unreadable, not UTF-8, or not valid
    Python. The message names the file (and the line when known)."""


class _Unknown:
    """A value the analysis saw being set but could not read."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class DebuggerCall:
    """``debugger.start(model)`` and friends.

    Attributes:
        method: ``start``, ``stop`` or ``step``.
        line, column: 1-based position of the call.
        has_model: for start(): True when a model is passed, False when
            none is (or ``None`` literally), None when it cannot be told
            (``*args``).
        loops: the loops (their ``(line, column)``) enclosing the call in its
            function, outermost first.
        order: position in source order, for comparing calls.
    """

    method: str
    line: int
    column: int
    has_model: Optional[bool]
    loops: tuple[tuple[int, int], ...]
    order: tuple[int, int]


@dataclass
class Debugger:
    """One PrecisionDebugger construction.

    Attributes:
        line, column: 1-based position of the constructor call.
        name: the variable it is bound to, or None.
        loop: ``(line, column)`` of the innermost loop around the
            construction, or None.
        calls: start/stop/step calls on it (including calls on the class,
            as msprobe's PrecisionDebugger is a singleton).
        escapes: why not every use of it can be seen (passed to a function,
            stored in an attribute, used in a helper function...), or None.
        level, step: literal ``level=``/``step=`` keyword values given to
            the constructor (they override the config), else UNSET; UNKNOWN
            when given but not a literal.
        origin: the module it was imported from (``probe_runtime``,
            ``msprobe.mindspore``...).
    """

    line: int
    column: int
    name: Optional[str]
    loop: Optional[tuple[int, int]]
    origin: str
    calls: list[DebuggerCall] = field(default_factory=list)
    escapes: Optional[str] = None
    level: Any = None
    step: Any = None
    level_given: bool = False
    step_given: bool = False

    def called(self, method: str) -> list[DebuggerCall]:
        """The calls of ``method``, in source order."""
        return sorted((c for c in self.calls if c.method == method), key=lambda c: c.order)


@dataclass(frozen=True)
class DirectImport:
    """A function name bound from an intercepted namespace (PL501).

    ``name`` is ``*`` for a star import; ``bound`` is the local name."""

    module: str
    name: str
    bound: str
    line: int
    column: int
    first_use: Optional[int] = None


@dataclass(frozen=True)
class JitUse:
    """Code compiled by ``mindspore.jit`` (decorator or call)."""

    line: int
    column: int
    target: str
    jit_level: Optional[str] = None


@dataclass
class ScriptAnalysis:
    """What the analysis found in one script.

    Attributes:
        path: the script's path as given.
        facts: context facts (mode, jit_level, framework), each with a
            source ``"<path>:<line>"``.
        debuggers: every PrecisionDebugger construction.
        direct_imports: intercepted function names imported directly.
        jit_uses: ``mindspore.jit`` decorators and calls.
        model_train: line of a ``Model.train`` style call (``x.train(epoch,
            dataset, ...)``), or None.
        notes: things the analysis saw but could not resolve (for tests and
            debugging; not reported).
    """

    path: str
    facts: dict[str, Fact] = field(default_factory=dict)
    debuggers: list[Debugger] = field(default_factory=list)
    direct_imports: list[DirectImport] = field(default_factory=list)
    jit_uses: list[JitUse] = field(default_factory=list)
    model_train: Optional[int] = None
    notes: list[str] = field(default_factory=list)

    def where(self, line: int) -> str:
        """``"train.py:4"`` for this script."""
        return f"{self.path}:{line}"


# --------------------------------------------------------------------------
# Reading and parsing


def read_source(path: str) -> str:
    """The script's text.

    Raises:
        ScriptError: missing, unreadable, a folder, or not UTF-8.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise ScriptError(f"--script {path}: no such file") from None
    except IsADirectoryError:
        raise ScriptError(f"--script {path}: is a directory, not a Python file") from None
    except OSError as err:
        raise ScriptError(f"--script {path}: cannot be read ({err.strerror or err})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise ScriptError(f"{path}:{line}: not UTF-8 (byte 0x{raw[err.start]:02x}); "
                          "save the script as UTF-8") from None


def parse(source: str, path: str) -> ast.Module:
    """Parse ``source``.

    Raises:
        ScriptError: ``"train.py:3:5: syntax error: ..."``.
    """
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as err:
        where = f"{path}:{err.lineno or 1}" + (f":{err.offset}" if err.offset else "")
        raise ScriptError(f"{where}: syntax error in the training script: {err.msg}") from None
    except (ValueError, RecursionError, MemoryError) as err:  # null bytes, absurd nesting
        raise ScriptError(f"{path}: cannot be parsed: {err}") from None


def analyse_script(path: str) -> ScriptAnalysis:
    """Analyse the training script at ``path`` (never run or imported).

    Raises:
        ScriptError: see :func:`read_source` and :func:`parse`.
    """
    return analyse_source(read_source(path), path)


def analyse_source(source: str, path: str = "train.py") -> ScriptAnalysis:
    """Analyse script text; ``path`` is used in sources and findings.

    Raises:
        ScriptError: when ``source`` is not valid Python.
    """
    tree = parse(source, path)
    return _Analyser(tree, path).run()


# --------------------------------------------------------------------------
# The analysis


LoopNode = Union[ast.For, ast.AsyncFor, ast.While, ast.comprehension]
ScopeNode = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _canonical(name: str) -> str:
    for prefix, replacement in _ALIASES:
        if name.startswith(prefix):
            return replacement + name[len(prefix):]
    return name


def _pos(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1


class _Analyser:
    def __init__(self, tree: ast.Module, path: str):
        self.tree = tree
        self.path = path
        self.result = ScriptAnalysis(path)
        self.names: dict[str, str] = {}       # local name -> qualified name
        self.star: list[str] = []             # modules star-imported
        self.parents: dict[ast.AST, ast.AST] = {}
        self.scope_of: dict[ast.AST, ScopeNode] = {}
        self.loops_of: dict[ast.AST, tuple[LoopNode, ...]] = {}
        self.imports: list[tuple[str, int]] = []  # (module, line) of every absolute import
        self.set_context_seen = False
        self.budget = 20_000  # statements followed while resolving set_context

    # -- plumbing -----------------------------------------------------------

    def run(self) -> ScriptAnalysis:
        self._index(self.tree, self.tree, ())
        self._collect_imports()
        self._resolve_context()
        self._collect_debuggers()
        self._collect_jit()
        self._collect_model_train()
        self._framework()
        return self.result

    def _index(self, node: ast.AST, scope: ScopeNode, loops: tuple[LoopNode, ...]) -> None:
        """Parent, scope and enclosing-loop (within the scope) of every node."""
        self.scope_of[node] = scope
        self.loops_of[node] = loops
        inner_scope: ScopeNode = node if isinstance(node, _SCOPES) else scope  # type: ignore[assignment]
        inner_loops = () if isinstance(node, _SCOPES) else loops
        for name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                self.parents[child] = node
                child_scope, child_loops = inner_scope, inner_loops
                if isinstance(node, _SCOPES) and name in ("decorator_list", "args", "returns", "bases",
                                                          "keywords"):
                    child_scope, child_loops = scope, loops  # evaluated in the enclosing scope
                if isinstance(node, (ast.For, ast.AsyncFor)) and name == "body":
                    child_loops = loops + (node,)
                elif isinstance(node, ast.While) and name in ("test", "body"):
                    child_loops = loops + (node,)
                elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) \
                        and name in ("elt", "key", "value"):
                    child_loops = loops + tuple(node.generators)
                elif isinstance(node, ast.comprehension) and name == "ifs":
                    child_loops = loops + (node,)
                self._index(child, child_scope, child_loops)

    def qualname(self, node: ast.AST) -> Optional[str]:
        """``mindspore.set_context`` for ``ms.set_context`` with
        ``import mindspore as ms``; None when not from an import."""
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return _canonical(self.names[node.id])
            if "mindspore" in self.star and node.id in _MINDSPORE_STAR:
                return _canonical("mindspore." + node.id)
            for module in self.star:
                if module.startswith(("msprobe", "probe_runtime")) and node.id == "PrecisionDebugger":
                    return module + ".PrecisionDebugger"
            return None
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return _canonical(f"{base}.{node.attr}") if base else None
        return None

    def _collect_imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports.append((alias.name, node.lineno))
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                self.imports.append((node.module, node.lineno))
                for alias in node.names:
                    if alias.name == "*":
                        self.star.append(node.module)
                    else:
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if node.module in INTERCEPTED:
                    self._direct_imports(node)
        self._assigned_functions()

    def _direct_imports(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            if alias.name != "*" and not is_function_name(module, alias.name):
                continue
            bound = alias.asname or alias.name
            # Python 3.10+ gives each imported name its own position.
            where = alias if hasattr(alias, "lineno") else node
            line, col = where.lineno, where.col_offset + 1
            self.result.direct_imports.append(DirectImport(module, alias.name, bound, line, col,
                                                           self._first_use(bound, node)))

    def _assigned_functions(self) -> None:
        """``relu = ops.relu`` at module level binds the original function
        just like ``from mindspore.ops import relu`` (PL501)."""
        for stmt in self.tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Attribute)):
                continue
            qual = self.qualname(stmt.value)
            if not qual:
                continue
            module, _, name = qual.rpartition(".")
            if module in INTERCEPTED and is_function_name(module, name):
                bound = stmt.targets[0].id
                line, col = _pos(stmt)
                self.result.direct_imports.append(DirectImport(module, name, bound, line, col,
                                                               self._first_use(bound, stmt)))

    def _first_use(self, name: str, after: ast.AST) -> Optional[int]:
        lines = [n.lineno for n in ast.walk(self.tree) if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load) and n.lineno >= getattr(after, "lineno", 0)
                 and isinstance(self.parents.get(n), ast.Call) and self.parents[n].func is n]  # type: ignore
        return min(lines) if lines else None

    # -- mode and jit_level ---------------------------------------------------

    def _resolve_context(self) -> None:
        functions = {s.name: s for s in self.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        state = _State()
        try:
            self._exec(self.tree.body, state, functions, ())
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
            if _is_main_guard(stmt.test):
                self._exec(stmt.body, state, functions, stack)
                return
            self._calls_in(stmt.test, state, functions, stack)
            other = state.copy()
            self._exec(stmt.body, state, functions, stack)
            self._exec(stmt.orelse, other, functions, stack)
            state.merge(other)
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

    def _calls_in(self, node: ast.AST, state: "_State", functions: dict, stack: tuple[str, ...]) -> None:
        """Apply the set_context calls in ``node`` and follow calls of
        module functions, in evaluation order (approximately: source order)."""
        calls = [n for n in _walk_no_scopes(node) if isinstance(n, ast.Call)]
        calls.sort(key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            qual = self.qualname(call.func)
            if qual in _SET_CONTEXT:
                self.set_context_seen = True
                self._apply_set_context(call, state)
            elif isinstance(call.func, ast.Name) and call.func.id in functions and call.func.id not in stack \
                    and call.func.id not in self.names:
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
                state.values["jit_level"] = (self._level_literal(keyword.value, state), keyword.value.lineno)
        if mode_node is not None:
            state.values["mode"] = (self._mode_value(mode_node, state), line)

    def _resolve_name(self, node: ast.AST, state: "_State", depth: int = 0) -> ast.AST:
        while isinstance(node, ast.Name) and node.id in state.consts and depth < 10:
            node = state.consts[node.id]
            depth += 1
        return node

    def _mode_value(self, node: ast.AST, state: "_State") -> Any:
        node = self._resolve_name(node, state)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return {0: "graph", 1: "pynative"}.get(node.value, UNKNOWN)
        qual = self.qualname(node)
        return _MODE_VALUES.get(qual or "", UNKNOWN)

    def _level_literal(self, node: ast.AST, state: "_State") -> Any:
        node = self._resolve_name(node, state)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return normalise("jit_level", node.value, "").value
            except ValueError:
                return UNKNOWN
        return UNKNOWN

    def _jit_config_level(self, node: ast.AST, state: "_State") -> Any:
        node = self._resolve_name(node, state)
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:  # {**other}
                    return UNKNOWN
                if isinstance(key, ast.Constant) and key.value == "jit_level":
                    return self._level_literal(value, state)
            return UNKNOWN  # jit_level left to MindSpore's default, which is never assumed
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and not node.args:
            for keyword in node.keywords:
                if keyword.arg == "jit_level":
                    return self._level_literal(keyword.value, state)
        return UNKNOWN

    def _jit_level_elsewhere(self) -> Optional[Fact]:
        """From JitConfig(jit_level=...), else jit(..., jit_level=...), when
        every such call in the script agrees."""
        state = _State()
        for group in (_JIT_CONFIG, _JIT):
            found: list[tuple[Any, int]] = []
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Call) and self.qualname(node.func) in group:
                    for keyword in node.keywords:
                        if keyword.arg == "jit_level":
                            found.append((self._level_literal(keyword.value, state), keyword.value.lineno))
            if found:
                values = {v for v, _ in found}
                if len(values) == 1 and UNKNOWN not in values:
                    value, line = found[-1]
                    return Fact(value, self.result.where(line))
                return None
        return None

    # -- the debugger -----------------------------------------------------------

    def _is_debugger_class(self, node: ast.AST) -> Optional[str]:
        qual = self.qualname(node)
        if qual and qual.endswith(".PrecisionDebugger") and qual.startswith(("msprobe", "probe_runtime")):
            return qual.rsplit(".", 1)[0]
        return None

    def _collect_debuggers(self) -> None:
        class_calls: list[tuple[DebuggerCall, ast.AST]] = []
        constructions: list[tuple[Debugger, ast.Call]] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            origin = self._is_debugger_class(node.func)
            if origin is not None:
                constructions.append((self._construction(node, origin), node))
            elif isinstance(node.func, ast.Attribute) and node.func.attr in DEBUGGER_METHODS \
                    and self._is_debugger_class(node.func.value):
                class_calls.append((self._call(node), self.scope_of[node]))
        for debugger, node in constructions:
            scope = self.scope_of[node]
            if debugger.name is not None and debugger.escapes is None:
                self._follow_name(debugger, node, scope)
            for call, call_scope in class_calls:
                if call_scope is not scope:
                    debugger.escapes = debugger.escapes or (
                        f"PrecisionDebugger.{call.method}() is called in another function (line {call.line})")
                debugger.calls.append(call)
            debugger.calls.sort(key=lambda c: c.order)
        self.result.debuggers = [d for d, _ in sorted(constructions, key=lambda x: (x[1].lineno, x[1].col_offset))]

    def _construction(self, node: ast.Call, origin: str) -> Debugger:
        line, col = _pos(node)
        loops = self.loops_of.get(node, ())
        loop = _loop_pos(loops[-1]) if loops else None
        debugger = Debugger(line, col, None, loop, origin)
        parent = self.parents.get(node)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            debugger.name = parent.targets[0].id
        elif isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
            debugger.name = parent.target.id
        elif isinstance(parent, ast.Expr):
            pass  # used through the class (a singleton in msprobe)
        else:
            debugger.escapes = f"the debugger is not bound to a plain variable (line {line})"
        for keyword in node.keywords:
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
        if len(node.args) > 1 or any(isinstance(a, ast.Starred) for a in node.args):
            # PrecisionDebugger(config_path, task, dump_path, level, ...) positionally
            debugger.level_given = debugger.step_given = True
            debugger.level = debugger.step = UNKNOWN
        return debugger

    def _call(self, node: ast.Call) -> DebuggerCall:
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
        line, col = _pos(node)
        loops = tuple(_loop_pos(loop) for loop in self.loops_of.get(node, ()))
        return DebuggerCall(method, line, col, has_model, loops, (line, col))

    def _follow_name(self, debugger: Debugger, construction: ast.Call, scope: ScopeNode) -> None:
        """Record the method calls on the debugger's variable and decide
        whether every use of it can be seen."""
        name = debugger.name
        own_target = self.parents[construction]
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                debugger.escapes = f"{name} is declared {type(node).__name__.lower()} (line {node.lineno})"
                return
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            if self.scope_of[node] is not scope:
                # A helper function (or a nested scope) uses it: its calls
                # cannot be placed in the training loop.
                if _inside(scope, node, self.parents):
                    debugger.escapes = f"{name} is used in a nested function (line {node.lineno})"
                    return
                continue
            parent = self.parents.get(node)
            if isinstance(node.ctx, ast.Store):
                if parent is own_target:
                    continue
                debugger.escapes = f"{name} is assigned again (line {node.lineno})"
                return
            if isinstance(node.ctx, ast.Del):
                debugger.escapes = f"{name} is deleted (line {node.lineno})"
                return
            if isinstance(parent, ast.Attribute):
                grand = self.parents.get(parent)
                if isinstance(grand, ast.Call) and grand.func is parent:
                    if parent.attr in DEBUGGER_METHODS:
                        debugger.calls.append(self._call(grand))
                    continue  # another method (set_init_step, ...): harmless
                if isinstance(parent.ctx, ast.Load) and parent.attr not in DEBUGGER_METHODS:
                    continue  # reading an attribute
                debugger.escapes = f"{name}.{parent.attr} is used other than by calling it (line {node.lineno})"
                return
            debugger.escapes = f"{name} is passed on or stored (line {node.lineno})"
            return

    # -- jit, Model.train, framework -----------------------------------------------

    def _collect_jit(self) -> None:
        seen: set[int] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    if self.qualname(target) in _JIT:
                        seen.add(id(decorator))
                        line, col = _pos(decorator)
                        self.result.jit_uses.append(JitUse(line, col, node.name, self._jit_kw(decorator)))
            elif isinstance(node, ast.Call) and id(node) not in seen and node.args \
                    and self.qualname(node.func) in _JIT:
                parent = self.parents.get(node)
                if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue  # a decorator, handled above
                line, col = _pos(node)
                self.result.jit_uses.append(JitUse(line, col, ast.unparse(node.args[0]), self._jit_kw(node)))
        self.result.jit_uses.sort(key=lambda j: (j.line, j.column))

    def _jit_kw(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "jit_level":
                    value = self._level_literal(keyword.value, _State())
                    return None if value is UNKNOWN else value
        return None

    def _collect_model_train(self) -> None:
        """``model.train(epoch, dataset, ...)``: MindSpore's Model.train
        (a PyTorch ``module.train()`` takes at most one argument)."""
        lines = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train":
                words = {k.arg for k in node.keywords}
                if len(node.args) >= 2 or words & {"train_dataset", "epoch", "callbacks", "dataset_sink_mode"}:
                    lines.append(node.lineno)
        self.result.model_train = min(lines) if lines else None

    def _framework(self) -> None:
        first: dict[str, int] = {}
        for module, line in sorted(self.imports, key=lambda m: m[1]):
            top = module.split(".")[0]
            kind = {"mindspore": "mindspore", "msadapter": "msadapter", "mindtorch": "msadapter",
                    "torch": "pytorch"}.get(top)
            if kind:
                first.setdefault(kind, line)
            if module.startswith("msprobe.pytorch"):
                first.setdefault("debugger:pytorch", line)
            elif module.startswith("msprobe.mindspore") or top == "probe_runtime":
                first.setdefault("debugger:mindspore", line)
        choice: Optional[tuple[str, int]] = None
        if "msadapter" in first:
            choice = ("msadapter", first["msadapter"])
        elif "debugger:pytorch" in first:
            choice = ("pytorch", first["debugger:pytorch"])
        elif "debugger:mindspore" in first and "mindspore" in first:
            choice = ("mindspore", first["mindspore"])
        elif "mindspore" in first and "pytorch" not in first:
            choice = ("mindspore", first["mindspore"])
        elif "pytorch" in first and "mindspore" not in first:
            choice = ("pytorch", first["pytorch"])
        elif "mindspore" in first and self.set_context_seen:
            choice = ("mindspore", first["mindspore"])
        if choice:
            self.result.facts["framework"] = Fact(choice[0], self.result.where(choice[1]))


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


def _loop_pos(loop: LoopNode) -> tuple[int, int]:
    """Position of a loop (of a comprehension: of its iterable)."""
    return _pos(loop.iter if isinstance(loop, ast.comprehension) else loop)


def _is_main_guard(test: ast.AST) -> bool:
    """``if __name__ == "__main__":``"""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """ast.walk that does not enter function, lambda or class bodies."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        if current is not node and isinstance(current, _SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(current))


def _inside(scope: ast.AST, node: ast.AST, parents: dict) -> bool:
    current = parents.get(node)
    while current is not None:
        if current is scope:
            return True
        current = parents.get(current)
    return isinstance(scope, ast.Module)


def is_function_name(module: str, name: str) -> bool:
    """Whether ``from module import name`` binds an intercepted function,
    judged without importing: not private, not capitalised (classes,
    constants), not a known submodule or non-operator object."""
    if not name or name.startswith("_") or name[0].isupper():
        return False
    return name not in NOT_FUNCTIONS.get(module, frozenset())

