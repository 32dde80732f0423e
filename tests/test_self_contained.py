"""The suite needs nothing beside the repository (issue 14): the tracked
files (``git ls-files``, as they are in the working tree) copied into a
temporary folder with nothing beside it, no ``../shared`` and no ``.git``,
pass the lint part of the suite there, run by this interpreter with the
copy first on PYTHONPATH (so the copy's msprobe_lint is the one tested, the
installed ``probe`` included). The MindSpore runtime tests are left out for
time; they read no file outside the repository but tests/data."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

# Left out: the MindSpore runtime (also deselected by its marker), the
# report and its HTML page (they need msprobe's environment or a browser,
# which a plain clone may lack: those skip for their own reasons), the
# guarded launch (it starts processes), the packaging, pre-commit and mypy
# runs (the full suite makes them from the checkout), and this module. The
# linter's own folders (tests/lint, cli, project, server) are all in.
LINT_FOLDERS = ("lint", "cli", "project", "server")
NOT_LINT = ("test_runtime_", "test_probe_report", "test_report_html",
            "test_msprobe_interop", "test_msrun", "test_packaging",
            "test_precommit", "test_typing", "test_self_contained")


def lint_test_modules() -> list[str]:
    """Every test module of the linter (paths under tests/), new ones
    included."""
    tests = REPO / "tests"
    found = [p for p in tests.glob("test_*.py") if not p.name.startswith(NOT_LINT)]
    for folder in LINT_FOLDERS:
        found += [p for p in (tests / folder).rglob("test_*.py") if not p.name.startswith(NOT_LINT)]
    return sorted(p.relative_to(tests).as_posix() for p in found)


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout (git ls-files names the files a clone has)")
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [name for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def test_the_lint_modules_are_the_lint_tests():
    modules = lint_test_modules()
    assert {"lint/test_cases.py", "lint/test_sarif.py", "lint/test_profiles.py", "lint/test_schema_agreement.py",
            "lint/test_shared_lint_cases.py", "cli/test_cli.py", "lint/rules/test_catalogue.py",
            "lint/test_settings.py", "server/test_lsp_server.py"} <= set(modules)
    assert not [m for m in modules if "runtime" in m or m.startswith(("run/", "report/"))]


def test_lint_suite_passes_in_a_copy_with_nothing_beside_it(tmp_path):
    copy = tmp_path / "clone"
    for name in tracked_files():
        source = REPO / name
        if not os.path.lexists(source):  # deleted in the working tree
            continue
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clone"]
    env = dict(os.environ, PYTHONPATH=str(copy))
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PROBE_REQUIRE_SHARED", None)  # CI's: the copy has nothing beside it on purpose
    where = subprocess.run([sys.executable, "-c", "import msprobe_lint; print(msprobe_lint.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(copy / "msprobe_lint" / "__init__.py"), where.stdout + where.stderr
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           "-m", "not mindspore", *[f"tests/{name}" for name in lint_test_modules()]],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    last = proc.stdout.strip().splitlines()[-1]
    assert " passed" in last and "failed" not in last and "error" not in last, last
    # the only skips are the ../shared extras, each with the one reason
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert all("needs ../shared" in line for line in skipped), "\n".join(skipped)
    assert skipped, "the ../shared extras should have been skipped in the copy"
