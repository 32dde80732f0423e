"""The runtime's import contracts (``[tool.importlinter]`` in pyproject.toml,
ids ``runtime-*``) hold, and each one fails when its rule is broken: a
deliberate violation is written into a temporary copy of the packages."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytest.importorskip("importlinter")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONTRACTS = {c["id"]: c["name"] for c in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
             ["contracts"] if c["id"].startswith("runtime-")}
RUN = ("import sys; from importlinter.cli import lint_imports; "
       "sys.exit(lint_imports(config_filename='pyproject.toml', limit_to_contracts=tuple(sys.argv[1:]), no_cache=True, "
       "no_logo=True))")


def lint_imports(root: Path, *ids: str) -> subprocess.CompletedProcess:
    """``lint-imports`` on the packages under ``root`` (found there first)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-c", RUN, *ids], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_runtime_contracts_hold():
    assert len(CONTRACTS) >= 7, CONTRACTS
    proc = lint_imports(REPO, *CONTRACTS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in CONTRACTS.values():
        assert " ".join(name.split()) in " ".join(proc.stdout.split()), name
    assert f"{len(CONTRACTS)} kept, 0 broken" in proc.stdout


#: contract id -> (file under the copy, the import added to it)
VIOLATIONS = {
    "runtime-layers": ("probe_runtime/gate.py", "from . import debugger"),
    "runtime-no-circles": ("probe_runtime/check/verdict.py", "from . import queue"),
    "runtime-hooks-leaf": ("probe_runtime/hooks/guard.py", "from .. import state"),
    "runtime-levels-apart": ("probe_runtime/l0/plan.py", "from ..l1 import wrappers"),
    "runtime-check-below-levels": ("probe_runtime/check/records.py", "from ..l0 import calls"),
    "runtime-dump-alone": ("probe_runtime/dump/writer.py", "from ..state import RunState"),
    "runtime-lint-never-imports-runtime": ("msprobe_lint/lint/engine.py", "import probe_runtime.state"),
}


def test_every_runtime_contract_has_a_violation_below():
    assert set(VIOLATIONS) == set(CONTRACTS)


@pytest.mark.slow
@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_deliberate_violation_breaks_the_contract(tmp_path, contract):
    for package in ("msprobe_lint", "probe_runtime"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    assert lint_imports(tmp_path, contract).returncode == 0  # the copy holds before the change
    path, line = VIOLATIONS[contract]
    with open(tmp_path / path, "a", encoding="utf-8") as f:
        f.write(f"\n{line}  # deliberate violation\n")
    proc = lint_imports(tmp_path, contract)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 broken" in proc.stdout and "BROKEN" in " ".join(proc.stdout.split())


def test_no_private_name_is_imported_across_runtime_modules():
    """``from x import _name`` between probe_runtime's modules: none (a name
    another module needs is public)."""
    found = []
    for path in sorted((REPO / "probe_runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("probe_runtime")):
                found += [f"{path.relative_to(REPO)}: {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []
