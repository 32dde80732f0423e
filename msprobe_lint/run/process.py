"""Running CMD for ``probe run``: start it, forward SIGINT/SIGTERM/SIGHUP
to it, wait, and give its exit status as a shell would (128+N for a
signal N). On Linux CMD also gets SIGTERM (msrun: SIGINT) when probe
itself dies, even of ``kill -9``. The signal policy (process groups, an interactive terminal,
msrun) is in docs/guarded-launch.md.

Example::

    >>> run_command(["true"])
    0
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Mapping, Optional, Sequence

from ..exit import ExitStatus

FORWARDED_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None),
                                      getattr(signal, "SIGHUP", None)) if s is not None)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _prctl():
    """libc's ``prctl`` on Linux (loaded in probe, before the fork: nothing
    is imported in the child), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(prctl, parent: int, signum: int) -> None:
    """In the child, before exec (part of its ``preexec_fn``): ask the
    kernel to send ``signum`` to this process when the thread that started
    it dies (Linux ``prctl(PR_SET_PDEATHSIG)``; ``prctl`` from
    :func:`_prctl`), so a ``kill -9`` of ``probe run`` does not leave CMD
    running as an orphan. ``parent`` is probe's pid: when probe died before
    the call took effect (``getppid()`` is no longer it), the signal is
    sent at once. With ``prctl`` None (not Linux) nothing is done (see
    docs/guarded-launch.md)."""
    if prctl is None or prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # probe died between fork and prctl: the kernel will not tell us
        os.kill(os.getpid(), signum)


def _preexec(own_group: bool, parent: int, signum: int):
    """The ``preexec_fn`` of CMD: its own process group (when asked, on
    Python < 3.11) and :func:`die_with_parent`."""
    prctl = _prctl()

    def setup() -> None:
        if own_group and sys.version_info < (3, 11):  # pragma: no cover
            os.setpgrp()
        die_with_parent(prctl, parent, signum)

    return setup


class CommandError(ValueError):
    """CMD cannot be run or its script cannot be found (exit status 2)."""


def exit_status(returncode: int) -> int:
    """A child's return code as a shell would report it: 128+N for death by
    signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _interactive() -> bool:
    """True when probe is the foreground job of a terminal."""
    try:
        fd = sys.stdin.fileno()
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def run_command(argv: Sequence[str], env: Optional[Mapping[str, str]] = None, *, cwd: Optional[str] = None,
                launcher: Optional[str] = None, interactive: Optional[bool] = None) -> int:
    """Run CMD, forward SIGINT/SIGTERM/SIGHUP to it (see
    docs/guarded-launch.md), wait, and return its exit status.

    Raises:
        CommandError: CMD is empty. A program that cannot be found or run
            returns 127 or 126 after a message on stderr.
    """
    if not argv:
        raise CommandError("no command given after --")
    interactive = _interactive() if interactive is None else interactive
    own_group = os.name == "posix" and not interactive
    child: Optional[subprocess.Popen] = None
    pending: list[int] = []
    forwarded: list[int] = []

    def forward(signum: int) -> None:
        if interactive and signum == signal.SIGINT:
            return  # the terminal delivered it to CMD already
        sent = signal.SIGINT if launcher == "msrun" and signum != signal.SIGINT else signum
        forwarded.append(signum)
        assert child is not None  # forward() is only called once the child runs
        try:
            if own_group:
                os.killpg(child.pid, sent)
            else:
                child.send_signal(sent)
        except (ProcessLookupError, PermissionError):
            pass

    def handler(signum, frame):
        if child is None:
            pending.append(signum)
        else:
            forward(signum)

    previous = {}
    for signum in FORWARDED_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # not the main thread
            pass
    try:
        kwargs: dict = {}
        if own_group and sys.version_info >= (3, 11):
            kwargs["process_group"] = 0
        if os.name == "posix":
            # msrun cleans its workers up only on SIGINT (as forward() sends it)
            death = signal.SIGINT if launcher == "msrun" else signal.SIGTERM
            kwargs["preexec_fn"] = _preexec(own_group, os.getpid(), death)
        try:
            child = subprocess.Popen(list(argv), env=dict(env) if env is not None else None, cwd=cwd, **kwargs)
        except FileNotFoundError:
            sys.stderr.write(f"probe: error: command not found: {argv[0]}\n")
            return ExitStatus.NOT_FOUND
        except PermissionError:
            sys.stderr.write(f"probe: error: permission denied: {argv[0]}\n")
            return ExitStatus.NOT_EXECUTABLE
        except OSError as err:
            sys.stderr.write(f"probe: error: cannot run {argv[0]}: {err.strerror or err}\n")
            return ExitStatus.NOT_EXECUTABLE
        for signum in pending:
            forward(signum)
        returncode = child.wait()
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
    if returncode == 0 and forwarded and launcher == "msrun":
        return 128 + forwarded[0]  # msrun exits 0 after cleaning up on SIGINT
    return exit_status(returncode)
