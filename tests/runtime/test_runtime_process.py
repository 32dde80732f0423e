"""probe_runtime across process boundaries: kill -9, interpreter exit, the example."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[2]


def config(folder: Path, **section) -> Path:
    path = folder / "config.json"
    path.write_text(json.dumps({"task": "overflow_check", "dump_path": str(folder / "dump"), "rank": [],
                                "step": [], "level": "L1", "overflow_check": section or {"overflow_nums": -1}}))
    os.chmod(path, 0o640)
    return path


def child_env():
    env = dict(os.environ)
    for name in ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(ROOT)
    return env


KILLED = """
import sys, numpy as np, mindspore as ms
from mindspore import ops, Tensor
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE)
debugger = PrecisionDebugger(config_path=sys.argv[1])
x = Tensor(np.array([100.0, 1.0], np.float32))
debugger.start()
while True:
    ops.exp(x)
"""


def test_kill_9_keeps_complete_records(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    proc = subprocess.Popen([sys.executable, str(script), str(config(tmp_path))], cwd=tmp_path, env=child_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    index = tmp_path / "dump" / "step0" / "rank" / "overflow.json"
    try:
        deadline = time.monotonic() + 120
        while not index.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert index.exists(), "no record before the deadline"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    folder = index.parent
    found = json.loads(index.read_text())
    data = json.loads((folder / "dump.json").read_text())["data"]
    assert found and found[0]["name"] == "Functional.exp.0.forward" and found[0]["origin"] is True
    assert all(r["name"] in data for r in found)
    first = data["Functional.exp.0.forward"]
    array = np.load(folder / "dump_tensor_data" / first["output"][0]["data_name"])
    assert np.isinf(array[0])
    json.loads((folder / "stack.json").read_text())


AT_EXIT = """
import sys, numpy as np, mindspore as ms
from mindspore import ops, Tensor
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE)
debugger = PrecisionDebugger(config_path=sys.argv[1])
ok = Tensor(np.array([1.0], np.float32))
debugger.start()
for _ in range(3):
    ops.exp(ok)
ops.exp(ok * 100.0)       # 5th call: still pending (next batch resolves after the 7th)
print("exp patched:", ops.exp.__name__, hasattr(ops.exp, "__probe_original__"))
# no stop(): the interpreter exits
"""


def test_pending_checks_resolved_at_exit(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text(AT_EXIT)
    proc = subprocess.run([sys.executable, str(script), str(config(tmp_path))], cwd=tmp_path, env=child_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "exp patched: exp True" in proc.stdout
    found = json.loads((tmp_path / "dump" / "step0" / "rank" / "overflow.json").read_text())
    assert [r["name"] for r in found] == ["Functional.exp.3.forward"]


def test_example_finds_the_overflow(tmp_path):
    example = json.loads((ROOT / "examples" / "config_l1.json").read_text())
    example["dump_path"] = str(tmp_path / "dump")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(example))
    os.chmod(path, 0o640)
    env = child_env()
    env["PROBE_CONFIG"] = str(path)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "train_overflow.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "overflow starts at" in proc.stdout and str(tmp_path / "dump") in proc.stdout
    records = json.loads((tmp_path / "dump" / "step3" / "rank" / "overflow.json").read_text())
    assert records[0]["origin"] is True
