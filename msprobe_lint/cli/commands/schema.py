"""``probe schema``: the JSON Schema of msprobe's config.json (for editors
and check-jsonschema)."""
from __future__ import annotations

import sys

from ...exit import ExitStatus


def main() -> int:
    """Print the default profile's schema file as shipped."""
    from ...lint.schema.files import schema_path

    with open(schema_path(), encoding="utf-8") as handle:
        sys.stdout.write(handle.read())
    return ExitStatus.OK
