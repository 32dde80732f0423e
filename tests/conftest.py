"""Shared test helpers: paths to the test data and to the optional shared
cases and tools, and a way to lint a config given as a dict or text through
the library API.

``../shared`` (the project's shared case collection beside the repository)
is an extra, never a requirement: tests marked ``@pytest.mark.shared`` run
its cases or tools and are skipped, with one reason, when it is absent; CI
has it and runs them. Everything else reads ``tests/data`` and
``tests/cases`` only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
REAL = DATA / "real"                      # real configs with their source (meta.json)
SARIF_SCHEMA = DATA / "sarif" / "sarif-schema-2.1.0.json"
SHARED = REPO.parent / "shared"
SHARED_TOOLS = SHARED / "tools"
SHARED_CASES = SHARED / "cases"
SHARED_MISSING = (f"needs ../shared (the shared case collection beside the repository, at {SHARED}); "
                  "absent here, as in a plain clone: these extras run in CI")


def pytest_collection_modifyitems(config, items):
    """Skip the ``shared``-marked tests when ../shared is absent (CI sets
    PROBE_REQUIRE_SHARED=1: there its absence stops the run instead)."""
    if SHARED_CASES.is_dir() and SHARED_TOOLS.is_dir():
        return
    if os.environ.get("PROBE_REQUIRE_SHARED") and any(item.get_closest_marker("shared") for item in items):
        raise pytest.UsageError(f"PROBE_REQUIRE_SHARED is set but {SHARED} has no cases/ and tools/")
    skip = pytest.mark.skip(reason=SHARED_MISSING)
    for item in items:
        if item.get_closest_marker("shared"):
            item.add_marker(skip)


def pytest_runtest_setup(item):
    """``@pytest.mark.cpu_kernel(function, dtype)``: skip the test, saying
    why, when this MindSpore cannot run ``mindspore.ops.<function>`` on
    ``dtype`` (a capability tried once, never a version number)."""
    for mark in item.iter_markers("cpu_kernel"):
        from runtime_support import missing_kernel

        reason = missing_kernel(*mark.args, **mark.kwargs)
        if reason:
            pytest.skip(reason)


def pytest_terminal_summary(terminalreporter):
    """The counts of the runtime tests run on other MindSpore releases
    (``tests/runtime/test_mindspore_releases.py`` records them), a section
    of their own in the summary, skip reasons included."""
    lines = []
    for kind in ("passed", "failed"):
        for report in terminalreporter.stats.get(kind, []):
            props = dict(getattr(report, "user_properties", ()))
            if report.when == "call" and "mindspore_release_run" in props:
                lines.append(props["mindspore_release_run"])
                lines.extend(f"  skipped: {reason}" for reason in props.get("mindspore_release_skips", ()))
    if lines:
        terminalreporter.write_sep("-", "MindSpore releases")
        for line in lines:
            terminalreporter.write_line(line)


def probe_command() -> list[str]:
    """The `probe` console script of the interpreter running the tests."""
    candidate = Path(sys.executable).parent / "probe"
    if candidate.exists():
        return [str(candidate)]
    return [sys.executable, "-m", "msprobe_lint"]


def clean_environ() -> dict:
    """os.environ without the MINDSPORE_DUMP_CONFIG that an in-process
    debugger of an earlier test set for its replay dump (a child would read
    it and dump into this process's scratch folder)."""
    env = dict(os.environ)
    if os.path.basename(os.path.dirname(env.get("MINDSPORE_DUMP_CONFIG", ""))).startswith("probe_l2_"):
        del env["MINDSPORE_DUMP_CONFIG"]
    return env


def run_probe(*args: str, cwd: Optional[Path] = None, env: Optional[dict] = None,
              input: Optional[str] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `probe ARGS...` and capture its output (text)."""
    full_env = clean_environ()
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run(probe_command() + list(args), capture_output=True, text=True, cwd=cwd,
                          env=full_env, input=input, timeout=timeout)


def write_config(directory: Path, config: Any, name: str = "config.json") -> Path:
    """Write ``config`` (a dict/list, dumped with indent 4, or raw text or
    bytes) to ``directory/name``."""
    path = directory / name
    if isinstance(config, bytes):
        path.write_bytes(config)
    elif isinstance(config, str):
        path.write_text(config, encoding="utf-8")
    else:
        path.write_text(json.dumps(config, indent=4, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def lint(tmp_path):
    """``lint(config, **options) -> list[Diagnostic]`` through the library
    API, isolated from the environment unless ``isolated=False``."""
    from msprobe_lint.lint.api import LintOptions, lint_paths

    def run(config: Any, name: str = "config.json", **options: Any):
        path = write_config(tmp_path, config, name)
        options.setdefault("isolated", True)
        result = lint_paths([str(path)], LintOptions(**options))
        return result.results[0].diagnostics

    return run


def codes(diagnostics) -> list[str]:
    """The codes of ``diagnostics``, in order."""
    return [d.code for d in diagnostics]


BASE = {"task": "overflow_check", "dump_path": "/home/data_dump", "rank": [], "step": [], "level": "L1"}


def config(**changes: Any) -> dict:
    """The base overflow_check config most lint tests start from, with ``changes``
    applied (a value of None removes the key)."""
    out = dict(BASE)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


@pytest.fixture
def open_tmp():
    """A private folder (0755, not under pytest's 0700 tmp root, so an
    unprivileged child can reach it); removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="probe-test-", dir="/tmp" if os.path.isdir("/tmp") else None))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_nobody(function: Any) -> Any:
    """``function()`` run in a forked child that drops to the unprivileged
    user ``nobody`` for real (the tests run as root, for whom permissions
    do not apply); its JSON-able result comes back (``{"error": ...}`` when
    it raised). Skips the test when there is no such user."""
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, report, exit
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.write(write, json.dumps(function()).encode())
            os._exit(0)
        except BaseException as err:  # pragma: no cover - reported to the parent
            os.write(write, json.dumps({"error": repr(err)}).encode())
            os._exit(1)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b"null")
