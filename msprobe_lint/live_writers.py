"""Who is writing a dump_path: one marker file per rank folder, held locked
while its process runs.

probe_runtime's ``PrecisionDebugger`` *claims* the rank folder it will write
(``rank`` or ``rank<R>``) in dump_path when its gate passes: it creates
``<dump_path>/.probe-writer-<rank dir>.lock``, takes an exclusive
``fcntl.flock`` on it for as long as the process lives (the kernel drops
the lock when the process ends, even by ``kill -9``) and writes into it, as
JSON, who it is: ``pid``, ``host``, ``started`` (UTC, ISO 8601),
``command`` (the process's argv), ``rank_dir`` and ``job`` with
``job_source``, what tells one launch from another (:func:`job_identity`).
A marker nobody holds locked is *stale*: its process ended, and a new run
takes it over.

The run's last word is kept in it too, for ``probe report`` and ``probe
run``: its all-clear (:meth:`Claim.note`) or why detection was turned off
(:meth:`Claim.turned_off`, such as a dump that cannot be written on a full
disk). The claim writes the marker padded with spaces (JSON allows them)
to :data:`RESERVED` bytes more than who it is, allocated on disk, and every
later write goes over them in place, never truncating: a disk that fills
while the job runs still has room for that word.

* :func:`claim` refuses (:class:`WriterBusy`) a second live process on the
  same rank folder, and a live process of *another job* on any rank folder
  of the same dump_path (ranks of one msrun job share dump_path by design);
* :func:`read_writers` lists the markers with whether each is live, for
  ``probe run`` (refuse to launch into a dump_path being written) and
  ``probe report`` (a dump written by two runs, or still being written).

Standard library only (imported by probe_runtime, ``probe run`` and ``probe
report``). ``fcntl`` is POSIX: elsewhere nothing is locked or refused.

Example::

    held = claim("/abs/dump", "rank0")     # WriterBusy names the other pid and command
    [w.pid for w in read_writers("/abs/dump") if w.live]
"""
from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from dataclasses import dataclass
from typing import Mapping, Optional

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

PREFIX = ".probe-writer-"
SUFFIX = ".lock"
#: how long a claimant retries a lock held by someone else before it counts
#: as held (a reader testing a marker holds it for microseconds)
RETRY_SECONDS = 0.5
# the held descriptor is read-only (a file open for writing would keep the file
# system from being remounted read-only); who we are is written through another
_FLAGS = os.O_RDONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: (real dump_path, rank dir) -> [descriptor, claims]: the markers this process holds
_HELD: dict = {}
#: bytes a claim reserves in its marker beyond who it is, for the run's last word (rounded up to BLOCK)
RESERVED = 2048
BLOCK = 4096
#: at most this many characters of a reason for turning detection off are kept
REASON_CHARS = 1000


def _host() -> str:
    """This host's name (``os.uname``: socket is not loaded for it)."""
    try:
        return os.uname().nodename
    except AttributeError:  # pragma: no cover - not POSIX
        import socket

        return socket.gethostname()


def marker_name(rank_dir: str) -> str:
    """The marker's file name in dump_path for the rank folder ``rank_dir``."""
    return f"{PREFIX}{rank_dir}{SUFFIX}"


def job_identity(environ: Optional[Mapping[str, str]] = None) -> tuple[str, str]:
    """(job, where it came from): the same for every rank of one launch,
    different for two launches running at once.

    From the launcher's environment when there is one: msrun's scheduler
    address (``MS_SCHED_HOST:MS_SCHED_PORT``, the same on every node),
    torchrun's ``TORCHELASTIC_RUN_ID``, ``MASTER_ADDR:MASTER_PORT``, Slurm's
    ``SLURM_JOB_ID.SLURM_STEP_ID``, PMIx's ``PMIX_NAMESPACE`` (Open MPI);
    else the host and the parent process (the ranks one launcher started on
    one host share it). The source is ``"parent"`` for the latter, which
    cannot tell jobs apart across hosts."""
    env = os.environ if environ is None else environ
    if env.get("MS_SCHED_HOST") and env.get("MS_SCHED_PORT"):
        return f"msrun {env['MS_SCHED_HOST']}:{env['MS_SCHED_PORT']}", "MS_SCHED_HOST/MS_SCHED_PORT"
    if env.get("TORCHELASTIC_RUN_ID"):
        return f"torchrun {env['TORCHELASTIC_RUN_ID']}", "TORCHELASTIC_RUN_ID"
    if env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        return f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}", "MASTER_ADDR/MASTER_PORT"
    if env.get("SLURM_JOB_ID"):
        return f"slurm {env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '')}", "SLURM_JOB_ID"
    if env.get("PMIX_NAMESPACE"):
        return f"pmix {env['PMIX_NAMESPACE']}", "PMIX_NAMESPACE"
    return f"{_host()} parent {os.getppid()}", "parent"


