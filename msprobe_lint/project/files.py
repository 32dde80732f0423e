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


def read_bytes(path: str) -> tuple[Optional[bytes], Optional[str]]:
    """Read at most MAX_BYTES of a regular file without following it into
    something else. Returns (bytes, None) or (None, reason) for PL006."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, "file not found"
    except PermissionError:
        return None, "permission denied"
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"
    if stat.S_ISDIR(info.st_mode):
        return None, "is a directory, not a file"
    if not stat.S_ISREG(info.st_mode):
        return None, "is not a regular file"
    if info.st_size > MAX_BYTES:
        return None, f"is {info.st_size} bytes, over the 10 MiB limit for a config"
    # os.read sized by the stat: a file object's read(MAX_BYTES + 1) sets
    # up a 10 MiB buffer per file, which dominated `probe lint DIR`.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except PermissionError:
        return None, "permission denied"
    except OSError as err:
        return None, f"cannot be read ({err.strerror or err})"
    try:
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
        return None, "grew over the 10 MiB limit while being read"
    return chunks[0] if len(chunks) == 1 else b"".join(chunks), None
