"""Cost of fixing, and of what the language server does per keystroke.

Measures, on examples/lint/mistakes.json (6 findings, 4 safe fixes), the
median of ``--runs`` repetitions of:

1. ``lint_text`` in one process (what ``probe server`` runs on every
   didChange: settings look-up, environment facts, the lint; the first
   call, which imports jsonschema, is left out);
2. ``fix_text`` with the safe fixes (lint, apply, re-lint until nothing
   applies);
3. cold processes, interleaved: ``probe lint`` against ``probe lint
   --diff`` (the whole fix loop, writing nothing), with their ratio.

Usage::

    python benchmarks/fix_bench.py [--runs 15]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "lint" / "mistakes.json"


def probe() -> list[str]:
    beside = Path(sys.executable).parent / "probe"
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "msprobe_lint"]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from msprobe_lint.lint.api import LintOptions, lint_text
    from msprobe_lint.lint.fixes.edits import fix_text

    folder = Path(tempfile.mkdtemp(prefix="fix-bench-"))
    try:
        config = folder / "config.json"
        shutil.copy(EXAMPLE, config)
        text = config.read_text(encoding="utf-8")
        options = LintOptions()
        lint_text(text, str(config), options)  # imports, caches
        in_process: dict[str, list[float]] = {"lint_text": [], "fix_text": []}
        for _ in range(args.runs):
            start = time.perf_counter()
            lint_text(text, str(config), options)
            in_process["lint_text"].append(time.perf_counter() - start)
            start = time.perf_counter()
            fixed, applied, _ = fix_text(text, lambda t: lint_text(t, str(config), options).diagnostics)
            in_process["fix_text"].append(time.perf_counter() - start)
        assert len(applied) == 4, applied
        cold: dict[str, list[float]] = {"lint": [], "lint --diff": []}
        env = {**os.environ, "NO_COLOR": "1"}
        for _ in range(args.runs):
            for name, extra in (("lint", []), ("lint --diff", ["--diff"])):
                start = time.perf_counter()
                subprocess.run(probe() + ["lint", *extra, "config.json"], cwd=folder, env=env,
                               capture_output=True, check=False)
                cold[name].append(time.perf_counter() - start)
        assert config.read_text(encoding="utf-8") == text  # --diff wrote nothing
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"mistakes.json, median of {args.runs} runs")
    print(f"  lint_text (probe server, per change)  {median_ms(in_process['lint_text']):8.2f} ms")
    print(f"  fix_text (safe fixes, {len(applied)} applied)      {median_ms(in_process['fix_text']):8.2f} ms")
    plain, diff = median_ms(cold["lint"]), median_ms(cold["lint --diff"])
    print(f"  cold probe lint                        {plain:8.1f} ms")
    print(f"  cold probe lint --diff                 {diff:8.1f} ms   ratio {diff / plain:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
