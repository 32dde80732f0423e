"""The labelled cases in ../shared/cases/lint, run by the shared tool
against the installed `probe`, exactly as CI's reviewers run them (an extra:
skipped when ../shared is absent; the project's own corpus is tests/cases)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import SHARED_CASES, SHARED_TOOLS, probe_command

pytestmark = pytest.mark.shared


def test_every_shared_lint_case_passes():
    tool = SHARED_TOOLS / "check-lint-cases"
    proc = subprocess.run([sys.executable, str(tool), str(SHARED_CASES / "lint"), "--probe",
                           " ".join(probe_command()), "-v"], capture_output=True, text=True, timeout=600)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.endswith(" 0 failed"), last
    assert int(last.split()[0]) >= 51, last
