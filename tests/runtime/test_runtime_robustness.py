"""Issue 9, runtime part: hostile dump paths, faults inside the tool, interrupts.

Writer-level tests need no MindSpore. Tests that mount a small tmpfs (a real
full disk, a real read-only folder) need root with mount rights and are
skipped elsewhere; a simulated ENOSPC test always runs.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from runtime_support import assert_same_training, isolate, train_mlp, write_runtime_config

from probe_format.layout import NOTE_KINDS
from probe_runtime.dump import writer as writer_module
from probe_runtime.dump.writer import Record, StepWriter, WriterError, read_json

ROOT = Path(__file__).resolve().parents[2]


def record(name: str, size: int = 4) -> Record:
    return Record(name=name, origin=True, where="train.py:3",
                  entry={"input_args": [], "input_kwargs": {}, "output": [{"Max": float("inf")}]},
                  stack=["File train.py, line 3, in <module>, \n y = ops.exp(x)"],
                  arrays={f"{name}.output.0.npy": np.full(size, np.inf, np.float32)})


def assert_intact(folder: Path, expected: list[str]) -> None:
    """overflow.json lists exactly ``expected``, every one that names a call
    in dump.json (records of the kinds that name no call have no entry)."""
    records = read_json(str(folder / "overflow.json"))
    assert [r["name"] for r in records] == expected
    names = [r["name"] for r in records if r.get("kind") not in NOTE_KINDS]
    if names or (folder / "dump.json").exists():
        data = read_json(str(folder / "dump.json"))["data"]
        assert all(n in data for n in names)
        json.loads((folder / "stack.json").read_text())
        json.loads((folder / "construct.json").read_text())
    assert not [p for p in os.listdir(folder) if p.endswith(".tmp")]


def failure_messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "probe_runtime" and r.levelno >= logging.WARNING and "overflow in" not in r.getMessage()]


@pytest.fixture
def tmpfs(tmp_path):
    """``mount(size)`` -> a fresh tmpfs folder (unmounted afterwards)."""
    mounted = []

    def mount(size: str = "64k") -> Path:
        target = tmp_path / f"mnt{len(mounted)}"
        target.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(target)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in mounted:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def remount_read_only(target: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(target)], check=True, capture_output=True)


# -- writer: soft links, modes, deleted folders, full and read-only disks --------------
def test_folder_swapped_for_link_while_writing_never_writes_through_it(tmp_path, monkeypatch):
    writer = StepWriter(str(tmp_path / "dump"), 0, "rank")
    writer.write(record("A.0.forward"))
    folder = tmp_path / "dump" / "step0" / "rank"
    evil = tmp_path / "evil"
    evil.mkdir()
    real_json = writer_module._json_bytes
    swapped = []

    def swap_then_serialise(data):
        if not swapped:  # the folder was checked; now it becomes a link (a race, made deterministic)
            swapped.append(True)
            os.rename(folder, tmp_path / "moved")
            os.symlink(evil, folder)
        return real_json(data)

    monkeypatch.setattr(writer_module, "_json_bytes", swap_then_serialise)
    try:
        writer.write(record("B.0.forward"))
    except WriterError:
        pass
    assert swapped and list(evil.iterdir()) == []           # nothing went through the link
    with pytest.raises(WriterError, match="soft link"):
        writer.write(record("C.0.forward"))                 # the next record refuses the link
    assert list(evil.iterdir()) == []
    assert_intact(tmp_path / "moved", ["A.0.forward", "B.0.forward"])


def test_parent_swapped_for_link_after_the_check_is_refused(tmp_path):
    (tmp_path / "parent").mkdir()
    writer = StepWriter(str(tmp_path / "parent" / "dump"), 0, "rank")
    writer.write(record("A.0.forward"))
    evil = tmp_path / "evil"
    evil.mkdir()
    os.rename(tmp_path / "parent", tmp_path / "parent.old")
    os.symlink(evil, tmp_path / "parent")
    with pytest.raises(WriterError, match="soft link"):
        writer.write(record("B.0.forward"))
    assert list(evil.iterdir()) == []
    assert_intact(tmp_path / "parent.old" / "dump" / "step0" / "rank", ["A.0.forward"])


@pytest.mark.parametrize("mask", [0, 0o077])
def test_owner_only_write_modes_whatever_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        StepWriter(str(tmp_path / "dump"), 0, "rank").write(record("A.0.forward"))
    finally:
        os.umask(old)
    folder = tmp_path / "dump" / "step0" / "rank"
    for path in (tmp_path / "dump", folder.parent, folder, folder / "dump_tensor_data"):
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o750, path
    for path in [*folder.glob("*.json"), *(folder / "dump_tensor_data").iterdir()]:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o640, path


def test_deleted_dump_folder_is_created_again_and_said_once(tmp_path, caplog):
    dump = tmp_path / "dump"
    writer = StepWriter(str(dump), 0, "rank")
    writer.write(record("A.0.forward"))
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        shutil.rmtree(dump)
        writer.write(record("B.0.forward"))
        shutil.rmtree(dump)
        writer.write(record("C.0.forward"))
        StepWriter(str(dump), 1, "rank").write(record("D.0.forward"))  # a new step: nothing to say
    assert_intact(dump / "step0" / "rank", ["A.0.forward", "B.0.forward", "C.0.forward"])
    messages = failure_messages(caplog)
    assert len(messages) == 1 and "deleted" in messages[0], messages


def test_failed_write_leaves_earlier_records_and_no_trace(tmp_path, monkeypatch):
    writer = StepWriter(str(tmp_path / "dump"), 0, "rank")
    writer.write(record("A.0.forward"))
    real = writer_module.atomic_write

    def full(name, payload, **kw):
        if os.path.basename(name) == "overflow.json":
            raise OSError(errno.ENOSPC, "No space left on device (simulated)")
        return real(name, payload, **kw)

    monkeypatch.setattr(writer_module, "atomic_write", full)
    with pytest.raises(OSError):
        writer.write(record("B.0.forward"))
    monkeypatch.setattr(writer_module, "atomic_write", real)
    writer.write(record("C.0.forward"))            # B was not written: no file mentions it
    folder = tmp_path / "dump" / "step0" / "rank"
    assert_intact(folder, ["A.0.forward", "C.0.forward"])
    assert "B.0.forward" not in read_json(str(folder / "dump.json"))["data"]


def test_full_tmpfs_keeps_every_record_written(tmpfs):
    disk = tmpfs("64k")
    writer = StepWriter(str(disk / "dump"), 0, "rank")
    written = []
    with pytest.raises(OSError) as failure:
        for i in range(100):
            writer.write(record(f"R.{i}.forward", size=1024))
            written.append(f"R.{i}.forward")
    assert failure.value.errno == errno.ENOSPC and written
    folder = disk / "dump" / "step0" / "rank"
    assert_intact(folder, written)
    assert not [p for p in os.listdir(folder / "dump_tensor_data") if p.endswith(".tmp")]


def test_read_only_folder_keeps_every_record_written(tmpfs):
    disk = tmpfs("1m")
    writer = StepWriter(str(disk / "dump"), 0, "rank")
    writer.write(record("A.0.forward"))
    remount_read_only(disk)
    with pytest.raises(OSError) as failure:
        writer.write(record("B.0.forward"))
    assert failure.value.errno in (errno.EROFS, errno.EACCES)
    assert_intact(disk / "dump" / "step0" / "rank", ["A.0.forward"])


# -- the dump_path marker: why detection was turned off, kept on a full disk ---------------
REASON = "cannot write the dump (OSError: [Errno 28] No space left on device)"


def _no_room(monkeypatch) -> None:
    """A disk with no free block, simulated: a write that would grow a file
    fails, as does an allocation; a write over bytes it holds does not."""
    real_pwrite = os.pwrite

    def full_pwrite(fd, data, offset):
        if offset + len(data) > os.fstat(fd).st_size:
            raise OSError(errno.ENOSPC, "No space left on device (simulated)")
        return real_pwrite(fd, data, offset)

    def no_room(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device (simulated)")

    monkeypatch.setattr(os, "pwrite", full_pwrite)
    monkeypatch.setattr(os, "posix_fallocate", no_room, raising=False)


def test_the_marker_keeps_why_detection_was_turned_off(tmp_path):
    """A tester's finding: a full disk turned detection off, and nothing
    beside the job's stderr said so. The claim reserves room in its marker
    (spaces after the JSON, allocated) and the reason is written in place,
    in that room."""
    from msprobe_lint.live_writers import BLOCK, RESERVED, claim, read_writers

    held = claim(str(tmp_path), "rank0")
    assert held is not None
    marker = tmp_path / ".probe-writer-rank0.lock"
    size = marker.stat().st_size
    assert size % BLOCK == 0 and size >= len(marker.read_bytes().rstrip()) + RESERVED
    held.turned_off(REASON, 3)
    [writer] = read_writers(str(tmp_path))
    assert writer.live and writer.pid == os.getpid() and writer.turned_off == REASON and writer.turned_off_step == 3
    assert writer.turned_off_text() == f"detection was turned off in rank0 (step 3): {REASON}"
    assert marker.stat().st_size == size
    held.release()
    [writer] = read_writers(str(tmp_path))
    assert not writer.live and writer.turned_off == REASON
    assert claim(str(tmp_path), "rank0") is not None  # a new run's claim starts afresh
    assert read_writers(str(tmp_path))[0].turned_off == ""


def test_the_marker_is_written_in_place_when_the_disk_has_no_room(tmp_path, monkeypatch):
    """On a disk with no free block (simulated: a write that would grow a
    file fails, as does an allocation) the reason still lands in the room
    the claim reserved, and a word too long for it leaves the marker whole.
    (Before, the marker was truncated and written again: on a full disk it
    lost who wrote it, and the reason with it.)"""
    from msprobe_lint.live_writers import claim, read_writers

    held = claim(str(tmp_path), "rank")
    assert held is not None
    _no_room(monkeypatch)
    held.turned_off(REASON, 2)
    held.note("x" * 8000)  # more than the room left: not written, nothing lost
    monkeypatch.undo()
    [writer] = read_writers(str(tmp_path))
    assert writer.pid == os.getpid() and writer.turned_off == REASON and writer.turned_off_step == 2
    assert writer.summary == ""
    held.release()


def test_a_claim_on_a_full_disk_never_keeps_an_earlier_runs_word(tmp_path, monkeypatch):
    """A review's finding: on a disk with no room, a claim could not grow an
    earlier run's marker (one written without room to spare, by a version
    before the reserve) to who it is, and left that run's content in place:
    its pid, and its "detection was turned off", read by probe report and
    probe run as this run's. The marker is emptied instead (what the claim
    did before it wrote in place): without who holds it, but no one else's
    word."""
    from msprobe_lint.live_writers import claim, read_writers

    marker = tmp_path / ".probe-writer-rank.lock"
    marker.write_text(json.dumps({"pid": 999999, "host": "elsewhere", "started": "2020-01-01T00:00:00Z",
                                  "rank_dir": "rank", "turned_off": {"reason": "an earlier run's", "step": 9}}))
    _no_room(monkeypatch)
    held = claim(str(tmp_path), "rank")
    monkeypatch.undo()
    assert held is not None
    [writer] = read_writers(str(tmp_path))
    assert writer.live and writer.pid != 999999 and writer.turned_off == "" and writer.turned_off_step is None
    held.release()


def test_a_reason_too_long_for_the_room_left_is_cut_to_fit(tmp_path, monkeypatch):
    """A reason of non-ASCII characters (a path in Chinese) is up to six
    bytes a character in the marker's JSON: 1,000 of them are more than
    the room the claim reserved. On a disk with no room the reason is cut
    to what fits rather than lost."""
    from msprobe_lint.live_writers import claim, read_writers

    held = claim(str(tmp_path), "rank")
    assert held is not None
    reason = "cannot write the dump (OSError: [Errno 28] No space left on device: '/数据/" + "溢出" * 600 + "')"
    _no_room(monkeypatch)
    held.turned_off(reason, 4)
    monkeypatch.undo()
    [writer] = read_writers(str(tmp_path))
    assert writer.pid == os.getpid() and writer.turned_off_step == 4
    assert writer.turned_off.startswith("cannot write the dump (OSError: [Errno 28] No space left on device: '/数据/")
    assert writer.turned_off.endswith("...") and reason.startswith(writer.turned_off[:-3])
    held.release()


def test_the_marker_keeps_the_reason_on_a_real_full_disk(tmp_path, tmpfs, monkeypatch):
    """A real full tmpfs, and a command line long enough that who the run
    is fills most of one block and the reason it stopped takes a second
    one: the claim reserved it."""
    from msprobe_lint.live_writers import BLOCK, claim, read_writers

    monkeypatch.setattr(sys, "argv", ["train.py", "--option-"])
    (tmp_path / "measure").mkdir()
    measure = claim(str(tmp_path / "measure"), "rank")
    assert measure is not None
    base = len((tmp_path / "measure" / ".probe-writer-rank.lock").read_bytes().rstrip())
    measure.release()
    monkeypatch.setattr(sys, "argv", ["train.py", "--option-" + "x" * (BLOCK - 60 - base)])
    disk = tmpfs("64k")
    held = claim(str(disk), "rank")
    assert held is not None
    with pytest.raises(OSError) as full:
        with open(disk / "filler", "wb") as filler:
            for _ in range(1000):
                filler.write(b"\0" * 4096)
                filler.flush()
    assert full.value.errno == errno.ENOSPC
    held.turned_off(REASON, 3)
    [writer] = read_writers(str(disk))
    assert writer.pid == os.getpid() and "--option-" in writer.command and writer.turned_off == REASON
    held.release()


# -- MindSpore: a small training run with and without the tool -------------------------
def _mindspore():
    return pytest.importorskip("mindspore")


def make_debugger(folder: Path, level: str = "L1", dump: Path | None = None):
    from probe_runtime import PrecisionDebugger

    return PrecisionDebugger(config_path=str(write_runtime_config(folder, level=level, dump=dump)))


def train(debugger=None, level: str = "L1", between=None, steps: int = 3):
    """Losses and gradients of a float16 MLP whose steps 1 and later
    overflow (runtime_support.train_mlp)."""
    _mindspore()
    return train_mlp(debugger, level=level, between=between, steps=steps)


@pytest.fixture(scope="module")
def plain():
    return train(None)


assert_same = assert_same_training


def recorded(dump: Path) -> dict[int, list[str]]:
    """step -> names in overflow.json, after checking each folder is intact."""
    out = {}
    for folder in sorted(dump.glob("step*/rank")):
        if not (folder / "overflow.json").exists():  # the disk failed at the step's first record
            continue
        names = [r["name"] for r in read_json(str(folder / "overflow.json"))]
        assert_intact(folder, names)
        out[int(folder.parent.name[4:])] = names
    return out


@pytest.fixture
def work(tmp_path, monkeypatch):
    _mindspore()
    isolate(monkeypatch, tmp_path)
    return tmp_path


# -- hostile paths while training ------------------------------------------------------------
@pytest.mark.mindspore
def test_disk_full_while_training_real_tmpfs(work, tmpfs, plain, caplog):
    disk = tmpfs("64k")
    debugger = make_debugger(work, dump=disk / "dump")
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger)
    assert_same(plain, probed)
    messages = failure_messages(caplog)
    assert len(messages) == 1 and "No space left" in messages[0], messages
    assert debugger.checker.disabled and sum(map(len, recorded(disk / "dump").values())) >= 1


@pytest.mark.mindspore
def test_disk_full_while_training_simulated(work, plain, caplog, monkeypatch):
    real = writer_module.atomic_write
    calls = []

    def filling(name, payload, **kw):
        calls.append(name)
        if len(calls) > 12:
            raise OSError(errno.ENOSPC, "No space left on device (simulated)")
        return real(name, payload, **kw)

    monkeypatch.setattr(writer_module, "atomic_write", filling)
    debugger = make_debugger(work)
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger)
    assert_same(plain, probed)
    messages = failure_messages(caplog)
    assert len(messages) == 1 and "No space left" in messages[0], messages
    assert recorded(work / "dump")
    # the reason is kept in the dump_path marker, for probe report and probe run (a tester's finding)
    from msprobe_lint.live_writers import read_writers

    [writer] = read_writers(str(work / "dump"))
    assert writer.turned_off == f"cannot write the dump (OSError: [Errno {errno.ENOSPC}] No space left on device " \
                               "(simulated))", writer
    assert writer.turned_off_step is not None and writer.turned_off_step >= max(recorded(work / "dump"))


@pytest.mark.mindspore
def test_read_only_folder_while_training(work, tmpfs, plain, caplog):
    disk = tmpfs("4m")
    debugger = make_debugger(work, dump=disk / "dump")

    def between(step):
        if step == 1:
            remount_read_only(disk)

    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger, between=between)
    assert_same(plain, probed)
    messages = failure_messages(caplog)
    assert len(messages) == 1 and "Read-only" in messages[0], messages
    found = recorded(disk / "dump")
    assert list(found) == [1] and found[1]


@pytest.mark.mindspore
def test_dump_path_deleted_while_training(work, plain, caplog):
    debugger = make_debugger(work)

    def between(step):
        if step == 1:
            shutil.rmtree(work / "dump")

    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger, between=between)
    assert_same(plain, probed)
    messages = failure_messages(caplog)
    assert len(messages) == 1 and "deleted" in messages[0], messages
    assert list(recorded(work / "dump")) == [2]


@pytest.mark.mindspore
def test_dump_path_swapped_for_link_while_training(work, plain, caplog):
    debugger = make_debugger(work)
    evil = work / "evil"
    evil.mkdir()

    def between(step):
        if step == 1:
            os.rename(work / "dump", work / "dump.old")
            os.symlink(evil, work / "dump")

    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger, between=between)
    assert_same(plain, probed)
    messages = failure_messages(caplog)
    assert len(messages) == 1 and "soft link" in messages[0], messages
    assert list(evil.iterdir()) == [] and list(recorded(work / "dump.old")) == [1]


# -- faults inside the tool ----------------------------------------------------------------
def boom_messages(caplog, word: str = "boom") -> list[str]:
    return [m for m in failure_messages(caplog) if word in m]


def train_with_matmul_errors(debugger, caplog, error: Exception, once: bool) -> tuple:
    """Train with the wrapper of ``Primitive.MatMul`` raising ``error``
    (at its first call only, or at every one); (training, the calls that
    raised, the names recorded)."""
    real = debugger.checker.next_index
    faults = []

    def next_index(api):
        if api == "Primitive.MatMul" and not (once and faults):
            faults.append(api)
            raise error
        return real(api)

    debugger.checker.next_index = next_index
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger)
    names = [n for step in recorded(debugger.dump_path and Path(debugger.dump_path)).values() for n in step]
    return probed, faults, names


@pytest.mark.mindspore
def test_a_mindspore_runtime_error_in_a_wrapper_leaves_the_api_checked(work, plain, caplog):
    """With asynchronous execution an earlier operator's failure surfaces
    at the next read, which may be inside the tool: that one call goes
    unchecked, but the API is not turned off for the rest of the run (the
    detector would be blind over the user's own error)."""
    error = RuntimeError("The kernel Foo unregistered.\n- C++ Call Stack: (For framework developers)\n")
    probed, faults, names = train_with_matmul_errors(make_debugger(work), caplog, error, once=True)
    assert_same(plain, probed)
    assert faults == ["Primitive.MatMul"]
    messages = [m for m in failure_messages(caplog) if "Foo unregistered" in m]
    assert len(messages) == 1 and "that call is not checked" in messages[0]
    assert any("MatMul" in n for n in names)                  # still checked afterwards


@pytest.mark.mindspore
def test_fault_in_an_interception_wrapper_turns_that_api_off(work, plain, caplog):
    probed, faults, names = train_with_matmul_errors(make_debugger(work), caplog, RuntimeError("boom in the wrapper"),
                                                     once=False)
    assert_same(plain, probed)
    messages = boom_messages(caplog)
    assert len(messages) == 1 and "Primitive.MatMul" in messages[0] and "RuntimeError" in messages[0]
    assert len(faults) == 1                                   # turned off after the first fault
    assert names and not any("MatMul" in n for n in names)   # the rest is still checked


@pytest.mark.mindspore
@pytest.mark.parametrize("part", ["forward", "backward", "parameters"])
def test_fault_in_a_cell_hook_turns_that_part_off(work, plain, caplog, monkeypatch, part):
    import probe_runtime.l0.cell_hooks as cells

    debugger = make_debugger(work, level="L0")

    def boom(*args, **kwargs):
        raise RuntimeError(f"boom in the {part} hook")

    if part == "forward":
        monkeypatch.setattr(cells, "capture_frames", boom)
    elif part == "backward":
        debugger.checker.on_grad_inputs = boom
    else:
        debugger.checker.on_param_grad = boom
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger, level="L0")
    assert_same(plain, probed)
    # said once per part the fault turned off (a fault in capture_frames breaks the model's own hook too)
    messages = boom_messages(caplog)
    assert part in debugger.cells.broken and len(messages) == len(set(messages)) >= 1
    assert all(f"L0 {part} hooks" in m or "L0 top hooks" in m for m in messages), messages


