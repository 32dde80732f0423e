"""Writing a report to ``--output FILE`` without losing what was there."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def write_output(text: str, output: str, *, force: bool = False) -> Optional[str]:
    """Write a report to the file ``output``; the reason it could not be
    written, or None.

    An existing file is never replaced unless ``force``: the file is
    created with ``O_EXCL``, so a file made between a check and the write
    is not lost either. With ``force`` the report goes to a temporary file
    beside it first and is renamed over it, so the old file stays whole if
    writing fails.
    """
    path = Path(output)
    if path.is_dir():
        return f"{output} is a directory; give a file name"
    if not force:
        try:
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            return f"{output} already exists; not overwritten (give --force to replace it)"
        except OSError as err:
            return f"cannot write {output}: {err.strerror or err}"
        return None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as err:
        try:
            tmp.unlink()
        except OSError:
            pass
        return f"cannot write {output}: {err.strerror or err}"
    return None
