"""``probe run CONFIG -- CMD ARGS...``: hands its arguments to the guarded
launch (``msprobe_lint.run.guarded_run``)."""
from __future__ import annotations

import sys
from typing import Any


def main(config: str, command: list[str], options: Any) -> int:
    """CMD's exit status, or the gate's (see run.guarded_run); probe's own
    output on stderr, in colour on a terminal."""
    from ...run import guarded_run

    return guarded_run(config, command, options, color=sys.stderr.isatty())
