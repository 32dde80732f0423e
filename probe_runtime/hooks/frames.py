"""Where a call came from: the caller's frames and the user's ``file:line``.

A hook captures ``(file, line, function)`` tuples when a call is made
(:func:`capture_frames`, skipping this package's own frames); a record
names the first of them that is the user's code (:func:`user_where`, which
also skips MindSpore: :func:`library_roots`) and lists them for stack.json
(:func:`stack_lines`).

Example::

    frames = capture_frames(sys._getframe(1))
    user_where(frames, library_roots())      # "/home/me/train.py:83"
"""
from __future__ import annotations

import functools
import linecache
import os
from typing import Any, Optional

#: the ``probe_runtime`` package folder: frames from it are the tool's own
TOOL_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def capture_frames(frame: Any, limit: int = 32) -> tuple:
    """``(file, line, function)`` for ``frame`` and its callers, innermost
    first, skipping this package's own frames (at most ``limit``). A frame
    with no current line (``f_lineno`` None, as in code run by MindSpore's
    ``jit(capture_mode="bytecode")``) gives its function's first line; a
    hunt's finding: the None reached the dump writer, which turned
    detection off."""
    out: list[tuple] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        if not code.co_filename.startswith(TOOL_ROOT):
            line = frame.f_lineno  # None in code MindSpore's bytecode capture (jit capture_mode="bytecode") runs
            out.append((code.co_filename, line if line is not None else code.co_firstlineno, code.co_name))
        frame = frame.f_back
    return tuple(out)


def user_where(frames: tuple, library_roots: tuple[str, ...]) -> Optional[str]:
    """``file:line`` of the innermost frame outside ``library_roots`` (and
    outside frozen modules); the innermost frame when every one is inside;
    None for no frame."""
    for filename, line, _ in frames:
        if not filename.startswith(library_roots) and not filename.startswith("<frozen"):
            return f"{shown_path(filename)}:{line}"
    return f"{shown_path(frames[0][0])}:{frames[0][1]}" if frames else None


@functools.lru_cache(maxsize=256)
def shown_path(filename: str) -> str:
    """``filename`` as a record shows it: without ``..`` steps
    (``python ../train.py`` run in ``/w/run`` gives frames in
    ``/w/run/../train.py``; shown ``/w/train.py``), but only when the
    shorter path is the same file (a ``..`` after a soft link to a folder
    goes elsewhere); otherwise unchanged, as are names that are not files
    (``<stdin>``)."""
    if ".." not in filename.replace("\\", "/").split("/"):
        return filename
    short = os.path.normpath(filename)
    try:
        return short if os.path.samefile(short, filename) else filename
    except OSError:
        return filename


def stack_lines(frames: tuple) -> list[str]:
    """The frames as stack.json lists them (msprobe's form): ``File <file>,
    line <n>, in <function>, \\n <source line>``."""
    lines = []
    for filename, line, function in frames:
        code = linecache.getline(filename, line).strip()
        lines.append(f"File {shown_path(filename)}, line {line}, in {function}, \n {code}")
    return lines


def library_roots(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Folders whose frames are not the user's: this package, MindSpore
    and ``extra`` (the MSAdapter layer's package, whose frames run the
    user's torch calls)."""
    roots = [TOOL_ROOT, *extra]
    try:
        import mindspore

        roots.append(os.path.dirname(os.path.abspath(mindspore.__file__)))
    except Exception:  # pragma: no cover
        pass
    return tuple(roots)
