"""The architecture holds (issue 24): the import contracts of
pyproject.toml's [tool.importlinter] are kept (and a deliberate violation
breaks each one: lint-*, runtime-*, report-* and format-*), no module of msprobe_lint, probe_runtime or probe_format
imports another's private name, and msprobe_lint has no import cycle.
Imports inside functions count (grimp sees them)."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

grimp = pytest.importorskip("grimp", reason="import-linter (the test extra) brings grimp")

PACKAGES = ("msprobe_lint", "probe_runtime", "probe_format")


if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: contract id -> name, as pyproject.toml's [tool.importlinter] declares them
CONTRACTS = {c["id"]: c["name"] for c in
             tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}

#: contract id -> (module file, the import a deliberate violation adds to it)
VIOLATIONS = {
    "lint-layers": ("msprobe_lint/run/launchers.py", "from ..server import lsp as _lsp  # noqa"),
    "lint-library-alone": ("msprobe_lint/lint/engine.py", "from ..cli import app as _app  # noqa"),
    "lint-project-no-lint-run": ("msprobe_lint/project/sniff.py",
                                 "from ..lint import diagnostic as _diagnostic  # noqa"),
    "lint-no-circles": ("msprobe_lint/lint/fixes/edits.py", "from .. import fixing as _fixing  # noqa"),
    "lint-fast-path": ("msprobe_lint/cli/lint.py", "import typer as _typer  # noqa"),
    "lint-report-no-engine": ("msprobe_lint/report/__init__.py", "from ..lint import engine as _engine  # noqa"),
    "runtime-layers": ("probe_runtime/gate.py", "from . import debugger"),
    "runtime-no-circles": ("probe_runtime/check/verdict.py", "from . import queue"),
    "runtime-hooks-leaf": ("probe_runtime/hooks/guard.py", "from .. import state"),
    "runtime-levels-apart": ("probe_runtime/l0/plan.py", "from ..l1 import wrappers"),
    "runtime-check-below-levels": ("probe_runtime/check/records.py", "from ..l0 import calls"),
    "runtime-dump-alone": ("probe_runtime/dump/writer.py", "from ..state import RunState"),
    "runtime-lint-never-imports-runtime": ("msprobe_lint/textsafe.py", "import probe_runtime as _runtime  # noqa"),
    "report-layers": ("msprobe_lint/report/reader.py", "from .analysis import scan"),
    "report-no-circles": ("msprobe_lint/report/analysis/facts.py", "from . import first"),
    "format-leaf": ("probe_format/records.py", "from msprobe_lint.report import model as _model  # noqa"),
    "live-writers-leaf": ("msprobe_lint/live_writers.py", "from .report import model as _model  # noqa"),
}


def lint_imports(cwd: Path, *ids: str) -> subprocess.CompletedProcess:
    """``lint-imports`` (import-linter's command) run in ``cwd`` on the
    packages found there first, limited to the contracts ``ids`` (all
    when none)."""
    command = Path(sys.executable).parent / "lint-imports"
    if not command.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    limits = [arg for contract in ids for arg in ("--contract", contract)]
    return subprocess.run([str(command), "--no-cache", *limits], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(cwd)))


def test_the_import_contracts_are_kept():
    proc = lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{len(CONTRACTS)} kept, 0 broken" in proc.stdout
    for name in CONTRACTS.values():
        assert " ".join(name.split()) in " ".join(proc.stdout.split()), name


def test_every_contract_has_a_deliberate_violation_below():
    assert set(VIOLATIONS) == set(CONTRACTS)


@pytest.mark.slow
@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_deliberate_violation_breaks_its_contract(tmp_path, contract):
    """In a copy of the packages that keeps the contract, one violating
    import is added after the module's imports; lint-imports must then
    fail and name the contract as broken."""
    for name in PACKAGES:
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    assert lint_imports(tmp_path, contract).returncode == 0  # the copy holds before the change
    path, line = VIOLATIONS[contract]
    target = tmp_path / path
    text = target.read_text(encoding="utf-8")
    cut = text.index("\n\n", text.index("from __future__ import annotations")) + 1
    target.write_text(text[:cut] + line + "\n" + text[cut:], encoding="utf-8")
    proc = lint_imports(tmp_path, contract)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    broken = [row for row in proc.stdout.replace("\n", " ").split(" KEPT") if "BROKEN" in row]
    assert any(" ".join(CONTRACTS[contract].split()) in " ".join(row.split()) for row in broken), \
        proc.stdout[-3000:]


def module_graph():
    sys.path.insert(0, str(REPO))
    try:
        return grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(REPO))


def cycles(graph, modules: set[str]) -> list[list[str]]:
    """The strongly connected groups (more than one module) of the import
    graph restricted to ``modules`` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child) & modules))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_cycle_finder_finds_a_cycle():
    class Graph:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, module):
            return set(self.edges.get(module, ()))

    assert cycles(Graph(), {"a", "b", "c", "d"}) == [["a", "b", "c"]]


def test_no_import_cycles_in_msprobe_lint():
    graph = module_graph()
    found = cycles(graph, {m for m in graph.modules if m.split(".")[0] == "msprobe_lint"})
    assert not found, found


def module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def private_uses(package: str) -> list[str]:
    """Every use of another module's private name in ``package``: ``from
    m import _x``, or ``m._x`` with ``m`` a module of ours bound by an
    import. A package's own names (``from . import _x`` in a subpackage
    of it) count too; third-party modules (MindSpore's privates) do not."""
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
        name = module_of(path)
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}  # local name -> module of ours
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                if base.split(".")[0] not in PACKAGES or base == name:
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(REPO)}:{node.lineno}: from {base} import {alias.name}")
                    full = f"{base}.{alias.name}"
                    where = REPO / Path(*full.split("."))
                    if where.is_dir() or where.with_suffix(".py").exists():
                        bound[alias.asname or alias.name] = full
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in PACKAGES:
                        top = alias.name.split(".")[0]
                        bound[alias.asname or top] = alias.name if alias.asname else top
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id in bound and bound[node.value.id] != name:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {bound[node.value.id]}.{node.attr}")
    return found


def test_private_use_finder_sees_both_forms(tmp_path, monkeypatch):
    package = tmp_path / "msprobe_lint"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("_hidden = 1\n")
    (package / "b.py").write_text("from .a import _hidden\nfrom . import a\nx = a._hidden\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert private_uses("msprobe_lint") == ["msprobe_lint/b.py:1: from msprobe_lint.a import _hidden",
                                            "msprobe_lint/b.py:3: msprobe_lint.a._hidden"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_names_imported_across_modules(package):
    found = private_uses(package)
    assert not found, "\n".join(found)
