"""Shared test helpers: paths to the shared cases and tools, and a way to
lint a config given as a dict or text through the library API."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_TOOLS = SHARED / "tools"
SHARED_CASES = SHARED / "cases"


def probe_command() -> list[str]:
    """The `probe` console script of the interpreter running the tests."""
    candidate = Path(sys.executable).parent / "probe"
    if candidate.exists():
        return [str(candidate)]
    return [sys.executable, "-m", "msprobe_lint.cli"]


def run_probe(*args: str, cwd: Optional[Path] = None, env: Optional[dict] = None,
              input: Optional[str] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `probe ARGS...` and capture its output (text)."""
    full_env = dict(os.environ)
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
    from msprobe_lint.api import LintOptions, lint_paths

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
    """The shared cases' base overflow_check config with ``changes``
    applied (a value of None removes the key)."""
    out = dict(BASE)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out
