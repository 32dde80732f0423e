"""Reading a workspace file the linter may take: at most :data:`MAX_BYTES`
of a regular file, never following it into a folder or a device, with the
reason it cannot be read (the linter's PL006 message). Shared by the
folder walk (``discovery``: is a file an msprobe config) and the linter's
syntax stage (``lint.loader``), which imports it from here so that the
workspace needs nothing of the linter.
"""
from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional

#: the largest config read (10 MiB); larger files are data, not configs
MAX_BYTES = 10 * 1024 * 1024


def kind(mode: int) -> Optional[str]:
    """What a file that is not a regular file is, in words (``mode``: its
    st_mode): ``"a named pipe (FIFO)"``, ``"a character device"``...;
    None for a regular file or a type without a name here."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None


def not_regular(path: str) -> Optional[str]:
    """Why ``path`` is not a regular file that may be read (followed
    through soft links, never opened, so a named pipe cannot block), in
    the words of :func:`read_bytes` (``"file not found"``, ``"is not a
    regular file: it is a named pipe (FIFO)"``...); None when it is one."""
    return _stat(path)[1]


def _stat(path: str) -> tuple[Optional[os.stat_result], Optional[str]]:
    """(the stat of a regular file, None) or (None, why it is not one)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, "file not found"
    except PermissionError:
        return None, "permission denied"
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"
    refused = _refusal(info.st_mode)
    return (None, refused) if refused else (info, None)


def _refusal(mode: int) -> Optional[str]:
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(mode):
        what = kind(mode)
        return "is not a regular file" + (f": it is {what}" if what else "")
    return None


def read_bytes(path: str, what: str = "a config") -> tuple[Optional[bytes], Optional[str]]:
    """Read at most MAX_BYTES of a regular file without following it into
    something else. Returns (bytes, None) or (None, reason) for PL006.

    The one reader of a user's file (a config, a training script, the
    ``[tool.probe-lint]`` settings): a named pipe, a device (a soft link
    to /dev/zero) or a folder is refused unopened, and a file over the
    limit unread (``what`` names the file in that message).
    """
    info, refused = _stat(path)
    if info is None:
        return None, refused
    if info.st_size > MAX_BYTES:
        return None, f"is {info.st_size} bytes, over the 10 MiB limit for {what}"
    # os.read sized by the stat: a file object's read(MAX_BYTES + 1) sets
    # up a 10 MiB buffer per file, which dominated `probe lint DIR`.
    # O_NONBLOCK: a named pipe swapped in after the stat cannot block the open
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except PermissionError:
        return None, "permission denied"
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"
    try:
        refused = _refusal(os.fstat(fd).st_mode)  # what was opened, not what was looked at
        if refused:
            return None, refused
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            want = MAX_BYTES + 1 - size if chunks else min(info.st_size + 1, MAX_BYTES + 1)
            chunk = os.read(fd, want)
            chunks.append(chunk)
            size += len(chunk)
            if len(chunk) < want:  # a regular file reads short only at its end
                break
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        return None, f"grew over the 10 MiB limit for {what} while being read"
    return chunks[0] if len(chunks) == 1 else b"".join(chunks), None
