"""The six shared runtime cases (../shared/cases/runtime) pass with probe_runtime,
with checked windows synchronous (the CPU default: register_hook on views)
and asynchronous (PROBE_SYNC=0: HookBackward), the two ways backward
entries are caught."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
TOOLS = Path(__file__).resolve().parents[1] / ".." / "shared" / "tools"


@pytest.mark.parametrize("sync", ["auto", "0"])
def test_shared_runtime_cases(tmp_path, sync):
    pytest.importorskip("mindspore")
    script = TOOLS / "check-runtime-cases"
    if not script.exists():
        pytest.skip(f"{script} not present")
    env = dict(os.environ, PROBE_SYNC=sync)
    proc = subprocess.run([sys.executable, str(script), "--python", sys.executable, "-v"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout
