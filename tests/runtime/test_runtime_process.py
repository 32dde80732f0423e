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

from conftest import clean_environ

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
    env = clean_environ()
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
    # MindSpore >= 2.9 logs a warning when a module of its old layout (mindspore.common.api) is imported
    # by name: the tool must not put one into the user's output
    assert "is deprecated" not in proc.stderr, proc.stderr[-2000:]
    records = json.loads((tmp_path / "dump" / "step3" / "rank" / "overflow.json").read_text())
    assert records[0]["origin"] is True


FULL_DISK = """
import errno, runpy, sys
from probe_runtime.dump import writer
real, written = writer.atomic_write, []

def filling(name, payload, **kw):  # the disk fills after the first record's first two tensor files
    if len(written) >= 2:
        raise OSError(errno.ENOSPC, "No space left on device")
    written.append(name)
    return real(name, payload, **kw)

writer.atomic_write = filling
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_disk_that_fills_mid_run_is_said_by_probe_run_and_probe_report(tmp_path):
    """A tester's finding, on a real 64 KiB tmpfs: the runtime said
    "detection turned off: cannot write the dump (No space left on
    device)", then `probe run` exited 0 without a word and `probe report`
    said "found nothing: nothing overflowed" (exit 1), the loss at NaN,
    step3/rank/dump_tensor_data left with tensors only. Here the disk
    fills in the writer (no mount, no root): probe run warns naming the
    rank, step and reason and passes the job's status on; probe report
    names the tensors without records and the turned-off rank, exit 2."""
    from conftest import run_probe

    example = json.loads((ROOT / "examples" / "config_l1.json").read_text())
    example["dump_path"] = str(tmp_path / "dump")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(example))
    os.chmod(path, 0o640)
    wrapper = tmp_path / "full_disk.py"
    wrapper.write_text(FULL_DISK)
    script = str(ROOT / "examples" / "train_overflow.py")
    env = child_env()
    proc = run_probe("run", str(path), "--script", script, "--", sys.executable, str(wrapper), script, cwd=tmp_path,
                     env=env, timeout=300)
    said = "detection was turned off in rank (step 3): cannot write the dump (OSError: [Errno 28] No space left on " \
           "device)"
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "loss nan" in proc.stdout and f"probe: warning: {said}\n" in proc.stderr, proc.stderr[-3000:]
    # the example's own summary gives no all-clear either (it said "no overflow found" after the NaN loss)
    assert "no overflow found" not in proc.stdout and f"no overflow record in the dump folder {tmp_path / 'dump'}; " \
           f"`probe report {tmp_path / 'dump'}` says why" in proc.stdout, proc.stdout[-2000:]
    assert f"probe: warning: the dump in {tmp_path / 'dump'} lacks what the job found from then on and is no " \
           "all-clear" in proc.stderr and "the exit status is the job's own (0)" in proc.stderr
    assert sorted(os.listdir(tmp_path / "dump" / "step3" / "rank")) == ["dump_tensor_data"]
    report = run_probe("report", str(tmp_path / "dump"), cwd=tmp_path, env=env)
    assert report.returncode == 2, report.stderr
    assert "nothing overflowed" not in report.stderr and "found nothing" not in report.stderr
    assert "step3/rank/dump_tensor_data: 2 tensor file(s)" in report.stderr, report.stderr
    assert f"Records lost (tensors without their records, see the warnings): step3/rank; the overflow may have " \
           f"started there. D{said[1:]}." in report.stderr, report.stderr


HOLDS = """
import os, sys, time
from probe_runtime import PrecisionDebugger
debugger = PrecisionDebugger(config_path=sys.argv[1])
print("ready", flush=True)
time.sleep(120)
"""

SECOND = """
import sys
from probe_runtime import ConfigLintError, PrecisionDebugger
try:
    PrecisionDebugger(config_path=sys.argv[1])
except ConfigLintError as err:
    print(err)
    sys.exit(3)
