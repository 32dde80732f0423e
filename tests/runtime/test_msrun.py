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
COLLECTIVE_IN_GRAD = TRAIN.parent / "collective_in_grad.py"

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_two_workers(tmp_path, script: Path, ranks: list, checks: str = "") -> tuple:
    """``probe run config.json -- msrun`` with 2 workers on loopback running
    ``script`` (as train.py), the config's rank filter ``ranks``; (the
    completed process, the workers' logs, the dump path).

    Run once more, in a fresh folder, when a worker died of SIGSEGV after
    every worker had printed that it was done: MindSpore 2.7's CPU build
    now and then crashes while its processes exit (seen once in about 30
    runs of these jobs, not reproduced; every record was already on disk).
    Said on stderr. Any other failure is returned as it is."""
    proc, logs, dump = _two_workers(tmp_path, script, ranks, checks)
    workers = [part for part in logs.split("== ") if part.startswith("worker_")]
    if proc.returncode and "Error code: -11" in proc.stderr and workers and all("done" in w for w in workers):
        sys.stderr.write(f"test_msrun: a worker crashed (SIGSEGV) after the job's work was done; run again\n"
                         f"{proc.stderr[-1500:]}\n")
        retry = tmp_path / "again"
        retry.mkdir()
        proc, logs, dump = _two_workers(retry, script, ranks, checks)
    return proc, logs, dump


def _two_workers(tmp_path, script: Path, ranks: list, checks: str) -> tuple:
    """One run of :func:`run_two_workers` in ``tmp_path``."""
    pytest.importorskip("mindspore")
    runtime = pytest.importorskip("probe_runtime")
    if not hasattr(runtime, "PrecisionDebugger"):
        pytest.skip("probe_runtime.PrecisionDebugger is not there yet")
    shutil.copy(script, tmp_path / "train.py")
    dump = tmp_path / "dump"
    (tmp_path / "config.json").write_text(json.dumps({
        "task": "overflow_check", "dump_path": str(dump), "rank": ranks, "level": "L1",
        "overflow_check": {"overflow_nums": -1}}, indent=2))
    env = {"PATH": "/usr/bin:/bin", "PROBE_CHECKS": checks}  # probe run puts the venv's bin first for msrun
    for name in ("RANK_ID", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM", "PROBE_CONFIG"):
        env[name] = ""
    proc = run_probe("run", "config.json", "--", os.path.join(os.path.dirname(sys.executable), "msrun"),
                     "--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1",
                     f"--master_port={free_port()}", "--join=True", "--log_dir=logs", "--cluster_time_out=120",
                     "train.py", cwd=tmp_path, env=env, timeout=300)
    return proc, read_logs(tmp_path / "logs"), dump


def read_logs(folder: Path) -> str:
    """The scheduler's and workers' logs, each under its name, without
    MindSpore's WARNING/INFO lines (what the scripts print, the tool's
    messages, errors and tracebacks): a failure shows what every rank did."""
    parts = []
    for path in sorted(folder.glob("*.log")):
        lines = [line for line in path.read_text(errors="replace").splitlines()
                 if not line.startswith(("[WARNING]", "[INFO]"))]
        parts.append(f"== {path.name}\n" + "\n".join(lines[-60:]))
    return "\n".join(parts)


def test_two_workers_with_rank_filter(tmp_path):
    proc, logs, dump = run_two_workers(tmp_path, TRAIN, [1])
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
    assert not (dump.parent / "rank_0").exists()


def test_a_replay_never_issues_a_collective(tmp_path):
    """Auto checks in a 2-worker job whose differentiated function calls
    AllReduce: the replay of step 1 (inf on both ranks after the AllReduce)
    stops before the collective on each rank, which writes the sentinel
    record saying why, and the job ends (a replay that sent an AllReduce
    alone would leave the other rank waiting)."""
    proc, logs, dump = run_two_workers(tmp_path, COLLECTIVE_IN_GRAD, [], checks="auto")
    assert proc.returncode == 0, proc.stderr[-3000:] + logs
    assert "worker rank 0 of 2 done" in logs and "worker rank 1 of 2 done" in logs, logs
    assert sorted(str(p.relative_to(dump)) for p in dump.glob("step*/rank*")) == ["step1/rank0", "step1/rank1"]
    for rank in (0, 1):
        (record,) = json.loads((dump / "step1" / f"rank{rank}" / "overflow.json").read_text())
        assert record["kind"] == "sentinel" and record["where"].endswith("train.py:30"), record
        assert "its replay stopped before the collective AllReduce: a replay never issues a collective" in \
            record["message"]
    assert "exact L1 checks run from the next start() on" in record["message"]
