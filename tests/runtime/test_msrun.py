"""A real 2-worker CPU job through `probe run ... -- msrun ...` on loopback
(about 20 s): the workers find their rank after init(), the config's rank
filter is honoured, and `probe report` reads the result."""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from conftest import run_probe

TRAIN = Path(__file__).resolve().parents[1] / "data" / "msrun" / "train_two_ranks.py"

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_workers_with_rank_filter(tmp_path):
    pytest.importorskip("mindspore")
    runtime = pytest.importorskip("probe_runtime")
    if not hasattr(runtime, "PrecisionDebugger"):
        pytest.skip("probe_runtime.PrecisionDebugger is not there yet")
    shutil.copy(TRAIN, tmp_path / "train.py")
    dump = tmp_path / "dump"
    (tmp_path / "config.json").write_text(json.dumps({
        "task": "overflow_check", "dump_path": str(dump), "rank": [1], "level": "L1",
        "overflow_check": {"overflow_nums": -1}}, indent=2))
    env = {"PATH": "/usr/bin:/bin"}  # probe run must put the venv's bin first for msrun's bare `python`
    for name in ("RANK_ID", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM", "PROBE_CONFIG"):
        env[name] = ""
    proc = run_probe("run", "config.json", "--", os.path.join(os.path.dirname(sys.executable), "msrun"),
                     "--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1",
                     f"--master_port={free_port()}", "--join=True", "--log_dir=logs", "--cluster_time_out=120",
                     "train.py", cwd=tmp_path, env=env, timeout=300)
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted((tmp_path / "logs").glob("*.log")))
    assert proc.returncode == 0, proc.stderr[-3000:] + logs
    assert "worker rank 0 of 2 done" in logs and "worker rank 1 of 2 done" in logs, logs
    folders = sorted(str(p.relative_to(dump)) for p in dump.glob("step*/rank*"))
    assert folders == ["step0/rank1"], folders  # rank 0 overflowed in step 1 but is filtered out
    records = json.loads((dump / "step0" / "rank1" / "overflow.json").read_text())
    assert records[0]["name"].startswith("Functional.exp.") and records[0]["origin"] is True
    assert records[0]["where"].endswith("train.py:27")

    report = run_probe("report", str(dump))
    assert report.returncode == 0, report.stderr
    assert report.stdout.splitlines()[0].startswith("step0/rank1")
    assert "Overflow started in step0/rank1: Functional.exp.0.forward (API, forward)" in report.stdout
    assert not (tmp_path / "rank_0").exists()
