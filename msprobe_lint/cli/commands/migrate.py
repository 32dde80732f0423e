"""``probe migrate CONFIG --to X.Y``: rename what another mindstudio-probe
release renamed (lint/migrate.py), show the diff, write with ``--write``."""
from __future__ import annotations

import sys
from typing import Optional

from ...exit import ExitStatus
from ..messages import fail


def main(config: str, to: str, *, framework: Optional[str] = None, write: bool = False) -> int:
    """Print the migration's diff (notes and a summary on stderr) and
    rewrite ``config`` when ``write``; a usage error for an unreadable
    config, a bad target or a file that cannot be written; exit 1, writing
    nothing, when a rename would make a duplicate key whose two values
    cannot both be kept."""
    from ...lint import migrate

    try:
        migration = migrate.plan(config, to, framework=framework)
    except migrate.MigrationError as err:
        return fail(str(err))
    for note in migration.notes:
        sys.stderr.write(f"note: {note}\n")
    if migration.conflicts:
        for conflict in migration.conflicts:
            sys.stderr.write(f"probe: {config}: {conflict}\n")
        sys.stderr.write(f"{config}: not migrated{' (nothing written)' if write else ''}\n")
        return ExitStatus.PROBLEMS
    if not migration.changes:
        sys.stderr.write(f"{config}: nothing to rename for mindstudio-probe {to}\n")
        return ExitStatus.OK
    sys.stdout.write(migration.diff())
    sys.stdout.flush()
    if write:
        try:
            migrate.write(migration)
        except OSError as err:
            return fail(f"cannot write {config}: {err.strerror or err}")
        sys.stderr.write(f"{config}: rewritten ({len(migration.changes)} rename(s))\n")
    else:
        sys.stderr.write(f"{config}: {len(migration.changes)} rename(s); run again with --write to apply\n")
    return ExitStatus.OK
