"""Write the per-release JSON Schemas (8.1, 26.x) derived from the 8.3
schema and the release data in msprobe_lint/lint/profiles.py.

Usage: python tools/build_schemas.py            write them under schema/
       python tools/build_schemas.py --check    exit 1 if any is stale
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schema"


def rendered() -> dict[Path, str]:
    """File -> text of every derived schema."""
    from msprobe_lint.lint.profiles import PROFILES, build_schema

    base = json.loads((SCHEMA_DIR / PROFILES["8.3"].schema_file).read_text(encoding="utf-8"))
    out = {}
    for profile in PROFILES.values():
        if profile.schema_file != PROFILES["8.3"].schema_file:
            text = json.dumps(build_schema(base, profile), indent=2, ensure_ascii=False) + "\n"
            out[SCHEMA_DIR / profile.schema_file] = text
    return out


def main(argv: list[str]) -> int:
    stale = []
    for path, text in rendered().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(path.name)
            if "--check" not in argv:
                path.write_text(text, encoding="utf-8")
    if "--check" in argv and stale:
        print("stale: " + ", ".join(stale) + " (run python tools/build_schemas.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
