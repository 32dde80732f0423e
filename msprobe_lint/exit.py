"""The exit statuses of every ``probe`` command, in one enum."""
from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit status of a ``probe`` command (an ``int``: ``sys.exit(ExitStatus.OK)`` works).

    ``OK`` 0: nothing to report (lint clean; report: records were shown).
    ``PROBLEMS`` 1: lint findings, or no overflow records in a dump.
    ``USAGE`` 2: bad usage or unreadable input.
    ``NOT_EXECUTABLE`` 126 and ``NOT_FOUND`` 127: ``probe run``'s command,
    as a shell says. ``INTERRUPTED`` 130: Ctrl-C (128 + SIGINT).
    """

    OK = 0
    PROBLEMS = 1
    USAGE = 2
    NOT_EXECUTABLE = 126
    NOT_FOUND = 127
    INTERRUPTED = 130
