"""Every file of the user's that `probe lint` and `probe run` read (the
config, the training script, the [tool.probe-lint] settings, the script
of CMD) is read as a config is (project/files.py): a named pipe is never
opened (it would block until a writer comes), a device never read (a soft
link to /dev/zero never ends), and a file over 10 MiB never read; each is a
clear message and a non-zero exit, never a hang or a traceback."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import clean_environ, probe_command, run_probe

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (FIFOs)")
needs_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
#: time enough for a probe command; one blocked on a named pipe never ends
TIMEOUT = 60
FIFO = "is not a regular file: it is a named pipe (FIFO)"
DEVICE = "is not a regular file: it is a character device"


def good_config(folder: Path) -> Path:
    path = folder / "good.json"
    path.write_text(json.dumps({"task": "overflow_check", "dump_path": str(folder / "dump"), "level": "L1",
                                "overflow_check": {"overflow_nums": 1}}, indent=4))
    return path


def run_bounded(*args: str, cwd: Path):
    """`probe ARGS...` with its address space capped at 3 GB, so an
    unbounded read of /dev/zero ends in a MemoryError rather than taking
    the machine's memory."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))

    return subprocess.run(probe_command() + list(args), capture_output=True, text=True, cwd=cwd,
                          env=clean_environ(), timeout=TIMEOUT, preexec_fn=cap)


def refused(proc, message: str) -> None:
    printed = proc.stdout + proc.stderr
    assert proc.returncode == 2 and message in printed and "Traceback" not in printed, printed


# ------------------------------------------------------------- --script

@needs_fifo
def test_a_named_pipe_as_the_script_is_refused_not_waited_on(tmp_path):
    good_config(tmp_path)
    os.mkfifo(tmp_path / "sf.py")
    proc = run_probe("lint", "--isolated", "good.json", "--script", "sf.py", cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, f"probe: error: --script sf.py: {FIFO}")


@needs_zero
def test_a_link_to_dev_zero_as_the_script_is_refused_unread(tmp_path):
    good_config(tmp_path)
    (tmp_path / "sz.py").symlink_to("/dev/zero")
    refused(run_bounded("lint", "--isolated", "good.json", "--script", "sz.py", cwd=tmp_path),
            f"probe: error: --script sz.py: {DEVICE}")


def test_a_script_over_10_mib_is_refused_unread(tmp_path):
    good_config(tmp_path)
    with open(tmp_path / "big.py", "wb") as handle:
        handle.truncate(10 * 1024 * 1024 + 1)
    proc = run_probe("lint", "--isolated", "good.json", "--script", "big.py", cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, "probe: error: --script big.py: is 10485761 bytes, over the 10 MiB limit for a training script")


# ------------------------------------------------------ [tool.probe-lint]

@needs_fifo
@pytest.mark.parametrize("command", [["lint", "good.json"], ["run", "good.json", "--", "true"]])
def test_a_named_pipe_as_the_settings_script_is_refused_not_waited_on(tmp_path, command):
    good_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nscript = "train.py"\n')
    os.mkfifo(tmp_path / "train.py")
    proc = run_probe(*command, cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, f"[tool.probe-lint] script: {tmp_path / 'train.py'}: {FIFO}")


@needs_fifo
def test_a_named_pipe_as_the_config_file_says_what_it_is(tmp_path):
    """It exists: "no such file" (what it said) sent the user looking for a typo."""
    good_config(tmp_path)
    os.mkfifo(tmp_path / "settings.toml")
    proc = run_probe("lint", "good.json", "--config-file", "settings.toml", cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, f"probe: error: --config-file settings.toml: {FIFO}")


@needs_zero
def test_a_link_to_dev_zero_as_the_config_file_is_refused_unread(tmp_path):
    good_config(tmp_path)
    (tmp_path / "settings.toml").symlink_to("/dev/zero")
    refused(run_bounded("lint", "good.json", "--config-file", "settings.toml", cwd=tmp_path),
            f"probe: error: --config-file settings.toml: {DEVICE}")


def test_a_settings_file_over_10_mib_is_refused_unread(tmp_path):
    good_config(tmp_path)
    with open(tmp_path / "settings.toml", "wb") as handle:
        handle.write(b"[tool.probe-lint]\n")
        handle.truncate(10 * 1024 * 1024 + 1)
    proc = run_probe("lint", "good.json", "--config-file", "settings.toml", cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, "probe: error: settings.toml: is 10485761 bytes, over the 10 MiB limit for a settings file")


# ------------------------------------------------------------- probe run

@needs_fifo
def test_probe_run_on_a_named_pipe_is_pl006_not_a_hang(tmp_path):
    """The check for another job writing the dump_path read the config
    before the lint did, and blocked on the pipe."""
    os.mkfifo(tmp_path / "c.json")
    proc = run_probe("run", "c.json", "--", "true", cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, f"c.json:1:1: PL006 error: config {FIFO}")


@needs_zero
def test_probe_run_on_a_link_to_dev_zero_is_pl006_not_a_memory_error(tmp_path):
    (tmp_path / "z.json").symlink_to("/dev/zero")
    refused(run_bounded("run", "z.json", "--", "true", cwd=tmp_path), f"z.json:1:1: PL006 error: config {DEVICE}")


@needs_fifo
def test_probe_run_says_what_the_script_of_cmd_is(tmp_path):
    """It exists: "no such file" (what it said) was wrong."""
    good_config(tmp_path)
    os.mkfifo(tmp_path / "sf.py")
    proc = run_probe("run", "good.json", "--", sys.executable, "sf.py", cwd=tmp_path, timeout=TIMEOUT)
    refused(proc, f"probe: error: sf.py: {FIFO}; ")
    missing = run_probe("run", "good.json", "--", sys.executable, "gone.py", cwd=tmp_path, timeout=TIMEOUT)
    refused(missing, "probe: error: gone.py: no such file; ")