@pytest.mark.mindspore
def test_fault_in_the_statistics_code_keeps_detecting(work, plain, caplog, monkeypatch):
    import probe_runtime.check.records as records

    def boom(host):
        raise RuntimeError("boom in statistics")

    monkeypatch.setattr(records, "statistics", boom)
    debugger = make_debugger(work)
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = train(debugger)
    assert_same(plain, probed)
    assert len(boom_messages(caplog)) == 1
    found = recorded(work / "dump")
    assert sorted(found) == [1, 2] and len(found[2]) > 2
    entry = read_json(str(work / "dump" / "step2" / "rank" / "dump.json"))["data"][found[2][0]]
    assert entry["output"][0]["Max"] is None and entry["output"][0]["data_name"]


@pytest.mark.mindspore
def test_tensor_type_never_seen_is_turned_off_not_the_tool(work, caplog):
    ms = _mindspore()
    from mindspore import Tensor, ops

    class OddTensor(Tensor):
        @property
        def dtype(self):
            raise RuntimeError("boom: no dtype here")

    def run(debugger):
        ms.set_context(mode=ms.PYNATIVE_MODE)
        odd = OddTensor(np.array([1.0, 2.0], np.float32))
        outs = []
        if debugger:
            debugger.start()
        for _ in range(60):
            outs.append(ops.exp(odd).asnumpy())
        outs.append(ops.exp(Tensor(np.array([100.0], np.float32))).asnumpy())
        if debugger:
            debugger.stop()
        return outs

    plain_outs = run(None)
    debugger = make_debugger(work)
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        probed = run(debugger)
    assert all(np.array_equal(a, b) for a, b in zip(plain_outs, probed)) and len(probed) == 61
    messages = boom_messages(caplog)
    assert len(messages) == 1 and "OddTensor" in messages[0], messages
    assert recorded(work / "dump")[0] == ["Functional.exp.60.forward"]
    assert not debugger.checker.disabled