print("constructed")
"""


def _start_holder(tmp_path, cfg, env):
    holder = tmp_path / "holds.py"
    holder.write_text(HOLDS)
    proc = subprocess.Popen([sys.executable, str(holder), str(cfg)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read()[-2000:] if proc.poll() is not None else line
    return proc


def _second(tmp_path, cfg, env):
    second = tmp_path / "second.py"
    second.write_text(SECOND)
    return subprocess.run([sys.executable, str(second), str(cfg)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_second_writer_of_the_same_rank_folder_is_refused(tmp_path):
    """Two jobs started with one dump_path (a config with a fixed path, a
    relaunch while the first runs): the second PrecisionDebugger is refused
    at construction, naming the first; once the first is gone (kill -9:
    its marker is stale) a new run starts."""
    cfg = config(tmp_path)
    first = _start_holder(tmp_path, cfg, child_env())
    try:
        proc = _second(tmp_path, cfg, child_env())
        assert proc.returncode == 3, proc.stdout + proc.stderr[-2000:]
        assert "PL411" in proc.stdout and f"pid {first.pid}" in proc.stdout and "holds.py" in proc.stdout
        assert "being written by another process" in proc.stdout
        # another rank of another job (a second msrun launch with other ranks) is refused too
        other_job = dict(child_env(), RANK_ID="1", MS_SCHED_HOST="127.0.0.1", MS_SCHED_PORT="9")
        proc = _second(tmp_path, cfg, other_job)
        assert proc.returncode == 3 and f"pid {first.pid}" in proc.stdout and "another job" in proc.stdout
    finally:
        first.kill()
        first.wait()
    proc = _second(tmp_path, cfg, child_env())
    assert proc.returncode == 0 and "constructed" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_no_setting_lets_a_second_writer_in(tmp_path):
    """The refusal of a second writer stands when the project turns PL411
    off (ignore, select) and when probe run hands on a selection without
    it: two runs would overwrite and mix each other's files whatever the
    settings say (a tester's finding for the earlier-dump check, which
    ignoring PL407 turned off)."""
    from msprobe_lint.run.environment import SELECTION

    cfg = config(tmp_path)
    first = _start_holder(tmp_path, cfg, child_env())
    try:
        (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nignore = ["PL411", "PL407"]\n')
        proc = _second(tmp_path, cfg, child_env())
        assert proc.returncode == 3, proc.stdout + proc.stderr[-2000:]
        assert "PL411" in proc.stdout and f"pid {first.pid}" in proc.stdout
        (tmp_path / "pyproject.toml").unlink()
        handed = json.dumps({"select": ["PL1"], "ignore": [], "extend_select": [], "config_file": None,
                             "isolated": True})
        proc = _second(tmp_path, cfg, dict(child_env(), **{SELECTION: handed}))
        assert proc.returncode == 3, proc.stdout + proc.stderr[-2000:]
        assert "PL411" in proc.stdout and f"pid {first.pid}" in proc.stdout
    finally:
        first.kill()
        first.wait()


def test_ranks_of_one_job_share_a_dump_path(tmp_path):
    """The ranks of one launch (msrun's scheduler address in their
    environment) each claim their own rank folder: no conflict."""
    cfg = config(tmp_path)
    job = {"MS_SCHED_HOST": "127.0.0.1", "MS_SCHED_PORT": "8118"}
    first = _start_holder(tmp_path, cfg, dict(child_env(), RANK_ID="0", **job))
    try:
        proc = _second(tmp_path, cfg, dict(child_env(), RANK_ID="1", **job))
        assert proc.returncode == 0 and "constructed" in proc.stdout, proc.stdout + proc.stderr[-2000:]
        markers = sorted(p.name for p in (tmp_path / "dump").glob(".probe-writer-*"))
        assert markers == [".probe-writer-rank0.lock", ".probe-writer-rank1.lock"]
        # a third process on rank 0 of the same job is still refused (two writers of one folder)
        proc = _second(tmp_path, cfg, dict(child_env(), RANK_ID="0", **job))
        assert proc.returncode == 3 and "its folder rank0" in proc.stdout
    finally:
        first.kill()
        first.wait()


OVERFLOW_ONCE = """
import sys, numpy as np, mindspore as ms
from mindspore import ops, Tensor
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE)
debugger = PrecisionDebugger(config_path=sys.argv[1])
debugger.start()
ops.exp(Tensor(np.array([100.0], np.float32)))
debugger.stop()
"""


def test_a_script_run_as_dot_dot_path_is_named_without_dot_dot(tmp_path):
    """``python ../train.py`` from a sub-folder: records, stack.json and the
    log name the script by its plain path, not ``run/../train.py``."""
    script = tmp_path / "train.py"
    script.write_text(OVERFLOW_ONCE)
    run = tmp_path / "run"
    run.mkdir()
    proc = subprocess.run([sys.executable, "../train.py", str(config(tmp_path))], cwd=run, env=child_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rank = tmp_path / "dump" / "step0" / "rank"
    records = json.loads((rank / "overflow.json").read_text())
    wheres = [r["where"] for r in (records if isinstance(records, list) else records["records"])]
    assert wheres and all(w.startswith(f"{script}:") for w in wheres), wheres
    assert "/../" not in (rank / "stack.json").read_text()
    assert f"{script}:" in proc.stderr and "/../" not in proc.stderr, proc.stderr


CUT_SHORT = """
import sys, numpy as np, mindspore as ms
from mindspore import ops, Tensor
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE)
debugger = PrecisionDebugger(config_path=sys.argv[1])
s = Tensor(np.ones((4, 4), np.float32))
debugger.start()
masked = ops.masked_fill(s, Tensor(np.triu(np.ones((4, 4), bool), 1)), float("-inf"))
if sys.argv[2] == "reaches":
    print(float(masked.sum().asnumpy()))  # the -inf reaches a judged result: the mask is the origin
