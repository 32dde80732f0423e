"""The six shared runtime cases (../shared/cases/runtime) pass with probe_runtime."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
TOOLS = Path(__file__).resolve().parents[1] / ".." / "shared" / "tools"


def test_shared_runtime_cases(tmp_path):
    pytest.importorskip("mindspore")
    script = TOOLS / "check-runtime-cases"
    if not script.exists():
        pytest.skip(f"{script} not present")
    proc = subprocess.run([sys.executable, str(script), "--python", sys.executable, "-v"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout
