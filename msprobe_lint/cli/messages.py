"""What ``probe`` says about itself: a usage error (``probe: error: ...``
on stderr, exit status 2) and its version line."""
from __future__ import annotations

import sys

from ..exit import ExitStatus


def fail(message: str, status: int = ExitStatus.USAGE) -> int:
    """Print ``probe: error: message`` on stderr (control characters of a
    file name in it shown as ``?``: textsafe.shown); return ``status``.

    Example::

        return fail("--unsafe-fixes goes with --fix or --diff")
    """
    from ..textsafe import shown

    sys.stderr.write("probe: error: " + "\n".join(shown(line) for line in message.split("\n")) + "\n")
    sys.stderr.flush()
    return status


def version_line() -> str:
    """``probe (msprobe-lint) X.Y.Z``, the installed distribution's version
    (its metadata, read without importlib.metadata)."""
    from ..installed import version

    return f"probe (msprobe-lint) {version('msprobe-lint') or 'unknown'}"
