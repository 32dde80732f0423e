"""Writes overflow records in msprobe's layout, atomically and crash-safe.

Layout (SPEC 2.5, 4)::

    <dump_path>/step<N>/<rank dir>/dump.json        statistics of overflowing entries
                                   stack.json       call stacks of those entries
                                   construct.json   Cell parent map ({} at L1)
                                   overflow.json    [{name, origin, where, kind, step, rank}], detection order
                                   dump_tensor_data/<entry>.<input|output>.<n>.npy

``<rank dir>`` is ``rank`` for a single process, ``rank<R>`` otherwise.

Every file is written to a temporary file in the same folder (created with
``O_EXCL | O_NOFOLLOW``, mode 0o640) and then renamed over the target with
``os.replace``, so a reader, a crash or ``kill -9`` sees either the previous
complete file or the new complete file, never half of one. A record's
``.npy`` files come first, then dump.json and stack.json, and overflow.json
last, so every name in overflow.json is already in dump.json. Folders are
created 0o750. Nothing is written through a soft link: a folder on the way
that is a link makes the writer refuse (``WriterError``). No fsync: a killed
process loses nothing (the kernel has the data), a power cut may.

inf and nan in dump.json are written as Python's json module writes them by
default, the bare tokens ``Infinity``, ``-Infinity`` and ``NaN`` (what
msprobe writes and what its readers, and Python's ``json.load``, accept);
:func:`read_json` reads them back as floats.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

FILE_MODE = 0o640
DIR_MODE = 0o750


class WriterError(OSError):
    """A dump folder or file cannot be written safely (soft link, not a
    folder, permission)."""


@dataclass
class Record:
    """One overflowing entry, ready to write.

    Attributes:
        name: the dump.json key, e.g. ``"Functional.exp.0.forward"``.
        origin: True when the inputs were finite and an output was not.
        where: the user's ``file:line`` that made the call, or None.
        entry: the dump.json value (``input_args``/``input_kwargs``/``output``
            for forward entries, ``input``/``output`` for backward ones).
        stack: stack lines for stack.json (forward entries), or None.
        arrays: npy file name -> host array, for ``dump_tensor_data``.
        parent: the enclosing Cell's entry for construct.json (L0), or None.
        construct: further construct.json links (L0: the entry's enclosing
            Cells up to the top one, so the recorded entry can be placed).
    """

    name: str
    origin: bool
    where: Optional[str]
    entry: dict
    stack: Optional[list[str]] = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    parent: Optional[str] = None
    construct: dict[str, Optional[str]] = field(default_factory=dict)


def read_json(path: str) -> Any:
    """Read one of our JSON files; accepts the bare ``Infinity``, ``-Infinity``
    and ``NaN`` tokens dump.json uses for non-finite statistics."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _check_not_link(path: str) -> None:
    if os.path.islink(path):
        raise WriterError(f"{path} is a soft link; probe_runtime never writes through one")


def ensure_dir(path: str) -> None:
    """Create ``path`` (and missing parents) with mode 0o750.

    Raises:
        WriterError: when ``path`` or an existing parent is a soft link or
            not a folder.
    """
    path = os.path.abspath(path)
    parts: list[str] = []
    head = path
    while head and not os.path.exists(head) and not os.path.islink(head):
        parts.append(head)
        head = os.path.dirname(head)
    # the nearest existing folder and the path itself must be real folders
    probe = head
    while probe and probe != os.path.dirname(probe):
        _check_not_link(probe)
        probe = os.path.dirname(probe)
    if head and not os.path.isdir(head):
        raise WriterError(f"{head} exists and is not a folder")
    for part in reversed(parts):
        try:
            os.mkdir(part, DIR_MODE)
        except FileExistsError:
            pass
        _check_not_link(part)
        if not os.path.isdir(part):
            raise WriterError(f"{part} exists and is not a folder")
        os.chmod(part, DIR_MODE)


def atomic_write(path: str, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a temporary file and a rename.

    The temporary file is created next to ``path`` with ``O_EXCL`` and
    ``O_NOFOLLOW`` and mode 0o640; the rename replaces a soft link at
    ``path`` itself rather than writing through it.

    Raises:
        OSError: when the folder cannot be written.
    """
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.unlink(tmp)  # a leftover from a killed run of the same pid
    except FileNotFoundError:
        pass
    fd = os.open(tmp, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)


def _json_bytes(data: Any) -> bytes:
    # allow_nan (the default) writes inf/nan as Infinity/-Infinity/NaN, as msprobe does
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=True).encode("utf-8")


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


class StepWriter:
    """Writes the records of one step and rank into one folder.

    Args:
        dump_path: the config's (absolute) dump_path.
        step: the step number (folder ``step<N>``).
        rank_dir: ``rank`` or ``rank<R>``.
        task, level: copied into dump.json's header.

    Nothing touches the disk until the first record.
    """

    def __init__(self, dump_path: str, step: int, rank_dir: str, *, task: str = "overflow_check",
                 level: str = "L1") -> None:
        self.folder = os.path.join(dump_path, f"step{step}", rank_dir)
        self.data_dir = os.path.join(self.folder, "dump_tensor_data")
        self.task = task
        self.level = level
        self.data: dict[str, dict] = {}
        self.stacks: dict[str, list] = {}
        self.construct: dict[str, Optional[str]] = {}
        self.index: list[dict] = []
        self.extra: dict[str, Any] = {}

    def _header(self) -> dict:
        return {"task": self.task, "level": self.level, "framework": "mindspore",
                "dump_data_dir": self.data_dir, "data": self.data}

    def write(self, record: Record, **index_extra: Any) -> None:
        """Put one record on disk (npy files, dump.json, stack.json,
        construct.json, then overflow.json) before returning.

        Raises:
            WriterError, OSError: when the folder cannot be written.
        """
        ensure_dir(self.folder)
        if record.arrays:
            ensure_dir(self.data_dir)
            for file_name, array in record.arrays.items():
                atomic_write(os.path.join(self.data_dir, file_name), _npy_bytes(array))
        self.data[record.name] = record.entry
        atomic_write(os.path.join(self.folder, "dump.json"), _json_bytes(self._header()))
        if record.stack is not None:
            self.stacks[str(len(self.stacks))] = [[record.name], record.stack]
        atomic_write(os.path.join(self.folder, "stack.json"), _json_bytes(self.stacks))
        for name, parent in record.construct.items():
            self.construct.setdefault(name, parent)
        if record.parent is not None or self.level in ("L0", "mix"):
            self.construct[record.name] = record.parent
        atomic_write(os.path.join(self.folder, "construct.json"), _json_bytes(self.construct))
        item = {"name": record.name, "origin": bool(record.origin), "where": record.where}
        item.update(index_extra)
        self.index.append(item)
        atomic_write(os.path.join(self.folder, "overflow.json"), _json_bytes(self.index))


def folder_mode_ok(path: str) -> bool:
    """True when ``path`` is a real folder with mode 0o750 (for tests)."""
    st = os.lstat(path)
    return stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == DIR_MODE
