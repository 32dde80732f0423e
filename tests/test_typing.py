"""The type hints are checked (mypy), as the style guide asks."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("package", ["msprobe_lint", "probe_runtime", "probe_format"])
def test_mypy_is_clean(package):
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary", package],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
