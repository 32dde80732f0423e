#!/usr/bin/env python
"""Regenerate the expected files of the golden lint corpus (tests/cases/)
from what `probe lint` gives now.

Usage (from the repository, with the project's environment)::

    .venv/bin/python tools/regen_cases.py               # every case
    .venv/bin/python tools/regen_cases.py CASE [CASE...]
    .venv/bin/python tools/regen_cases.py --check       # only report what would change

Each case runs exactly as tests/lint/test_cases.py runs it (tests/golden.py);
its expected.json (and expected.stdout for a format case) is rewritten.
Review the result with `git diff tests/cases` before committing: the
expected files are the lint's contract, so a change there must be one you
meant. The test suite never runs this. Exit status: 0, or 1 when --check
finds a case whose expected files are out of date, 2 for a bad case name
or a malformed case.toml.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import golden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help="case folder names (default: all)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any case is out of date")
    args = parser.parse_args(argv)
    try:
        cases = golden.discover(args.cases or None)
    except golden.CaseError as err:
        print(f"regen_cases: {err}", file=sys.stderr)
        return 2
    stale = []
    with tempfile.TemporaryDirectory(prefix="probe-cases-") as workdir:
        for case in cases:
            outcome = golden.run(case, Path(workdir))
            if outcome == golden.load_expected(case):
                continue
            stale.append(case.name)
            if not args.check:
                golden.write_expected(case, outcome)
            print(f"{'out of date' if args.check else 'updated'}: {case.name}")
    print(f"{len(cases)} case(s), {len(stale)} {'out of date' if args.check else 'updated'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
