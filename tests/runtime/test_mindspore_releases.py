"""The runtime tests on the oldest MindSpore release users can install here
(2.7.0; this suite's own environment has the newest), in the separate
environment ``tools/make-mindspore-env.sh 2.7.0`` builds
(``.mindspore-envs/2.7.0`` in the repository, or ``MINDSPORE_RELEASE_PYTHON``,
any release). Skipped, with the reason, when that environment is absent, as
on a plain clone; .ci/run builds it.

The runtime test modules run under that environment's python in a pytest
subprocess; this test fails with the names and output of those that fail
there. The counts of that run are printed in this run's summary ("MindSpore
releases") and recorded as the property ``mindspore_release_run``.
"""
from __future__ import annotations

import os
import subprocess
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Optional

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

#: the oldest MindSpore release on the package index this project is tested on
OLDEST = "2.7.0"
TESTS = REPO / "tests"
#: runtime test modules outside tests/runtime/ and not named test_runtime_*.py
ALSO_RUNTIME = ("test_msrun.py",)


def release_python() -> Optional[Path]:
    """$MINDSPORE_RELEASE_PYTHON, else .mindspore-envs/<OLDEST>/bin/python
    in the repository; None when it does not exist."""
    given = os.environ.get("MINDSPORE_RELEASE_PYTHON")
    path = Path(given) if given else REPO / ".mindspore-envs" / OLDEST / "bin" / "python"
    return path if path.exists() else None


def runtime_modules() -> list[Path]:
    """The runtime test modules: every test module under tests/runtime/
    (this one excepted), every ``test_runtime_*.py`` and
    :data:`ALSO_RUNTIME` anywhere under tests/."""
    here = Path(__file__).resolve()
    found = {path for path in TESTS.rglob("test_*.py")
             if path.resolve() != here and ("runtime" in path.relative_to(TESTS).parts[:-1]
                                            or path.name.startswith("test_runtime_")
                                            or path.name in ALSO_RUNTIME)}
    return sorted(found)


def outcomes(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """{"passed"|"skipped"|"failed": [(test id, message)]} from pytest's
    JUnit XML (an error in set-up or teardown counts as failed)."""
    got: dict[str, list[tuple[str, str]]] = {"passed": [], "skipped": [], "failed": []}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kind, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                kind, message = "failed", child.get("message", "")
                break
            if child.tag == "skipped":
                kind, message = "skipped", child.get("message", "")
        got[kind].append((name, message))
    return got


def test_runtime_tests_pass_on_another_release(tmp_path, record_property):
    python = release_python()
    if python is None:
        pytest.skip(f"no MindSpore {OLDEST} environment: build it with tools/make-mindspore-env.sh {OLDEST} "
                    "(or point MINDSPORE_RELEASE_PYTHON at one); .ci/run does")
    probe = subprocess.run([str(python), "-c", "from importlib.metadata import version; import pytest, probe_runtime; "
                            "print(version('mindspore'), probe_runtime.__file__)"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot import mindspore, pytest and probe_runtime: rebuild it with "
                    f"tools/make-mindspore-env.sh ({probe.stderr.strip()[-300:]})")
    release, runtime_file = probe.stdout.split()
    if not Path(runtime_file).resolve().is_relative_to(REPO.resolve()):
        pytest.skip(f"{python} runs another checkout's probe_runtime ({runtime_file}): rebuild it here with "
                    "tools/make-mindspore-env.sh")
    modules = runtime_modules()
    assert modules, "no runtime test modules found under tests/"
    junit = tmp_path / "junit.xml"
    started = time.monotonic()
    run = subprocess.run([str(python), "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider",
                          "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"),
                          "--basetemp", str(tmp_path / "inner"), f"--junitxml={junit}",
                          *map(str, modules)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=3000)
    seconds = time.monotonic() - started
    assert junit.exists(), f"pytest on MindSpore {release} wrote no results:\n{run.stdout[-4000:]}{run.stderr[-4000:]}"
    got = outcomes(junit)
    reasons = sorted({message for _, message in got["skipped"]})
    summary = (f"MindSpore {release} ({python}): {len(got['passed'])} passed, {len(got['skipped'])} skipped, "
               f"{len(got['failed'])} failed in {seconds:.0f} s, {len(modules)} modules")
    record_property("mindspore_release_run", summary)
    record_property("mindspore_release_skips", reasons)
    failed = [name for name, _ in got["failed"]]
    assert run.returncode == 0 and not failed, (
        f"runtime tests failing on MindSpore {release}: {failed}\n{run.stdout[-8000:]}{run.stderr[-2000:]}")
    assert got["passed"], f"nothing passed on MindSpore {release}:\n{run.stdout[-4000:]}"
