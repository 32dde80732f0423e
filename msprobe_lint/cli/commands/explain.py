"""``probe explain CODE``: a rule's rationale with a bad and a good example."""
from __future__ import annotations

import sys

from ...exit import ExitStatus
from ..messages import fail


def main(code: str) -> int:
    """Print the explanation of the rule ``code`` names (a code in any
    case, or a rule name); a usage error for anything else."""
    from ...lint.rules import lookup

    try:
        info = lookup(code)
    except LookupError as err:
        return fail(str(err.args[0]))
    sys.stdout.write(info.explanation() + "\n")
    return ExitStatus.OK