@dataclass
class Writer:
    """One marker: a process that writes (or wrote) one rank folder.

    Attributes:
        path: the marker file.
        rank_dir: the rank folder it writes (``rank``, ``rank<R>``).
        pid, host, started, command: who, where, since when (UTC ISO 8601),
            running what (argv joined by spaces); empty when unreadable.
        job, job_source: :func:`job_identity` of that process.
        live: True while its process holds the marker locked.
        summary: the all-clear it printed at exit (:meth:`Claim.note`),
            ``probe_runtime: no overflow found in N checked step(s) ...``;
            empty when it printed none (it recorded something, or has not
            ended).
        turned_off: why its debugger turned detection off for good
            (:meth:`Claim.turned_off`), ``cannot write the dump (OSError:
            [Errno 28] No space left on device)``; empty when it did not.
        turned_off_step: the step it was in then, or None.
    """

    path: str
    rank_dir: str
    pid: int = 0
    host: str = ""
    started: str = ""
    command: str = ""
    job: str = ""
    job_source: str = ""
    live: bool = False
    summary: str = ""
    turned_off: str = ""
    turned_off_step: Optional[int] = None

    def turned_off_text(self) -> str:
        """``detection was turned off in rank1 (step 3): cannot write the
        dump (...)``, or "" when it was not."""
        if not self.turned_off:
            return ""
        step = f" (step {self.turned_off_step})" if self.turned_off_step is not None else ""
        return f"detection was turned off in {self.rank_dir}{step}: {self.turned_off}"

    def describe(self) -> str:
        """``pid 123 on host h, started 2026-..., running: python train.py``
        (``ran:`` once the process has let its marker go)."""
        text = f"pid {self.pid or '?'} on host {self.host or '?'}"
        if self.started:
            text += f", started {self.started}"
        return text + (f", {'running' if self.live else 'ran'}: {self.command}" if self.command else "")

    def same_job(self, other: "Writer") -> bool:
        """True when both are ranks of one launch, or cannot be told
        apart (two hosts, neither with a launcher's job id)."""
        if self.job_source != "parent" and other.job_source != "parent":
            return self.job == other.job
        if self.host != other.host:
            return self.job_source == other.job_source  # one has a launcher's id, the other not: two jobs
        return self.job == other.job


class WriterBusy(RuntimeError):
    """Another live process writes this rank folder of dump_path, or another
    job writes the same dump_path.

    Attributes:
        other: the :class:`Writer` in the way.
        same_rank: True when it writes the same rank folder.
    """

    def __init__(self, dump_path: str, other: Writer, same_rank: bool) -> None:
        self.other = other
        self.same_rank = same_rank
        what = f"its folder {other.rank_dir}" if same_rank else f"{other.rank_dir} for another job ({other.job})"
        super().__init__(f"dump_path {dump_path} is being written by another process ({what}): {other.describe()}; "
                         "the two runs would overwrite and mix each other's step*/rank* files")


