"""The six shared runtime cases (../shared/cases/runtime, an extra: skipped
when ../shared is absent) pass with probe_runtime,
with checked windows synchronous (the CPU default: register_hook on views)
and asynchronous (PROBE_SYNC=0: HookBackward), the two ways backward
entries are caught."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import SHARED_TOOLS, clean_environ

pytestmark = [pytest.mark.mindspore, pytest.mark.shared]


@pytest.mark.parametrize("sync", ["auto", "0"])
def test_shared_runtime_cases(tmp_path, sync):
    pytest.importorskip("mindspore")
    script = SHARED_TOOLS / "check-runtime-cases"
    env = dict(clean_environ(), PROBE_SYNC=sync)
    proc = subprocess.run([sys.executable, str(script), "--python", sys.executable, "-v"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout
