"""The README's rule table is generated from the registry, not written
twice; it must be up to date."""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_rule_table_is_current():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "render_rules.py"), "--check"], cwd=REPO)
    assert proc.returncode == 0, "README rule table is stale: run python tools/render_rules.py --write"


def test_readme_opens_with_the_two_commands_and_ci_runs_the_same_tests():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "./run-example.sh" in readme.split("## ")[0]
    test_lines = [line.strip() for line in ci.splitlines() if "pytest" in line and not line.startswith("#")]
    assert test_lines and all(line in readme for line in test_lines)
