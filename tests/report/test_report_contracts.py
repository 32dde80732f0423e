"""The report's import contracts (``[tool.importlinter]`` in pyproject.toml,
ids ``report-*``) hold, and each one fails when its rule is broken: a
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
             ["contracts"] if c["id"].startswith("report-")}
RUN = ("import sys; from importlinter.cli import lint_imports; "
       "sys.exit(lint_imports(config_filename='pyproject.toml', limit_to_contracts=tuple(sys.argv[1:]), no_cache=True, "
       "no_logo=True))")

#: contract id -> (file under the copy, the import added to it)
VIOLATIONS = {
    "report-layers": ("msprobe_lint/report/reader.py", "from .analysis import scan"),
    "report-no-circles": ("msprobe_lint/report/analysis/facts.py", "from . import first"),
    "report-dumpformat-leaf": ("msprobe_lint/report/dumpformat.py", "from . import model"),
}


def lint_imports(root: Path, *ids: str) -> subprocess.CompletedProcess:
    """``lint-imports`` on the packages under ``root`` (found there first)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-c", RUN, *ids], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_report_contracts_hold():
    assert set(CONTRACTS) == set(VIOLATIONS)
    proc = lint_imports(REPO, *CONTRACTS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in proc.stdout


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
    assert "1 broken" in proc.stdout


def test_no_private_name_is_imported_across_report_modules():
    """``from x import _name`` between the report's modules: none."""
    found = []
    for path in sorted((REPO / "msprobe_lint" / "report").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found += [f"{path.relative_to(REPO)}: {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []
