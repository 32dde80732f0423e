"""The index the analyses share: every node's parent, scope and
enclosing loops, and the names the script's imports bind (``ms`` ->
``mindspore``), with the intercepted functions it imports directly.

Example::

    >>> import ast
    >>> index = Index(ast.parse("import mindspore as ms; ms.set_context(mode=0)"), "train.py")
    >>> index.qualname(index.tree.body[1].value.func)
    'mindspore.set_context'
"""
from __future__ import annotations

import ast
from typing import Iterator, Optional, Union

from .model import DirectImport
from .namespaces import ALIASES, INTERCEPTED, MINDSPORE_STAR, is_function_name

LoopNode = Union[ast.For, ast.AsyncFor, ast.While, ast.comprehension]
ScopeNode = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def canonical(name: str) -> str:
    """``name`` with a known longer path of the same object shortened
    (``mindspore.context.set_context`` -> ``mindspore.set_context``)."""
    for prefix, replacement in ALIASES:
        if name.startswith(prefix):
            return replacement + name[len(prefix):]
    return name


def pos(node: ast.AST) -> tuple[int, int]:
    """1-based (line, column) of ``node``."""
    return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1


def loop_pos(loop: LoopNode) -> tuple[int, int]:
    """Position of a loop (of a comprehension: of its iterable)."""
    return pos(loop.iter if isinstance(loop, ast.comprehension) else loop)


def walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """ast.walk that does not enter function, lambda or class bodies."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        if current is not node and isinstance(current, SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(current))


def inside(scope: ast.AST, node: ast.AST, parents: dict) -> bool:
    """True when ``node`` is within ``scope`` (by the parents index)."""
    current = parents.get(node)
    while current is not None:
        if current is scope:
            return True
        current = parents.get(current)
    return isinstance(scope, ast.Module)



class Index:
    """What the analyses share about one parsed script.

    Attributes:
        tree, path: the parsed script and its path as given.
        names: local name -> qualified name its imports bind.
        star: the modules star-imported.
        parents, scope_of, loops_of: every node's parent, scope, and the
            loops around it within that scope (outermost first).
        imports: (module, line) of every absolute import.
        direct_imports: intercepted functions imported directly (PL501).
    """

    def __init__(self, tree: ast.Module, path: str):
        self.tree = tree
        self.path = path
        self.names: dict[str, str] = {}
        self.star: list[str] = []
        self.parents: dict[ast.AST, ast.AST] = {}
        self.scope_of: dict[ast.AST, ScopeNode] = {}
        self.loops_of: dict[ast.AST, tuple[LoopNode, ...]] = {}
        self.imports: list[tuple[str, int]] = []
        self.direct_imports: list[DirectImport] = []
        self._index(tree, tree, ())
        self._collect_imports()

    def where(self, line: int) -> str:
        """``"train.py:4"`` for this script."""
        return f"{self.path}:{line}"

    def _index(self, root: ast.AST, scope: ScopeNode, loops: tuple[LoopNode, ...]) -> None:
        """Parent, scope and enclosing-loop (within the scope) of every node,
        in source order, walked with a stack (no recursion: a valid script
        nests deeper than Python's recursion limit, e.g. 500 elifs or a
        1,000-term sum)."""
        todo: list[tuple[ast.AST, ScopeNode, tuple[LoopNode, ...]]] = [(root, scope, loops)]
        while todo:
            node, scope, loops = todo.pop()
            self.scope_of[node] = scope
            self.loops_of[node] = loops
            inner_scope: ScopeNode = node if isinstance(node, SCOPES) else scope  # type: ignore[assignment]
            inner_loops = () if isinstance(node, SCOPES) else loops
            children: list[tuple[ast.AST, ScopeNode, tuple[LoopNode, ...]]] = []
            for name, value in ast.iter_fields(node):
                for child in value if isinstance(value, list) else [value]:
                    if not isinstance(child, ast.AST):
                        continue
                    self.parents[child] = node
                    child_scope, child_loops = inner_scope, inner_loops
                    if isinstance(node, SCOPES) and name in ("decorator_list", "args", "returns", "bases",
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
                    children.append((child, child_scope, child_loops))
            todo.extend(reversed(children))  # the first child next: the order the recursion had

    def qualname(self, node: ast.AST) -> Optional[str]:
        """``mindspore.set_context`` for ``ms.set_context`` with
        ``import mindspore as ms``; None when not from an import."""
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return canonical(self.names[node.id])
            if "mindspore" in self.star and node.id in MINDSPORE_STAR:
                return canonical("mindspore." + node.id)
            for module in self.star:
                if module.startswith(("msprobe", "probe_runtime")) and node.id == "PrecisionDebugger":
                    return module + ".PrecisionDebugger"
            return None
        if isinstance(node, ast.Attribute):  # a.b.c: down to the name without recursion (any length)
            attrs: list[str] = []
            while isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            base = self.qualname(node) if isinstance(node, ast.Name) else None
            for attr in reversed(attrs):
                if not base:
                    return None
                base = canonical(f"{base}.{attr}")
            return base
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
            self.direct_imports.append(DirectImport(module, alias.name, bound, line, col,
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
                line, col = pos(stmt)
                self.direct_imports.append(DirectImport(module, name, bound, line, col,
                                                               self._first_use(bound, stmt)))

    def _first_use(self, name: str, after: ast.AST) -> Optional[int]:
        lines = [n.lineno for n in ast.walk(self.tree) if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load) and n.lineno >= getattr(after, "lineno", 0)
                 and isinstance(self.parents.get(n), ast.Call) and self.parents[n].func is n]  # type: ignore
        return min(lines) if lines else None
