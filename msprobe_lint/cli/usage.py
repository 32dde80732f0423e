"""How ``probe`` reports a usage error: ``probe: error: ...`` on stderr
and exit status 2 (ExitStatus.USAGE)."""
from __future__ import annotations

import sys

from ..exit import ExitStatus


def fail(message: str, status: int = ExitStatus.USAGE) -> int:
    """Print ``probe: error: message`` on stderr; return ``status``.

    Example::

        return fail("--unsafe-fixes goes with --fix or --diff")
    """
    sys.stderr.write(f"probe: error: {message}\n")
    sys.stderr.flush()
    return status
