"""Writes overflow records in msprobe's layout, atomically and crash-safe.

:class:`StepWriter` writes the records of one step and rank under
``<dump_path>/step<N>/<rank dir>/`` (``rank``, or ``rank<R>`` when
distributed): ``dump.json``, ``stack.json``, ``construct.json``,
``overflow.json`` and ``dump_tensor_data/*.npy``, as msprobe lays them out
(SPEC 2.5, 4; the layout: ``docs/runtime-design.md``; file and key names come
from :mod:`probe_format`, which ``probe report`` reads
with). The contract:

* every file goes to a temporary file beside it and is renamed over the
  target, so a reader, a crash or ``kill -9`` sees the previous complete
  file or the new one, never half of one;
* a record's ``.npy`` files come first and ``overflow.json`` last, so every
  name in ``overflow.json`` is already in ``dump.json``;
* nothing is written through a soft link (:func:`open_dir` walks the path
  without following one; a link on the way raises :class:`WriterError`);
  folders are created 0o750, files 0o640;
* inf and nan are written as the bare tokens ``Infinity``, ``-Infinity``
  and ``NaN``, as msprobe writes them; :func:`read_json` reads them back.

Example::

    writer = StepWriter("/abs/dump", 0, "rank", task="overflow_check", level="L1")
    writer.write(Record(name="Functional.exp.0.forward", origin=True, where="train.py:3",
                        entry={"input_args": [], "input_kwargs": {}, "output": []}),
                 kind="forward", step=0, rank=None)
"""
from __future__ import annotations

import errno
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from probe_format.layout import (CONSTRUCT_FILE, DUMP_FILE, NAME, ORIGIN, OVERFLOW_FILE, STACK_FILE, TENSOR_DATA_DIR,
                                 WHERE, step_dir)

