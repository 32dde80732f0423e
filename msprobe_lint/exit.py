"""The exit statuses of every ``probe`` command, defined once.

``probe lint``, ``probe run`` (besides the status of the command it runs)
and the command line itself return one of these; the values follow the
shell's conventions (126/127 as a shell reports a command it cannot run or
find, 128+N for a signal N).

Example::

    >>> from msprobe_lint.exit import ExitStatus
    >>> int(ExitStatus.PROBLEMS)
    1
"""
from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit status of a ``probe`` command.

    Attributes:
        OK: nothing to report (``probe lint``: no error; ``probe run``: the
            command's own status 0).
        PROBLEMS: the lint found errors (or warnings with ``--strict``).
        USAGE: a usage error, or a file that cannot be read or written.
        NOT_EXECUTABLE: ``probe run``: the command exists but cannot run.
        NOT_FOUND: ``probe run``: the command does not exist.
        INTERRUPTED: stopped by Ctrl+C (128 + SIGINT).
    """

    OK = 0
    PROBLEMS = 1
    USAGE = 2
    NOT_EXECUTABLE = 126
    NOT_FOUND = 127
    INTERRUPTED = 130
