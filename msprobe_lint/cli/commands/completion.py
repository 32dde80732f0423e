"""``probe completion SHELL``: print the shell completion script.

The script is the one click's ``shell_completion`` module holds for that
shell (typer registers its script templates there, and typer >= 0.20
ships click inside itself as ``typer._click``). Sourced by the shell, it
calls ``probe`` back with ``_PROBE_COMPLETE`` set, which cli/app.py hands
to the same machinery.

Example::

    eval "$(probe completion bash)"     # in ~/.bashrc
"""
from __future__ import annotations

import sys
from typing import Any

from ...exit import ExitStatus

PROG, COMPLETE_VAR = "probe", "_PROBE_COMPLETE"
SHELLS = ("bash", "zsh", "fish")


def register_shells() -> None:
    """Register typer's completion classes with click's shell_completion
    (what typer does itself only when an app adds its own completion
    options, which probe's does not)."""
    from typer.completion import completion_init

    completion_init()


def main(shell: str, command: Any) -> int:
    """Print the completion script of ``shell`` (one of :data:`SHELLS`)
    for ``command`` (the click command of the typer application)."""
    from typer.completion import shell_completion

    register_shells()
    complete = shell_completion.get_completion_class(shell)
    if complete is None:  # pragma: no cover - the command line accepts SHELLS only
        raise ValueError(f"no completion for {shell}")
    sys.stdout.write(complete(command, {}, PROG, COMPLETE_VAR).source() + "\n")
    return ExitStatus.OK
