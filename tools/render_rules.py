"""Render the rule table of the README from the rule catalogue, so it is
written once (in the rules' own metadata).

Usage: python tools/render_rules.py            print the table
       python tools/render_rules.py --write    update README.md in place
       python tools/render_rules.py --check    exit 1 if README.md is stale
"""
from __future__ import annotations

import sys
from pathlib import Path

START, END = "<!-- rules:start -->", "<!-- rules:end -->"
README = Path(__file__).resolve().parents[1] / "README.md"


def table() -> str:
    """The markdown table: code, severity, name, summary, fix (what
    ``--fix`` can do: safe, unsafe, or both depending on the finding)."""
    from msprobe_lint.lint.rules import load_all

    rows = ["| code | severity | name | what | fix |", "|---|---|---|---|---|"]
    for info in load_all().values():
        rows.append(f"| {info.code} | {info.severity.value} | `{info.name}` | {info.summary} | {info.fix or '-'} |")
    return "\n".join(rows)


def rendered(text: str) -> str:
    """``text`` with the part between the markers replaced by the table."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if not argv:
        print(table())
        return 0
    text = README.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{README}: markers {START} / {END} missing", file=sys.stderr)
        return 2
    new = rendered(text)
    if argv[0] == "--check":
        return 0 if new == text else 1
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