if sys.argv[2] == "log":  # float16: exp(-100) underflows to 0 in the softmax, and log(0) is -inf
    logp = ops.log(ops.softmax(Tensor(np.array([[0.0, 100.0]], np.float16)), axis=-1))
    if not np.isfinite(logp.asnumpy()).all():
        raise ValueError("log-probabilities not finite")  # the user's guard
if sys.argv[2] == "mixed":  # a float16 log(0) rides on a ban mask, read on the host; the guard raises on it
    logp = ops.log(ops.softmax(Tensor(np.array([[0.0, 5.0, 30.0, 1.0]], np.float16)), axis=-1))
    ops.exp(logp)
    bias = ops.masked_fill(ops.zeros_like(logp), Tensor(np.array([[True, False, False, False]])), float("-inf"))
    if np.isneginf((bias + logp).asnumpy()).sum() > 1:
        raise ValueError("log-probabilities underflowed")
masked.reshape(3, 5)  # the user's shape bug
"""


@pytest.mark.parametrize("case", ["cut off", "reaches", "log", "mixed"])
def test_a_mask_an_exception_cut_off_is_said_not_recorded(tmp_path, case):
    """A fresh user's finding: a shape error raised right after a causal
    ``masked_fill`` ended the job, and the mask, which nothing had used
    yet, was recorded as the overflow's origin ("Overflow started in
    masked_fill"). It is said on stderr and not recorded; a mask whose
    -inf reached a result before the exception still is, and so is a -inf
    that a computation made (a review's finding: the loop's guard raised
    on a float16 ``log`` of an underflowed probability, and the run said
    "no overflow found")."""
    script = tmp_path / "cut_short.py"
    script.write_text(CUT_SHORT)
    proc = subprocess.run([sys.executable, str(script), str(config(tmp_path)), case],
                          cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "ValueError" in proc.stderr, proc.stderr[-2000:]
    index = tmp_path / "dump" / "step0" / "rank" / "overflow.json"
    said = ("ended on an uncaught exception while 1 -inf mask(s) written on purpose were not used yet "
            "(Functional.masked_fill.0.forward): not recorded as overflows")
    if case == "cut off":
        assert not index.exists(), index.read_text()
        assert said in proc.stderr and "no overflow found" in proc.stderr, proc.stderr[-2000:]
        return
    records = json.loads(index.read_text())
    if case == "reaches":
        assert records[0]["name"] == "Functional.masked_fill.0.forward" and records[0]["origin"], records
        assert "not used yet" not in proc.stderr
    elif case == "log":  # the mask is cut off still; the log is the origin
        assert [r["name"] for r in records if r["origin"]] == ["Functional.log.0.forward"], records
        assert said in proc.stderr and "no overflow found" not in proc.stderr, proc.stderr[-2000:]
    else:  # the mask the log rode on is recorded (the first mask, nothing rode on it, is cut off still)
        assert [r["name"] for r in records if r["origin"]] == ["Functional.masked_fill.1.forward"], records
        assert said in proc.stderr and "no overflow found" not in proc.stderr, proc.stderr[-2000:]
