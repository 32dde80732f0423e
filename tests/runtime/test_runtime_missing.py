"""``PrecisionDebugger`` without the runtime extra (``pip install .`` is the
linter alone): a clear ImportError at construction, not a bare
ModuleNotFoundError, nor an error logged later at start(). numpy or
MindSpore is hidden from a child interpreter by a meta path finder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCKED = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {module!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
from probe_runtime import PrecisionDebugger, RuntimeMissing
if sys.argv[2] == "catch":
    try:
        PrecisionDebugger(config_path=sys.argv[1])
    except ImportError as err:
        print("caught", type(err).__name__, isinstance(err, RuntimeMissing), err.name)
        sys.exit(0)
    print("constructed")
else:
    PrecisionDebugger(config_path=sys.argv[1])
"""


@pytest.mark.parametrize("module", ["numpy", "mindspore"])
def test_constructing_without_the_runtime_extra_says_how_to_install_it(tmp_path, module):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "level": "L1"}))
    os.chmod(config, 0o640)
    script = tmp_path / "blocked.py"
    script.write_text(BLOCKED.format(module=module))
    env = {k: v for k, v in os.environ.items() if k not in ("PROBE_CONFIG", "RANK_ID", "RANK")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(script), str(config), "catch"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == ["caught", "RuntimeMissing", "True", module], \
        proc.stdout + proc.stderr[-2000:]
    proc = subprocess.run([sys.executable, str(script), str(config), "uncaught"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"probe_runtime needs {module}" in proc.stderr
    assert "install the runtime extra: pip install 'msprobe-lint[runtime]'" in proc.stderr
    assert not (tmp_path / "dump").exists()  # refused before anything was created