# -- interrupts ----------------------------------------------------------------------------
INTERRUPTED = r"""
import atexit, json, os, signal, sys, time
import numpy as np, mindspore as ms
from mindspore import ops, Tensor
import probe_runtime.dump.writer as writer
from probe_runtime import PrecisionDebugger

mode, report = sys.argv[2], sys.argv[3]
ORIGINAL_EXP = ops.exp
ORIGINAL_MUL = Tensor.__dict__.get("__mul__")

def restored():
    return ops.exp is ORIGINAL_EXP and Tensor.__dict__.get("__mul__") is ORIGINAL_MUL

def say(how):
    with open(report, "w") as f:
        json.dump({"how": how, "restored": restored()}, f)

if mode == "term-user":
    def user_handler(signum, frame):
        say("user handler")
        sys.exit(3)
    signal.signal(signal.SIGTERM, user_handler)
atexit.register(lambda: os.path.exists(report) or say("atexit"))  # runs after the debugger's atexit
ms.set_context(mode=ms.PYNATIVE_MODE)
debugger = PrecisionDebugger(config_path=sys.argv[1])
big = Tensor(np.array([100.0, 1.0], np.float32))
if mode.endswith("-in-write"):                  # the signal lands inside the 2nd record's write
    real_write, calls = writer.StepWriter.write, []
    def write(self, record, **kw):
        calls.append(record.name)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT if mode.startswith("int") else signal.SIGTERM)
        return real_write(self, record, **kw)
    writer.StepWriter.write = write
debugger.start()
ops.exp(big)                   # 1st call of the window: on disk at once
ops.exp(big)                   # 2nd and 3rd: resolved together after the 3rd
ops.exp(big)
ops.exp(big * 1.0)             # 5th and 6th calls: pending (next batch after the 7th)
with open(report + ".ready", "w"):
    pass
while True:
    time.sleep(0.01)
"""