def _locked_by_other(fd: int) -> bool:
    """True when another open file holds the exclusive lock on the file of
    ``fd`` (tested with a shared lock: a claimant holds its lock for good,
    so there is nothing to wait for)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as err:
        # any other error: a file system without locks, nothing can be known
        return err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _parse(path: str, raw: bytes, rank_dir: str) -> Writer:
    writer = Writer(path=path, rank_dir=rank_dir)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json.loads reads
        return writer
    if isinstance(data, dict):
        pid = data.get("pid")
        writer.pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else 0
        for name in ("host", "started", "command", "job", "job_source", "summary"):
            value = data.get(name)
            setattr(writer, name, value if isinstance(value, str) else "")
        off = data.get("turned_off")
        if isinstance(off, dict) and isinstance(off.get("reason"), str) and off["reason"]:
            writer.turned_off = off["reason"]
            step = off.get("step")
            writer.turned_off_step = step if isinstance(step, int) and not isinstance(step, bool) else None
    return writer


def read_writers(dump_path: str, *, skip: Optional[str] = None) -> list[Writer]:
    """The markers in ``dump_path`` (sorted by rank folder; but that of the
    rank folder ``skip``), each with whether its process still runs. []
    for a folder without any, one that cannot be read, or without
    ``fcntl``."""
    if fcntl is None:
        return []
    try:
        names = sorted(n for n in os.listdir(dump_path) if n.startswith(PREFIX) and n.endswith(SUFFIX))
    except OSError:
        return []
    writers = []
    for name in names:
        if skip is not None and name == marker_name(skip):
            continue
        path = os.path.join(dump_path, name)
        try:  # O_NONBLOCK: a FIFO of that name would otherwise hold the open until a writer comes
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                         | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # no marker: only a regular file is one
                continue
            writer = _read_open(fd, path, name[len(PREFIX):-len(SUFFIX)])
        finally:
            os.close(fd)
        writers.append(writer)
    return writers


def _read_open(fd: int, path: str, rank_dir: str) -> Writer:
    live = _locked_by_other(fd)
    raw = b""
    deadline = time.monotonic() + (RETRY_SECONDS if live else 0)
    while True:  # a writer that just took its lock writes who it is right after
        try:
            raw = os.pread(fd, 65536, 0)
        except OSError:
            raw = b""
        if raw or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    writer = _parse(path, raw, rank_dir)
    writer.live = live
    return writer


def _me(path: str, rank_dir: str, environ: Optional[Mapping[str, str]]) -> Writer:
    job, source = job_identity(environ)
    command = " ".join([sys.executable] + sys.argv) if sys.argv and sys.argv[0] else sys.executable
    return Writer(path=path, rank_dir=rank_dir, pid=os.getpid(), host=_host(),
                  started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command=command, job=job,
                  job_source=source, live=True)


class Claim:
    """This process's hold on one rank folder of a dump_path (from
    :func:`claim`). The lock is let go by :meth:`release`, when the last
    Claim of that folder in this process is collected, or when the
    process ends; the marker file stays (stale) for ``probe report``."""

    def __init__(self, key: tuple) -> None:
        self._key: Optional[tuple] = key

    def release(self) -> None:
        """Let go of this claim (the lock goes with the last one)."""
        key, self._key = self._key, None
        if key is None or key not in _HELD:
            return
        held = _HELD[key]
        held[1] -= 1
        if held[1] <= 0:
            del _HELD[key]
            try:
                os.close(held[0])
            except OSError:
                pass

    def note(self, summary: str) -> None:
        """Keep ``summary`` (the run's all-clear line) in the marker, for
        ``probe report`` to quote when the dump holds no record: how many
        steps were checked and what the check did not see, which otherwise
        only the job's stderr said. Never raises."""
        self._update("summary", summary[:8192])

    def turned_off(self, reason: str, step: Optional[int] = None) -> None:
        """Keep in the marker that the debugger turned detection off for
        good in ``step``, and why (``cannot write the dump (OSError: [Errno
        28] No space left on device)``): ``probe report`` then says so
        rather than "nothing overflowed", and ``probe run`` warns at the
        end (a tester's finding: a full disk turned detection off, and both
        said all was clear). Written into the room the claim reserved, so
        a full disk does not stop it. Never raises."""
        reason = reason[:REASON_CHARS]
        over = self._update("turned_off", {"reason": reason, "step": step})
        if over > 0:  # no room beyond the marker's own (a full disk) for all of it: what fits, cut short
            self._update("turned_off", {"reason": _cut(reason, len(json.dumps(reason)) - over), "step": step})

    def _update(self, key: str, value: object) -> int:
        """Set ``key`` in the marker's JSON (written in place, :func:`_write`);
        0 when written (or there is nothing to write), else by how many
        bytes the new JSON is longer than the marker when it could not be
        written (the disk had no room to grow it; 0 for any other failure)."""
        if self._key is None or self._key not in _HELD:
            return 0
        path = os.path.join(self._key[0], marker_name(self._key[1]))
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read(65536).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return 0
        if not isinstance(data, dict):
            return 0
        data[key] = value
        payload = json.dumps(data).encode("utf-8")
        if _write(path, payload):
            return 0
        try:
            return max(0, len(payload) - os.stat(path).st_size)
        except OSError:
            return 0

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def _cut(text: str, size: int) -> str:
    """The longest start of ``text``, with ``...``, whose JSON string is at
    most ``size`` bytes (a non-ASCII character is up to six); "" when none."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if len(json.dumps(text[:middle] + "...")) <= size:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "..." if len(json.dumps(text[:low] + "...")) <= size else ""


def claim(dump_path: str, rank_dir: str, environ: Optional[Mapping[str, str]] = None) -> Optional[Claim]:
    """Claim the rank folder ``rank_dir`` of the existing folder
    ``dump_path`` for this process (several claims of one process share
    one marker). None where nothing can be locked (no ``fcntl``, a file
    system without locks, a marker that cannot be created).

    Raises:
        WriterBusy: another live process holds this rank folder's marker,
            or a live process of another job (:meth:`Writer.same_job`)
            holds another rank folder's.
    """
    if fcntl is None:
        return None
    root = os.path.realpath(dump_path)
    key = (root, rank_dir)
    if key in _HELD:
        _HELD[key][1] += 1
        return Claim(key)
    path = os.path.join(root, marker_name(rank_dir))
    try:
        fd = os.open(path, _FLAGS, 0o640)
    except OSError:
        return None
    try:
        if not _lock(fd):
            raise WriterBusy(dump_path, _read_open(fd, path, rank_dir), same_rank=True)
        me = _me(path, rank_dir, environ)
        payload = json.dumps({"pid": me.pid, "host": me.host, "started": me.started, "command": me.command,
                              "rank_dir": rank_dir, "job": me.job, "job_source": me.job_source}).encode("utf-8")
        if not _write(path, payload, reserve=-(-(len(payload) + RESERVED) // BLOCK) * BLOCK):
            _replace(path, payload)  # no room to write it in place: an earlier run's word must not stay as ours
        for other in read_writers(root, skip=rank_dir):
            if other.live and other.pid != me.pid and not me.same_job(other):
                raise WriterBusy(dump_path, other, same_rank=False)
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = [fd, 1]
    return Claim(key)


def _write(path: str, payload: bytes, *, reserve: int = 0) -> bool:
    """Replace the marker's content with ``payload`` through a descriptor of
    its own, closed at once (the lock stays with the held one); whether it
    was written. A marker that cannot be written keeps its lock and what
    it held (a claim then empties it: :func:`_replace`).

    The file never shrinks: ``payload`` is padded with spaces to its size
    (or to ``reserve`` bytes when that is more and the disk has room for
    them), and the bytes beyond the old size are allocated first
    (``posix_fallocate``), so a disk that has no room leaves the old
    content whole rather than half written. Writing over bytes the file
    already holds needs no new room: the reserve keeps a later word
    writable on a full disk (a tester's finding: detection turned off by a
    full disk left no trace for ``probe report``)."""
    try:
        fd = os.open(path, _WRITE)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        length = max(size, len(payload))
        if reserve > length and _allocate(fd, size, reserve):
            length = reserve
        elif length > size and not _allocate(fd, size, length):
            return False
        data = memoryview(payload.ljust(length, b" "))
        done = 0
        while done < len(data):
            done += os.pwrite(fd, data[done:], done)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _replace(path: str, payload: bytes) -> None:
    """Empty the marker, then write ``payload`` into it: for a claim whose
    marker, left by an earlier run, could not be written over in place
    (the disk has no room to grow it). Emptied first, it frees what it
    held; a marker that cannot be written is left empty, without who holds
    it, never with the earlier run's pid and word, which ``probe report``
    and ``probe run`` would take for this run's (a review's finding: a
    claim on a full disk kept an earlier run's ``turned_off``)."""
    try:
        fd = os.open(path, _WRITE)
    except OSError:
        return
    try:
        os.ftruncate(fd, 0)
        done = 0
        while done < len(payload):
            done += os.pwrite(fd, payload[done:], done)
    except OSError:
        try:
            os.ftruncate(fd, 0)  # no half of who it is
        except OSError:
            pass
    finally:
        os.close(fd)


def _allocate(fd: int, start: int, end: int) -> bool:
    """Allocate bytes ``start`` to ``end`` of the file on disk; False when
    the disk has no room for them (True where it cannot be asked: the
    write that follows finds out)."""
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is None or end <= start:
        return True
    try:
        fallocate(fd, start, end - start)
    except OSError as err:
        return err.errno in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)
    return True


def _lock(fd: int) -> bool:
    """Take the exclusive lock (retried for :data:`RETRY_SECONDS`); False
    when another process holds it. A file system without locks: True."""
    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
