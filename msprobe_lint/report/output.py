"""Writing a report to ``--output FILE`` without losing what was there."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional, Union


def inside_dump(output: str, dump_path: str) -> Optional[str]:
    """Why ``output`` must not be written while ``dump_path`` is read
    (a message for ``probe: error:``), or None.

    ``output`` is refused when it is the dump folder itself or lies
    anywhere inside it (through links: both are resolved), as ``probe
    lint --output`` refuses one of the files it lints: ``--force`` would
    replace a dump file (an ``overflow.json``, a ``dump.json``) with the
    report, and a report left inside the dump would be read as part of
    it the next time."""
    try:
        target = Path(output).resolve()
        root = Path(dump_path).resolve()
    except (OSError, RuntimeError):
        return None
    if target == root or root in target.parents:
        return (f"--output {output} is inside the dump being read ({dump_path}); it would overwrite or mix with "
                "the dump's files (choose a file outside it)")
    return None


def inside_walked(output: str, walked: dict[tuple[int, int], str]) -> Optional[str]:
    """Why ``output`` must not be written (a message), or None: it lies
    in a folder the report walked, ``walked`` mapping each one's
    ``(st_dev, st_ino)`` to the path it was reached by
    (:func:`~msprobe_lint.report.discover.iter_rank_folders`). Catches
    what :func:`inside_dump` cannot know before the walk: a step or rank
    folder the dump reaches through a soft link, kept elsewhere (a hunt's
    finding: ``--force`` replaced that step's ``overflow.json``)."""
    try:
        target = Path(output).resolve()
    except (OSError, RuntimeError):
        return None
    for folder in target.parents:
        try:
            info = os.stat(folder)
        except OSError:
            continue
        reached = walked.get((info.st_dev, info.st_ino))
        if reached is not None:
            return (f"--output {output} is inside {reached}, a folder of the dump being read; it would "
                    "overwrite or mix with the dump's files (choose a file outside it)")
    return None


def write_output(text: Union[str, Iterable[str]], output: str, *, force: bool = False) -> Optional[str]:
    """Write a report (a string, or its pieces) to the file ``output``;
    the reason it could not be written, or None.

    An existing file is never replaced unless ``force``: the file is
    created with ``O_EXCL``, so a file made between a check and the write
    is not lost either. An existing device or FIFO (``/dev/stdout``) is
    written into, never replaced; with ``force`` a soft link's target is
    replaced, not the link. With ``force`` the report goes to a temporary file
    beside it first and is renamed over it, so the old file stays whole if
    writing fails. A write that fails half-way (or is interrupted) removes
    what it wrote.
    """
    pieces = [text] if isinstance(text, str) else text
    path = Path(output)
    loop = link_loop(output)
    if loop:  # Path.exists says False, resolve raises: a hunt's traceback with --force
        return f"cannot write {output}: it {loop}"
    if path.is_dir():
        return f"{output} is a directory; give a file name"
    if path.exists() and not path.is_file():  # a device, a FIFO: written through, never replaced (a hunt found
        return _write_through(pieces, output)  # --force made /dev/null a regular file), as probe lint -o does
    if force and path.is_symlink():  # the file it points to is replaced, not the link
        path = path.resolve()
    target = path if not force else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # as on stdout (cli/__init__.py): a path not valid UTF-8 (its bytes kept as surrogates) is written escaped
        handle = open(target, "x", encoding="utf-8", errors="backslashreplace")
    except FileExistsError:
        if not force and path.is_symlink() and not path.exists():
            return (f"{output} is a soft link to {os.readlink(output)}, which does not exist; not written through "
                    "it (give --force to write the report there, or choose another file)")
        if not force:
            return f"{output} already exists; not overwritten (give --force to replace it)"
        return f"cannot write {output}: {target} is in the way"
    except OSError as err:
        return f"cannot write {output}: {err.strerror or err}"
    try:
        with handle:
            for piece in pieces:
                handle.write(piece)
        if force:
            os.replace(target, path)
    except BaseException as err:
        try:
            target.unlink()
        except OSError:
            pass
        if isinstance(err, OSError):
            return f"cannot write {output}: {err.strerror or err}"
        raise
    return None


def link_loop(path: str) -> Optional[str]:
    """Words that follow ``path`` saying it is, or goes through, a soft
    link loop (``ELOOP``: ``Path.exists`` says False for it, and
    ``Path.resolve`` raises); None otherwise."""
    import errno

    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            where = "is" if os.path.islink(path) else "goes through"
            return (f"{where} a soft link loop (its soft links lead back to themselves, or chain too deep: "
                    f"{err.strerror})")
    return None


def _write_through(pieces: Iterable[str], output: str) -> Optional[str]:
    """Write into ``output``, an existing device or FIFO (``/dev/stdout``),
    as it is; the reason it could not be, or None."""
    try:
        with open(output, "w", encoding="utf-8", errors="backslashreplace") as handle:
            for piece in pieces:
                handle.write(piece)
    except OSError as err:
        return f"cannot write {output}: {err.strerror or err}"
    return None
