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

from probe_runtime import writer as writer_module
from probe_runtime.writer import Record, StepWriter, WriterError, read_json

ROOT = Path(__file__).resolve().parents[1]


def record(name: str, size: int = 4) -> Record:
    return Record(name=name, origin=True, where="train.py:3",
                  entry={"input_args": [], "input_kwargs": {}, "output": [{"Max": float("inf")}]},
                  stack=["File train.py, line 3, in <module>, \n y = ops.exp(x)"],
                  arrays={f"{name}.output.0.npy": np.full(size, np.inf, np.float32)})


def assert_intact(folder: Path, expected: list[str]) -> None:
    """overflow.json lists exactly ``expected``, every one in dump.json."""
    names = [r["name"] for r in read_json(str(folder / "overflow.json"))]
    assert names == expected
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
