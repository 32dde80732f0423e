"""``mindspore.jit`` code, ``Model.train`` calls, and which framework
the script trains with.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..context import Fact
from .context_flow import level_literal
from .model import UNKNOWN, JitUse
from .names import Index, pos
from .namespaces import JIT


def collect_jit(index: Index) -> list[JitUse]:
    """The code ``mindspore.jit`` compiles (decorators and calls), in
    source order, with the jit_level each gives."""
    uses: list[JitUse] = []
    seen: set[int] = set()
    for node in ast.walk(index.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if index.qualname(target) in JIT:
                    seen.add(id(decorator))
                    line, col = pos(decorator)
                    uses.append(JitUse(line, col, node.name, _jit_kw(decorator)))
        elif isinstance(node, ast.Call) and id(node) not in seen and node.args \
                and index.qualname(node.func) in JIT:
            parent = index.parents.get(node)
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # a decorator, handled above
            line, col = pos(node)
            uses.append(JitUse(line, col, ast.unparse(node.args[0]), _jit_kw(node)))
    uses.sort(key=lambda j: (j.line, j.column))
    return uses


def _jit_kw(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg == "jit_level":
                value = level_literal(keyword.value)
                return None if value is UNKNOWN else value
    return None


def model_train_line(index: Index) -> Optional[int]:
    """``model.train(epoch, dataset, ...)``: MindSpore's Model.train
    (a PyTorch ``module.train()`` takes at most one argument)."""
    lines = []
    for node in ast.walk(index.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train":
            words = {k.arg for k in node.keywords}
            if len(node.args) >= 2 or words & {"train_dataset", "epoch", "callbacks", "dataset_sink_mode"}:
                lines.append(node.lineno)
    return min(lines) if lines else None


def infer_framework(index: Index, set_context_seen: bool) -> Optional[Fact]:
    """The framework the script trains with, from its imports (msadapter
    first, then the debugger's own import, then the only framework
    imported; with both, mindspore if set_context is called), or None."""
    first: dict[str, int] = {}
    for module, line in sorted(index.imports, key=lambda m: m[1]):
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
    elif "mindspore" in first and set_context_seen:
        choice = ("mindspore", first["mindspore"])
    return Fact(choice[0], index.where(choice[1])) if choice else None