FILE_MODE = 0o640
DIR_MODE = 0o750
LOGGER = logging.getLogger("probe_runtime")
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: dump folders this process has written records into (a later write that has
#: to create them again means they were deleted while training ran).
_WRITTEN_ROOTS: set = set()
_RECREATED_LOGGED: set = set()


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
        parent: the enclosing Cell's entry for construct.json (L0), or None;
            not written for a ``parameters_grad`` record (msprobe lists none).
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


def open_dir(path: str, *, dir_fd: Optional[int] = None, created: Optional[list] = None) -> int:
    """Open folder ``path`` (created 0o750 with missing parents) without
    following a soft link anywhere on the way; returns its descriptor.

    The path is walked one component at a time from ``/`` (or from
    ``dir_fd`` for a relative ``path``) with ``O_DIRECTORY | O_NOFOLLOW``, so
    the descriptor names the folder that was checked even if a component is
    swapped for a link afterwards. Folders created here are appended to
    ``created``.

    Raises:
        WriterError: a component is a soft link or not a folder.
        OSError: a folder cannot be created or opened (permission, read-only
            file system, disk full ...).
    """
    if dir_fd is None:
        path = os.path.abspath(path)
        fd = os.open("/", _DIR_FLAGS)
        where = "/"
    else:
        fd = os.dup(dir_fd)
        where = ""
    try:
        for name in [part for part in path.split(os.sep) if part and part != "."]:
            where = os.path.join(where, name) if where else name
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(name, DIR_MODE, dir_fd=fd)
                    made = True
                except FileExistsError:
                    made = False
                child = _open_child(name, fd, where)
                if made:
                    os.fchmod(child, DIR_MODE)
                    if created is not None:
                        created.append(where)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refusal(name, fd, where) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(name: str, fd: int, where: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refusal(name, fd, where) from None
        raise


def _refusal(name: str, fd: int, where: str) -> WriterError:
    try:
        is_link = stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        is_link = False
    if is_link:
        return WriterError(f"{where} is a soft link; probe_runtime never writes through one")
    return WriterError(f"{where} exists and is not a folder")


def ensure_dir(path: str) -> None:
    """Create ``path`` (and missing parents) with mode 0o750.

    Raises:
        WriterError: when ``path`` or an existing parent is a soft link or
            not a folder.
    """
    os.close(open_dir(path))


def atomic_write(path: str, payload: bytes, *, dir_fd: Optional[int] = None) -> None:
    """Write ``payload`` to ``path`` through a temporary file and a rename.

    The temporary file is created next to ``path`` with ``O_EXCL`` and
    ``O_NOFOLLOW`` and mode 0o640; the rename replaces a soft link at
    ``path`` itself rather than writing through it. With ``dir_fd`` (a folder
    from :func:`open_dir`) ``path`` is a file name in that folder; without
    it the folder is opened with :func:`open_dir` first. A failed write
    removes its temporary file and leaves the previous ``path`` as it was.

    Raises:
        OSError: when the folder cannot be written.
    """
    if dir_fd is None:
        folder = open_dir(os.path.dirname(os.path.abspath(path)))
        try:
            atomic_write(os.path.basename(path), payload, dir_fd=folder)
        finally:
            os.close(folder)
        return
    name = path
    tmp = f".{name}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        os.unlink(tmp, dir_fd=dir_fd)  # a leftover from a killed run of the same pid
    except FileNotFoundError:
        pass
    fd = os.open(tmp, flags, FILE_MODE, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _json_bytes(data: Any) -> bytes:
    # allow_nan (the default) writes inf/nan as Infinity/-Infinity/NaN, as msprobe does
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=True).encode("utf-8")


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    # np.ascontiguousarray would make a 0-d tensor (a loss) 1-d: keep its shape (), as dump.json says
    np.save(buffer, np.require(array, requirements="C"), allow_pickle=False)
    return buffer.getvalue()


class StepWriter:
    """Writes the records of one step and rank into one folder.

    Args:
        dump_path: the config's (absolute) dump_path.
        step: the step number (folder ``step<N>``).
        rank_dir: ``rank`` or ``rank<R>``.
        task, level: copied into dump.json's header.
        framework: dump.json's ``framework``, as msprobe writes it:
            ``"mindspore"``, or ``"mindtorch"`` when PyTorch code runs on
            MindSpore (MSAdapter).

    Nothing touches the disk until the first record.
    """

    def __init__(self, dump_path: str, step: int, rank_dir: str, *, task: str = "overflow_check",
                 level: str = "L1", framework: str = "mindspore") -> None:
        self.dump_path = os.path.abspath(dump_path)
        self.framework = framework
        self.folder = os.path.join(self.dump_path, step_dir(step), rank_dir)
        self.data_dir = os.path.join(self.folder, TENSOR_DATA_DIR)
        self.task = task
        self.level = level
        self.data: dict[str, dict] = {}
        self.stacks: dict[str, list] = {}
        self.construct: dict[str, Optional[str]] = {}
        self.index: list[dict] = []
        self.extra: dict[str, Any] = {}

    def _header(self) -> dict:
        return {"task": self.task, "level": self.level, "framework": self.framework,
                "dump_data_dir": self.data_dir, "data": self.data}

    def write(self, record: Record, **index_extra: Any) -> None:
        """Put one record on disk (npy files, dump.json, stack.json,
        construct.json, then overflow.json) before returning.

        Raises:
            WriterError, OSError: when the folder cannot be written.
        """
        created: list = []
        folder = open_dir(self.folder, created=created)
        saved = (dict(self.data), dict(self.stacks), dict(self.construct), len(self.index))
        try:
            self._recreated(created)
            if record.arrays:
                data_dir = open_dir(os.path.basename(self.data_dir), dir_fd=folder)
                try:
                    for file_name, array in record.arrays.items():
                        atomic_write(file_name, _npy_bytes(array), dir_fd=data_dir)
                finally:
                    os.close(data_dir)
            self.data[record.name] = record.entry
            atomic_write(DUMP_FILE, _json_bytes(self._header()), dir_fd=folder)
            if record.stack is not None:
                self.stacks[str(len(self.stacks))] = [[record.name], record.stack]
            atomic_write(STACK_FILE, _json_bytes(self.stacks), dir_fd=folder)
            for name, parent in record.construct.items():
                self.construct.setdefault(name, parent)
            if not record.name.endswith(".parameters_grad") and (record.parent is not None
                                                                or self.level in ("L0", "mix")):
                # msprobe lists no parameters_grad entry in construct.json (its
                # graph builder puts it under the Cell's latest backward entry)
                self.construct[record.name] = record.parent
            atomic_write(CONSTRUCT_FILE, _json_bytes(self.construct), dir_fd=folder)
            item = {NAME: record.name, ORIGIN: bool(record.origin), WHERE: record.where}
            item.update(index_extra)
            self.index.append(item)
            atomic_write(OVERFLOW_FILE, _json_bytes(self.index), dir_fd=folder)
        except BaseException:
            # not written: the next record's files do not mention this one
            self.data, self.stacks, self.construct = saved[0], saved[1], saved[2]
            del self.index[saved[3]:]
            raise
        finally:
            os.close(folder)
        _WRITTEN_ROOTS.add(self.dump_path)

    def note(self, item: dict) -> None:
        """Add an ``overflow.json`` item that has no dump.json entry (a
        sentinel finding: no call was recorded) and put it on disk before
        returning.

        Raises:
            WriterError, OSError: when the folder cannot be written.
        """
        created: list = []
        folder = open_dir(self.folder, created=created)
        try:
            self._recreated(created)
            self.index.append(item)
            try:
                atomic_write(OVERFLOW_FILE, _json_bytes(self.index), dir_fd=folder)
            except BaseException:
                self.index.pop()
                raise
        finally:
            os.close(folder)
        _WRITTEN_ROOTS.add(self.dump_path)

    def _recreated(self, created: list) -> None:
        """Say once when a dump folder this process wrote into had to be
        created again (deleted while training ran)."""
        root = self.dump_path
        if not created or root in _RECREATED_LOGGED:
            return
        if not self.index and not (root in created and root in _WRITTEN_ROOTS):
            return  # a new step's folder, or the first write: nothing was lost
        _RECREATED_LOGGED.add(root)
        LOGGER.warning("probe_runtime: the dump folder %s was deleted while training ran; created it again "
                       "(the .npy files of earlier records are gone; dump.json and overflow.json of this step "
                       "are rewritten with every record)", created[0])


def folder_mode_ok(path: str) -> bool:
    """True when ``path`` is a real folder with mode 0o750 (for tests)."""
    st = os.lstat(path)
    return stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == DIR_MODE
