"""The pre-commit hook for real: ``pre-commit try-repo <this repo>
probe-lint --all-files`` in a scratch git repository fails on a bad msprobe
config, passes on a good one, and leaves other JSON files alone.

try-repo installs the hook repository at a commit, so the current working
tree (committed or not) is copied into a scratch repository and committed
there first. pre-commit builds a virtual environment and pip-installs the
project into it (from the package index configured for pip): about a
minute, hence ``slow``; it still runs in the default suite.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, config

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}


def pre_commit() -> list[str]:
    beside = Path(sys.executable).parent / "pre-commit"
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "pre_commit"]


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A committed copy of the working tree (tracked and untracked files,
    minus what .gitignore excludes)."""
    target = tmp_path_factory.mktemp("hook-repo")
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO).split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    git("init", "-q", cwd=target)
    git("add", "-A", cwd=target)
    git("commit", "-q", "-m", "snapshot", cwd=target)
    return target


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def try_repo(hook_repo: Path, home: Path, project: Path, hook: str = "probe-lint") -> subprocess.CompletedProcess:
    if not (project / ".git").exists():
        git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(pre_commit() + ["try-repo", str(hook_repo), hook, "--all-files", "--color",
                                          "never", "--verbose"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)


def other_json(project: Path) -> None:
    """JSON files that are not msprobe configs: a model config, a
    MindSpore dump config, a package manifest, a JSON-with-comments file."""
    (project / "model").mkdir()
    (project / "model" / "config.json").write_text(json.dumps({"architectures": ["Bert"], "hidden_size": 768}))
    (project / "ms_dump_config.json").write_text(json.dumps(
        {"common_dump_settings": {"dump_mode": 0, "path": "/tmp/d", "net_name": "Net", "iteration": "0"}}))
    (project / "package.json").write_text('{"name": "x", "level": "L1"}')
    (project / "tsconfig.json").write_text('{\n  // comment\n  "compilerOptions": {},\n}\n')


@pytest.mark.slow
def test_hook_fails_on_a_bad_config(hook_repo, pre_commit_home, tmp_path):
    other_json(tmp_path)
    (tmp_path / "msprobe").mkdir()
    (tmp_path / "msprobe" / "config.json").write_text(json.dumps(config(level="l1"), indent=4))
    (tmp_path / "train_overflow.json").write_text('{"task": "overflow_check", "dump_path": "/d",}')
    proc = try_repo(hook_repo, pre_commit_home, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "probe lint (msprobe config.json)" in out and "Failed" in out
    assert re.search(r'msprobe/config\.json:6:\d+: PL103 \[\*\] error: "l1" is not an allowed level', out), out
    assert "train_overflow.json:1:" in out and "PL001" in out
    for skipped in ("model/config.json", "ms_dump_config.json", "package.json", "tsconfig.json"):
        assert skipped not in out, out


@pytest.mark.slow
def test_hook_passes_on_a_good_config(hook_repo, pre_commit_home, tmp_path):
    other_json(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config(), indent=4))
    proc = try_repo(hook_repo, pre_commit_home, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r"probe lint \(msprobe config\.json\)\.+Passed", out), out


@pytest.mark.slow
def test_fix_hook_fixes_once_then_passes(hook_repo, pre_commit_home, tmp_path):
    """ruff's convention: the first run rewrites the file and fails; once
    the fix is added, the next run passes."""
    other_json(tmp_path)
    bad = json.dumps(config(level="l1", overflow_check={"overflow_number": 3}), indent=4)
    (tmp_path / "config.json").write_text(bad)
    first = try_repo(hook_repo, pre_commit_home, tmp_path, "probe-lint-fix")
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    assert "files were modified by this hook" in out, out
    assert (tmp_path / "config.json").read_text() == bad.replace('"l1"', '"L1"').replace(
        '"overflow_number"', '"overflow_nums"')
    second = try_repo(hook_repo, pre_commit_home, tmp_path, "probe-lint-fix")
    assert second.returncode == 0, second.stdout + second.stderr
    assert (tmp_path / "model" / "config.json").read_text() == json.dumps(
        {"architectures": ["Bert"], "hidden_size": 768})


def test_hook_definition():
    hook, fixer = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert fixer["id"] == "probe-lint-fix" and fixer["entry"] == "probe lint --fix"
    assert {k: v for k, v in fixer.items() if k not in ("id", "name", "description", "entry")} == {
        k: v for k, v in hook.items() if k not in ("id", "name", "description", "entry")}
    assert hook["id"] == "probe-lint" and hook["language"] == "python"
    assert hook["entry"] == "probe lint" and hook["args"] == ["--only-msprobe"]
    assert hook["types"] == ["json"]
    pattern = re.compile(hook["files"])
    for name in ("config.json", "msprobe_config.json", "msprobe/config_ontask.json", "configs/overflow.json",
                 "a/b/dump_config.json", "probe-config.json", "Config.JSON", "mindspeed/npu_datadump/config.json"):
        assert pattern.search(name), name
    for name in ("package.json", "tsconfig.jsonc", "data/train.json", "msprobe/sub/x.txt", "vocab.json"):
        assert not pattern.search(name), name


@pytest.mark.parametrize("text, msprobe", [
    (json.dumps(config()), True),
    ('{"dump_path": "/d"}', True),
    ('{"overflow_check": {"overflow_nums": 1}}', True),
    ('{"levle": "L1", "dump_path": "/d"}', True),
    ('{"level": "l1"}', True),
    ('{"task": "overflow_check", "dump_path": "/d",}', True),  # broken msprobe config: still linted
    ('[{"task": "overflow_check"}]', True),  # PL003
    ('\ufeff{"task": "statistics"}', True),
    ('{"level": "INFO", "handlers": []}', False),
    ('{"architectures": ["Bert"], "hidden_size": 768}', False),
    ('{"common_dump_settings": {"path": "/d"}}', False),
    ('{\n  // comment\n  "compilerOptions": {},\n}', False),
    ('[1, 2, 3]', False),
    ('', False),
    # another program's config sharing only the "task" key (a hunt's finding: every commit failed on PL103)
    ('{"task": "translation", "model": "t5-small", "steps": [1000]}', False),
    ('{"task": {"name": "ner", "labels": 9}}', False),
    ('{"task": "overflow", "rank": [0]}', True),  # near overflow_check: a typo msprobe would refuse
    ('{"task": "Overflow-Check"}', True),
    ('{"task": "translation", "dump_path": "/d"}', True),  # an msprobe key besides: a config
    ('{"task": "translation", "level": "L1"}', True),
    ('{"task": ""}', True),
])
def test_only_msprobe_recognises_msprobe_configs(text, msprobe):
    from msprobe_lint.project.sniff import looks_like_msprobe

    assert looks_like_msprobe(text.encode("utf-8")) is msprobe


def test_only_msprobe_skips_other_json_and_keeps_the_exit_status(tmp_path):
    from conftest import run_probe

    other_json(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config(level="l1")))
    files = ["model/config.json", "ms_dump_config.json", "tsconfig.json"]  # package.json: see `files:`
    proc = run_probe("lint", "--isolated", "--only-msprobe", "-f", "json", *files, cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["diagnostics"] == []
    proc = run_probe("lint", "--isolated", "--only-msprobe", "-f", "json", *files, "config.json", "gone.json",
                     cwd=tmp_path)
    assert proc.returncode == 2
    assert [(d["path"], d["code"]) for d in json.loads(proc.stdout)["diagnostics"]] == [
        ("config.json", "PL103"), ("gone.json", "PL006")]
    # without the flag every file is linted
    assert run_probe("lint", "--isolated", "model/config.json", cwd=tmp_path).returncode == 1
    # a trainer config whose "task" names no msprobe task: skipped by the hook, reported when named plainly
    (tmp_path / "train_config.json").write_text(json.dumps({"task": "translation", "steps": [1000]}))
    proc = run_probe("lint", "--isolated", "--only-msprobe", "-f", "json", "train_config.json", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["diagnostics"] == []
    assert run_probe("lint", "--isolated", "train_config.json", cwd=tmp_path).returncode == 1


def test_only_msprobe_skips_a_json_file_too_big_to_be_a_config(tmp_path):
    """A hunt's finding: the pre-commit hook failed a commit holding a
    16 MB dump.json (PL006, over 10 MiB), which the folder walk skips."""
    from conftest import run_probe

    big = tmp_path / "dump.json"
    big.write_text(json.dumps({"task": "overflow_check", "data": ["x" * 100] * 110_000}))
    assert big.stat().st_size > 10 * 1024 * 1024
    proc = run_probe("lint", "--isolated", "--only-msprobe", "-f", "json", "dump.json", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["diagnostics"] == [], proc.stdout
    proc = run_probe("lint", "--isolated", "-f", "json", "dump.json", cwd=tmp_path)  # named without the flag: said
    assert proc.returncode == 2 and [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["PL006"]
