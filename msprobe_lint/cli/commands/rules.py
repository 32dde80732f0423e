"""``probe rules``: every rule code with its default severity and summary."""
from __future__ import annotations

import sys

from ...exit import ExitStatus


def main() -> int:
    """Print one line per rule; exit status 0."""
    from ...lint.rules import load_all

    for info in load_all().values():
        sys.stdout.write(f"{info.code}  {info.severity.value:<7}  {info.name:<32} {info.summary}\n")
    return ExitStatus.OK
