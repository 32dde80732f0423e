"""project/files.py: the one reader of a user's file (a config, a training
script, the [tool.probe-lint] settings). A named pipe or a device is
refused unopened, saying what it is; nothing is read past 10 MiB."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from msprobe_lint.project.files import MAX_BYTES, not_regular, read_bytes

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (FIFOs)")


@needs_fifo
def test_a_named_pipe_is_refused_unopened_saying_what_it_is(tmp_path):
    fifo = tmp_path / "c.json"
    os.mkfifo(fifo)
    assert read_bytes(str(fifo)) == (None, "is not a regular file: it is a named pipe (FIFO)")
    assert not_regular(str(fifo)) == "is not a regular file: it is a named pipe (FIFO)"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_link_to_a_device_is_refused_unread(tmp_path):
    link = tmp_path / "z.json"
    link.symlink_to("/dev/zero")
    assert read_bytes(str(link)) == (None, "is not a regular file: it is a character device")


def test_the_limit_names_what_was_read(tmp_path):
    big = tmp_path / "train.py"
    with open(big, "wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    raw, reason = read_bytes(str(big), "a training script")
    assert raw is None and reason == f"is {MAX_BYTES + 1} bytes, over the 10 MiB limit for a training script"
    assert not_regular(str(big)) is None  # a regular file: only read_bytes minds its size
    assert not_regular(str(tmp_path / "missing")) == "file not found"
    assert not_regular(str(tmp_path)) == "is a directory, not a file"


SWAPPED = """
import os, sys
from msprobe_lint.project import files
real = os.stat
regular = real(sys.argv[2])
# the stat sees a regular file; a named pipe is what gets opened (swapped in meanwhile)
os.stat = lambda path, *a, **k: regular if path == sys.argv[1] else real(path, *a, **k)
print(files.read_bytes(sys.argv[1]))
"""


@needs_fifo
def test_a_named_pipe_swapped_in_after_the_check_does_not_block_the_read(tmp_path):
    fifo, plain = tmp_path / "c.json", tmp_path / "plain.json"
    os.mkfifo(fifo)
    plain.write_text("{}")
    proc = subprocess.run([sys.executable, "-c", SWAPPED, str(fifo), str(plain)], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(None, 'is not a regular file: it is a named pipe (FIFO)')"