@pytest.mark.mindspore
@pytest.mark.parametrize("mode", ["term", "term-user", "int", "int-in-write", "term-in-write"])
def test_interrupt_leaves_complete_files_and_restores_apis(tmp_path, mode):
    _mindspore()
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    config = {"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "rank": [], "step": [],
              "level": "L1", "overflow_check": {"overflow_nums": -1}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    os.chmod(tmp_path / "config.json", 0o640)
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM", "PROBE_CONFIG")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "config.json"), mode, str(report)],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready = Path(str(report) + ".ready")
    deadline = time.monotonic() + 120
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if proc.poll() is None and not mode.endswith("-in-write"):
        proc.send_signal(signal.SIGINT if mode == "int" else signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    # MindSpore may turn SIGINT into SIGTERM (its own C handler, once its runtime is up): then the
    # debugger's SIGTERM handler is what saves the records; otherwise KeyboardInterrupt and atexit do
    expected_status = {"term": {-signal.SIGTERM}, "term-user": {3}, "int": {-signal.SIGINT, -signal.SIGTERM},
                       "int-in-write": {-signal.SIGINT, -signal.SIGTERM}, "term-in-write": {-signal.SIGTERM}}[mode]
    assert proc.returncode in expected_status, stderr[-3000:]
    folder = tmp_path / "dump" / "step0" / "rank"
    names = [r["name"] for r in read_json(str(folder / "overflow.json"))]
    assert_intact(folder, names)
    if mode.endswith("-in-write"):   # the interrupted batch was finished (or put back and flushed at exit)
        assert names == ["Functional.exp.0.forward", "Functional.exp.1.forward", "Functional.exp.2.forward"]
    else:                            # the pending check was resolved before the process ended
        assert names[-1] == "Functional.exp.3.forward" and len(names) == 4
    if mode == "term-user" or proc.returncode == -signal.SIGINT:  # SIGTERM's default action runs nothing after us
        assert json.loads(report.read_text())["restored"] is True


def test_shown_path_drops_dot_dot_only_when_it_names_the_same_file(tmp_path):
    from probe_runtime.hooks.frames import shown_path, user_where

    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "train.py").write_text("")
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere" / "deep")
    (tmp_path / "elsewhere" / "train.py").write_text("")  # what link/../train.py really is
    assert shown_path(f"{tmp_path}/w/gone/../train.py") == f"{tmp_path}/w/gone/../train.py"  # no such folder
    (tmp_path / "w" / "run").mkdir()
    assert shown_path(f"{tmp_path}/w/run/../train.py") == f"{tmp_path}/w/train.py"
    assert shown_path(f"{tmp_path}/link/../train.py") == f"{tmp_path}/link/../train.py"  # normpath would lie
    assert shown_path("<stdin>") == "<stdin>"
    assert user_where(((f"{tmp_path}/w/./run/../train.py", 3, "f"),), ()) == f"{tmp_path}/w/train.py:3"


BUILD_FROM_ENVIRONMENT = "from probe_runtime import PrecisionDebugger; PrecisionDebugger()"


@pytest.mark.mindspore
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_config_that_is_a_pipe_or_a_device_is_refused_at_once(tmp_path, kind):
    """PROBE_CONFIG naming a named pipe blocked the debugger (the check for
    a debugger already built from the same config opened it before the
    lint); a soft link to /dev/zero read until memory ran out. Both are
    PL006, said and refused, as a config that cannot be read."""
    import resource

    _mindspore()
    config = tmp_path / "c.json"
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("needs named pipes (FIFOs)")
        os.mkfifo(config)
        what = "a named pipe (FIFO)"
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("needs /dev/zero")
        config.symlink_to("/dev/zero")
        what = "a character device"
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM")}
    env.update(PYTHONPATH=str(ROOT), PROBE_CONFIG=str(config))

    def cap() -> None:  # an unbounded read of /dev/zero ends in a MemoryError, not the machine's memory
        resource.setrlimit(resource.RLIMIT_AS, (6_000_000_000, 6_000_000_000))

    proc = subprocess.run([sys.executable, "-c", BUILD_FROM_ENVIRONMENT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180, preexec_fn=cap)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"{config}:1:1: PL006 error: config is not a regular file: it is {what}" in proc.stderr, proc.stderr


@pytest.mark.mindspore
def test_a_config_replaced_after_the_lint_is_refused_not_a_traceback(tmp_path):
    """The gate reads the config's values again once the lint let it
    through; replaced meanwhile by a named pipe or by JSON that is not an
    object, that read was a hang or a traceback: now the lint's errors."""
    _mindspore()
    from probe_runtime.errors import ConfigLintError
    from probe_runtime.gate import file_values

    listed = tmp_path / "listed.json"
    listed.write_text("[1]")
    with pytest.raises(ConfigLintError, match="PL003 error"):
        file_values(str(listed), {}, (None, "test"))
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.json")
        with pytest.raises(ConfigLintError, match=r"PL006 error: config is not a regular file: it is a named pipe"):
            file_values(str(tmp_path / "pipe.json"), {}, (None, "test"))
    assert file_values(None, {}, (None, "test")) == {}
