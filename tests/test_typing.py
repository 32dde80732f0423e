"""The type hints are checked (mypy), as the style guide asks, with the
settings of pyproject.toml's [tool.mypy] (the same run as .ci/run's
``mypy`` step); and the style checks (ruff, [tool.ruff]) pass."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOOLS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]


def test_mypy_config_covers_every_package():
    packages = TOOLS["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert sorted(TOOLS["mypy"]["files"]) == sorted(packages)


def test_mypy_is_clean():
    pytest.importorskip("mypy")
    # no arguments: the files and flags are [tool.mypy]'s
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_is_clean():
    ruff = Path(sys.executable).parent / "ruff"
    command = str(ruff) if ruff.exists() else shutil.which("ruff")
    if command is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    proc = subprocess.run([command, "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
