"""``probe schema``: the JSON Schema of msprobe's config.json (for editors
and check-jsonschema), of one mindstudio-probe release or of msprobe's ATB
dump config."""
from __future__ import annotations

import sys

from ...exit import ExitStatus

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional


def main(msprobe_version: Optional[str] = None, atb: bool = False) -> int:
    """Print a schema file as shipped: that of the release
    ``msprobe_version`` names (read as ``probe lint --msprobe-version``
    reads it: ``8.1``, ``8.3``, ``26``/``26.0``, ``26.1``, ``26.2``; newer
    is 26.2; default 8.3), or with ``atb`` the ATB dump config's. A version
    that is not one, or both options, is a usage error (exit 2)."""
    from ...lint.profiles import for_version
    from ...lint.schema.files import ATB, schema_path
    from ..messages import fail

    if atb and msprobe_version:
        return fail("--atb prints the ATB dump config's schema, which has no release; leave out --msprobe-version")
    profile = ATB if atb else "8.3"
    if msprobe_version:
        try:
            profile = for_version(msprobe_version)
        except ValueError as err:
            return fail(f"--msprobe-version {msprobe_version}: {err} (e.g. 8.1, 8.3, 26.0, 26.1, 26.2)")
    with open(schema_path(profile), encoding="utf-8") as handle:
        sys.stdout.write(handle.read())
    return ExitStatus.OK
