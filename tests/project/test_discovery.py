"""`probe lint DIR` (discovery.py: which files a folder yields, and why)
and `probe lint -` (standard input, --stdin-filename)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import as_nobody, config, probe_command, run_probe, write_config

from msprobe_lint.project import discovery
from msprobe_lint.lint.api import LintOptions, UsageError, lint_paths, list_files

BAD = config(level="l1")  # PL103: an error


def listing(paths, **options) -> dict[str, tuple[str, str]]:
    """{path: (action, reason)} of list_files, isolated from any pyproject."""
    options.setdefault("isolated", True)
    return {c.path + ("/" if c.folder else ""): (c.action, c.reason)
            for c in list_files([str(p) for p in paths], LintOptions(**options))}


def kept(paths, **options) -> list[str]:
    return [path for path, (action, _) in listing(paths, **options).items() if action == "lint"]


@pytest.fixture
def proj(tmp_path, monkeypatch):
    """A project: configs among other JSON files, folders to prune."""
    root = tmp_path / "proj"
    for folder in ("configs/nested", "models", ".venv/lib", "env", "node_modules/pkg", "__pycache__",
                   ".hidden"):
        (root / folder).mkdir(parents=True)
    write_config(root / "configs", config(), "good.json")
    write_config(root / "configs", BAD, "bad.json")
    write_config(root / "configs/nested", config(seed=1), "deep.json")
    write_config(root / "models", {"architectures": ["Bert"], "hidden_size": 768}, "config.json")
    write_config(root, {"name": "x", "version": "1.0.0"}, "package.json")
    write_config(root, {"version": 1, "root": {"level": "INFO"}}, "logging.json")
    write_config(root / "models", {"task": "statistics", "level": "L1", "framework": "mindspore",
                                   "dump_data_dir": None, "data": {}}, "dump.json")  # msprobe's output
    write_config(root, config(), ".hidden.json")
    write_config(root / ".hidden", config(), "c.json")
    write_config(root / ".venv/lib", config(), "c.json")
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    write_config(root / "env", config(), "c.json")
    write_config(root / "node_modules/pkg", config(), "c.json")
    write_config(root / "__pycache__", config(), "c.json")
    (root / "configs" / "notes.txt").write_text('{"task": "overflow_check"}')
    monkeypatch.chdir(tmp_path)
    return Path("proj")


def test_walk_keeps_msprobe_configs_and_says_why_for_the_rest(proj):
    assert listing([proj]) == {
        "proj/.hidden/": ("skip", "hidden"),
        "proj/.hidden.json": ("skip", "hidden"),
        "proj/.venv/": ("skip", "hidden"),
        "proj/__pycache__/": ("skip", "excluded by default: __pycache__"),
        "proj/configs/bad.json": ("lint", "msprobe config"),
        "proj/configs/good.json": ("lint", "msprobe config"),
        "proj/configs/nested/deep.json": ("lint", "msprobe config"),
        "proj/env/": ("skip", "virtual environment: holds pyvenv.cfg"),
        "proj/logging.json": ("skip", "not an msprobe config"),
        "proj/models/config.json": ("skip", "not an msprobe config"),
        "proj/models/dump.json": ("skip", "not an msprobe config"),
        "proj/node_modules/": ("skip", "excluded by default: node_modules"),
        "proj/package.json": ("skip", "not an msprobe config"),
    }


def test_a_config_named_in_upper_case_is_found_like_config_json(proj):
    """A fresh user's finding: a walk passed over CONFIG.JSON silently,
    where pre-commit (``types: [json]``, and the hook's ``(?i)`` pattern)
    hands it to the lint. The suffix is matched in any case; a name
    merely containing json is not."""
    write_config(proj / "configs", BAD, "CONFIG.JSON")
    write_config(proj / "configs", BAD, "Other.Json")
    write_config(proj / "configs", BAD, "records.jsonl")
    assert kept([proj / "configs"]) == ["proj/configs/CONFIG.JSON", "proj/configs/Other.Json",
                                        "proj/configs/bad.json", "proj/configs/good.json",
                                        "proj/configs/nested/deep.json"]
    shown = run_probe("lint", "--isolated", "--show-files", "proj/configs")
    assert "lint  proj/configs/CONFIG.JSON  (msprobe config)" in shown.stdout.splitlines()
    linted = run_probe("lint", "--isolated", "proj/configs")
    assert linted.returncode == 1 and "proj/configs/CONFIG.JSON:" in linted.stdout
    # a missing GONE.JSON is a config file not found, as gone.json is
    assert run_probe("lint", "--isolated", "GONE.JSON").stdout.startswith(
        "GONE.JSON:1:1: PL006 error: config file not found")


def test_order_is_depth_first_by_name_and_dot_is_not_shown(proj):
    os.chdir(proj)
    assert kept(["."]) == ["configs/bad.json", "configs/good.json", "configs/nested/deep.json"]
    assert kept(["configs/"]) == ["configs/bad.json", "configs/good.json", "configs/nested/deep.json"]


def test_folder_lint_results_and_worst_exit_status(proj):
    run = lint_paths([str(proj)], LintOptions(isolated=True))
    assert [r.path for r in run.results] == ["proj/configs/bad.json", "proj/configs/good.json",
                                             "proj/configs/nested/deep.json"]
    assert run.status == 1
    assert [d.code for d in run.results[0].diagnostics] == ["PL103"]
    (proj / "configs" / "nested" / "deep.json").write_text("{}")
    os.chmod(proj / "configs" / "nested" / "deep.json", 0o644)
    write_config(proj / "configs", b"\xff\xfe{", "broken.json")  # not msprobe-looking: skipped
    # msprobe-looking but not UTF-8: reported (an unreadable one, exit 2: test_unreadable_folder_...)
    write_config(proj / "configs", b'{"task": "overflow_check", "dump_path": "/d\xff"}', "latin1.json")
    run = lint_paths([str(proj)], LintOptions(isolated=True))
    assert run.status == 1
    bad_text = [r for r in run.results if r.path.endswith("latin1.json")]
    assert bad_text and [d.code for d in bad_text[0].diagnostics] == ["PL004"]
    assert "proj/configs/bad.json" in [r.path for r in run.results]  # the walk went on


def test_a_big_data_file_is_skipped_not_reported(proj):
    with open(proj / "models" / "dataset.json", "wb") as handle:
        handle.truncate(11 * 1024 * 1024)  # sparse: over the 10 MiB limit
    got = listing([proj])
    assert got["proj/models/dataset.json"] == ("skip", "over the 10 MiB limit, too big to be an msprobe config")
    assert lint_paths([str(proj)], LintOptions(isolated=True)).status == 1  # bad.json's error, not 2
    named = lint_paths([str(proj / "models" / "dataset.json")], LintOptions(isolated=True))
    assert named.status == 2  # named, it is linted: PL006


def test_broken_links_and_fifos_are_skipped_by_a_walk_and_pl006_when_named(proj):
    (proj / "configs" / "dangling.json").symlink_to("/nonexistent/x.json")
    (proj / "configs" / "link.json").symlink_to("good.json")  # a link to a config is linted
    os.mkfifo(proj / "configs" / "fifo.json")  # opening it would block the walk
    got = listing([proj])
    assert got["proj/configs/dangling.json"] == ("skip", "symbolic link to nothing (broken link)")
    assert got["proj/configs/fifo.json"] == ("skip", "not a regular file (a FIFO, socket or device)")
    assert got["proj/configs/link.json"] == ("lint", "msprobe config")
    assert lint_paths([str(proj)], LintOptions(isolated=True)).status == 1  # bad.json's error, not 2
    for name in ("dangling.json", "fifo.json"):
        named = lint_paths([str(proj / "configs" / name)], LintOptions(isolated=True))
        assert named.status == 2 and named.results[0].diagnostics[0].code == "PL006"


def test_named_files_are_always_linted(proj):
    model = str(proj / "models" / "config.json")
    run = lint_paths([model], LintOptions(isolated=True))
    assert run.status == 1 and run.results[0].diagnostics  # not an msprobe config, but named
    hidden = str(proj / ".venv" / "lib" / "c.json")
    assert lint_paths([hidden], LintOptions(isolated=True)).results[0].path == hidden
    # --only-msprobe (pre-commit) skips named files by content too
    assert listing([model], only_msprobe=True) == {model: ("skip", "not an msprobe config, --only-msprobe")}
    # a named file inside a walked folder is linted once
    both = lint_paths([str(proj / "configs" / "bad.json"), str(proj / "configs")], LintOptions(isolated=True))
    assert [r.path for r in both.results].count("proj/configs/bad.json") == 1


def test_a_named_hidden_or_venv_folder_is_walked(proj):
    assert kept([proj / ".venv"]) == ["proj/.venv/lib/c.json"]
    assert kept([proj / "env"]) == ["proj/env/c.json"]


def test_a_named_ignored_or_excluded_folder_is_walked_and_filtered_below(proj):
    """ruff's rule: a path named on the command line is linted whatever
    .gitignore or exclude says about it; what is below it is filtered."""
    (proj / ".git").mkdir()
    (proj / ".gitignore").write_text("configs/\n*.bak.json\nbuild\n")
    write_config(proj / "configs", config(), "old.bak.json")
    (proj / "configs" / "nested" / "build").mkdir()
    write_config(proj / "configs" / "nested" / "build", config(), "c.json")
    assert "proj/configs/good.json" not in kept([proj])
    walked = ["proj/configs/bad.json", "proj/configs/good.json", "proj/configs/nested/deep.json"]
    assert kept([proj / "configs"]) == walked
    got = listing([proj / "configs"])
    assert got["proj/configs/old.bak.json"][1].endswith(".gitignore pattern '*.bak.json'")
    assert got["proj/configs/nested/build/"][1].endswith(".gitignore pattern 'build'")
    assert kept([proj / "configs" / "nested"]) == ["proj/configs/nested/deep.json"]  # below an ignored folder
    assert kept([proj / "configs" / "nested" / "build"]) == ["proj/configs/nested/build/c.json"]
    # an exclude pattern naming the folder itself: the same
    assert kept([proj / "configs"], exclude=("configs",)) == walked
    assert kept([proj / "configs"], extend_exclude=("proj/configs/,nested/",)) == walked[:2]
    # as a named file in that folder is linted
    assert lint_paths([str(proj / "configs" / "old.bak.json")], LintOptions(isolated=True)).results
    proc = run_probe("lint", "--isolated", "proj/configs")
    assert proc.returncode == 1 and "PL103" in proc.stdout and proc.stderr == ""


def test_gitignore_nested_and_negation(proj):
    (proj / ".gitignore").write_text("# generated\nconfigs/nested/\n*.bak.json\n")
    write_config(proj / "configs", config(), "old.bak.json")
    (proj / "configs" / ".gitignore").write_text("bad.json\n!old.bak.json\n")
    got = listing([proj])
    assert got["proj/configs/nested/"] == ("skip", "ignored by proj/.gitignore pattern 'configs/nested/'")
    assert got["proj/configs/bad.json"] == ("skip", "ignored by proj/configs/.gitignore pattern 'bad.json'")
    # the deeper .gitignore takes old.bak.json back
    assert kept([proj]) == ["proj/configs/good.json", "proj/configs/old.bak.json"]
    # the lint agrees with the listing
    run = lint_paths([str(proj)], LintOptions(isolated=True))
    assert [r.path for r in run.results] == ["proj/configs/good.json", "proj/configs/old.bak.json"]


def test_a_nested_repository_has_its_own_ignore_rules_as_in_git(proj):
    (proj / ".gitignore").write_text("cfg*.json\n")
    inner = proj / "inner"
    (inner / ".git" / "info").mkdir(parents=True)  # a nested repository (not a submodule)
    (inner / ".git" / "info" / "exclude").write_text("local.json\n")
    write_config(proj, config(), "cfg0.json")
    write_config(inner, config(), "cfg1.json")
    write_config(inner, config(), "local.json")
    got = listing([proj])
    assert got["proj/cfg0.json"][0] == "skip"                 # the outer .gitignore, in the outer tree
    assert got["proj/inner/cfg1.json"] == ("lint", "msprobe config")  # not inside the nested one
    assert got["proj/inner/local.json"][0] == "skip"          # the nested repository's own exclude
    assert kept([inner]) == ["proj/inner/cfg1.json"]          # the same walked from inside


def test_gitignore_of_parent_folders_applies_inside_a_git_work_tree(proj):
    (proj / ".gitignore").write_text("bad.json\n")
    (proj / ".git" / "info").mkdir(parents=True)
    assert kept([proj / "configs"]) == ["proj/configs/good.json", "proj/configs/nested/deep.json"]
    (proj / ".git" / "info" / "exclude").write_text("deep.json\n")
    assert kept([proj / "configs"]) == ["proj/configs/good.json"]


def test_gitignore_is_cited_relative_to_the_current_folder_when_under_it(proj, tmp_path):
    (proj / ".git" / "info").mkdir(parents=True)
    (proj / ".git" / "info" / "exclude").write_text("deep.json\n")
    (proj / ".gitignore").write_text("bad.json\n")
    (proj / "configs" / ".gitignore").write_text("good.json\n")
    top = tmp_path / "proj"

    def reasons(path):
        got = listing([path])
        return [got[f"{path}/{name}"][1].split(" pattern ")[0]
                for name in ("configs/bad.json", "configs/good.json", "configs/nested/deep.json")]

    expected = ["ignored by proj/.gitignore", "ignored by proj/configs/.gitignore",
                "ignored by proj/.git/info/exclude"]
    assert reasons("proj") == expected
    assert reasons(str(top)) == expected  # named by its absolute path: the same
    os.chdir(proj / "models")  # from a folder beside: absolute
    assert reasons("..") == [f"ignored by {top}/.gitignore", f"ignored by {top}/configs/.gitignore",
                             f"ignored by {top}/.git/info/exclude"]
    os.chdir(top / "configs")
    got = listing(["."])
    assert got["bad.json"][1] == f"ignored by {top}/.gitignore pattern 'bad.json'"
    assert got["good.json"][1] == "ignored by .gitignore pattern 'good.json'"


def test_parent_gitignore_outside_a_work_tree_is_not_read(proj):
    (proj / ".gitignore").write_text("bad.json\n")
    assert kept([proj / "configs"]) == ["proj/configs/bad.json", "proj/configs/good.json",
                                        "proj/configs/nested/deep.json"]


def project_toml(folder: Path, body: str) -> None:
    (folder / "pyproject.toml").write_text("[tool.probe-lint]\n" + body)


def test_exclude_and_extend_exclude_settings(proj):
    project_toml(proj, 'extend-exclude = ["nested/"]\n')
    assert kept([proj], isolated=False) == ["proj/configs/bad.json", "proj/configs/good.json"]
    got = listing([proj], isolated=False)
    assert got["proj/configs/nested/"] == ("skip", "excluded by pyproject.toml extend-exclude pattern 'nested/'")
    assert got["proj/.venv/"] == ("skip", "hidden")  # extend keeps the default
    # exclude replaces the default: hidden folders are walked again (a venv never is)
    project_toml(proj, 'exclude = ["/configs/bad.json"]\n')
    assert kept([proj], isolated=False) == [
        "proj/.hidden/c.json", "proj/.hidden.json", "proj/.venv/lib/c.json", "proj/__pycache__/c.json",
        "proj/configs/good.json", "proj/configs/nested/deep.json", "proj/node_modules/pkg/c.json"]


def test_exclude_on_the_command_line(proj):
    project_toml(proj, 'extend-exclude = ["nested/"]\n')
    # --extend-exclude adds (relative to the current folder), comma-separated
    assert kept([proj], isolated=False, extend_exclude=("proj/configs/good.json,x",)) == ["proj/configs/bad.json"]
    # --exclude replaces the default and the table's exclude, keeps its extend-exclude
    got = kept([proj], isolated=False, exclude=("__pycache__/,.hidden*",))
    assert got == ["proj/.venv/lib/c.json", "proj/configs/bad.json", "proj/configs/good.json",
                   "proj/node_modules/pkg/c.json"]
    proc = run_probe("lint", "proj", "--exclude", "configs", "--show-files")
    assert proc.returncode == 0 and "skip  proj/configs/  (excluded by --exclude pattern 'configs')" in proc.stdout


def test_absolute_exclude_patterns(proj, tmp_path):
    """An absolute pattern under the folder it is matched against is taken
    relative to it; elsewhere it matches nothing."""
    good = str(tmp_path / "proj" / "configs" / "good.json")
    nested = str(tmp_path / "proj" / "configs" / "nested") + "/"
    assert kept([proj], extend_exclude=(good,)) == ["proj/configs/bad.json", "proj/configs/nested/deep.json"]
    assert listing([proj], extend_exclude=(good,))["proj/configs/good.json"] == (
        "skip", f"excluded by --extend-exclude pattern {good!r}")
    assert kept([proj], exclude=(f"{nested},!{good}",)) == [
        "proj/.hidden/c.json", "proj/.hidden.json", "proj/.venv/lib/c.json", "proj/__pycache__/c.json",
        "proj/configs/bad.json", "proj/configs/good.json", "proj/node_modules/pkg/c.json"]
    # a walked folder outside the current one: taken relative to that folder
    os.chdir(proj / "models")
    assert kept([tmp_path / "proj" / "configs"], extend_exclude=(good,)) == [
        f"{tmp_path}/proj/configs/bad.json", f"{tmp_path}/proj/configs/nested/deep.json"]
    assert kept(["../configs"], extend_exclude=(nested,)) == ["../configs/bad.json", "../configs/good.json"]
    # in [tool.probe-lint], relative to the pyproject.toml's folder
    os.chdir(tmp_path)
    project_toml(proj, f'extend-exclude = ["{good}"]\n')
    assert "proj/configs/good.json" not in kept([proj], isolated=False)
    # nowhere under the walked folders: matches nothing, no error
    assert kept([proj / "configs"], extend_exclude=("/elsewhere/configs/good.json", "/")) == [
        "proj/configs/bad.json", "proj/configs/good.json", "proj/configs/nested/deep.json"]
    proc = run_probe("lint", "--isolated", "proj/configs", "--extend-exclude", "/nowhere/x.json,/")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("vcs", [".git", ".hg", ".svn"])
def test_version_control_folders_are_skipped_whatever_exclude_says(proj, vcs):
    (proj / vcs / "objects").mkdir(parents=True)
    write_config(proj / vcs / "objects", config(), "c.json")
    reason = ("skip", f"version control folder: {vcs}")
    assert listing([proj])[f"proj/{vcs}/"] == reason
    assert listing([proj], exclude=("nothing",))[f"proj/{vcs}/"] == reason
    project_toml(proj, 'exclude = []\n')
    assert listing([proj], isolated=False)[f"proj/{vcs}/"] == reason
    assert f"proj/{vcs}/objects/c.json" not in kept([proj], exclude=("nothing",))
    # named on the command line, it is walked
    assert kept([proj / vcs]) == [f"proj/{vcs}/objects/c.json"]


def test_include_and_extend_include_settings(proj):
    write_config(proj / "configs", config(), "probe.cfg")
    project_toml(proj, 'extend-include = ["*.cfg"]\n')
    assert "proj/configs/probe.cfg" in kept([proj], isolated=False)
    project_toml(proj, 'include = ["configs/*.json"]\n')
    assert kept([proj], isolated=False) == ["proj/configs/bad.json", "proj/configs/good.json"]


@pytest.mark.parametrize("body, message", [
    ('exclude = "build/"\nextend-exclude = [1]\n', "extend-exclude must be a list of non-empty file patterns"),
    ('include = [""]\n', "include must be a list of non-empty file patterns"),
])
def test_bad_pattern_settings_are_usage_errors(proj, body, message):
    project_toml(proj, body)
    with pytest.raises(UsageError, match=message):
        list_files([str(proj)], LintOptions())
    proc = run_probe("lint", "proj")
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_symlink_loop_is_not_followed_and_ends_when_followed(proj):
    (proj / "configs" / "nested" / "up").symlink_to("../..", target_is_directory=True)
    (proj / "configs" / "again").symlink_to("nested", target_is_directory=True)
    got = listing([proj])
    for link in ("proj/configs/nested/up/", "proj/configs/again/"):
        assert got[link] == ("skip", "symbolic link to a folder, not followed without --follow-symlinks")
    followed = listing([proj], follow_symlinks=True)
    # again/ (a link to nested/) comes first by name: nested/ is then walked already, up/ leads to the top
    walked = "already walked: a symbolic link loop or a second link"
    assert followed["proj/configs/nested/"] == ("skip", walked)
    assert followed["proj/configs/again/up/"] == ("skip", walked)
    assert [p for p, (a, _) in followed.items() if a == "lint"] == [
        "proj/configs/again/deep.json", "proj/configs/bad.json", "proj/configs/good.json"]
    proc = subprocess.run(probe_command() + ["lint", "--isolated", "--follow-symlinks", "proj"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    # a link to a folder outside is walked only when followed
    outside = proj.parent / "outside"
    outside.mkdir()
    write_config(outside, config(), "x.json")
    (proj / "linked").symlink_to(outside.resolve(), target_is_directory=True)
    assert "proj/linked/x.json" not in kept([proj])
    assert "proj/linked/x.json" in kept([proj], follow_symlinks=True)


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to switch to nobody")
def test_unreadable_folder_is_reported_once_and_the_walk_goes_on(open_tmp):
    base = open_tmp / "proj"
    (base / "configs" / "nested").mkdir(parents=True)
    for folder in (base, base / "configs", base / "configs" / "nested"):
        os.chmod(folder, 0o755)
    for name, data in (("good.json", config()), ("bad.json", BAD)):
        os.chmod(write_config(base / "configs", data, name), 0o644)
    os.chmod(write_config(base / "configs" / "nested", config(), "deep.json"), 0o644)
    secret = base / "configs" / "secret"
    secret.mkdir(mode=0o700)  # root's, closed to others
    write_config(secret, config(), "c.json")
    os.chmod(base / "configs" / "good.json", 0o600)  # a config nobody cannot read

    from msprobe_lint.lint.reporters.text import render

    render(lint_paths([str(base)], LintOptions(isolated=True)).results)  # as root first: nobody cannot import

    def lint_as_nobody():
        run = lint_paths([str(base)], LintOptions(isolated=True))
        # a helper's finding: an unreadable file found by the walk and named again was reported twice
        again = lint_paths([str(base), str(base / "configs" / "good.json")], LintOptions(isolated=True))
        return {"status": run.status, "again": [r.path for r in again.results],
                "summary": [ln for ln in render(run.results).splitlines() if ln.startswith("Found")],
                "results": [(r.path, r.unreadable, [(d.code, d.message) for d in r.diagnostics])
                            for r in run.results],
                "listing": [(c.path, c.action, c.reason)
                            for c in list_files([str(base)], LintOptions(isolated=True))]}

    got = as_nobody(lint_as_nobody)
    assert isinstance(got, dict) and "error" not in got, got
    assert got["status"] == 2
    assert got["summary"] == ["Found 3 errors in 2 of 3 files and 1 folder that could not be read."]
    assert got["again"] == [r[0] for r in got["results"]]
    assert [(p, bad) for p, bad, _ in got["results"]] == [
        (f"{base}/configs/bad.json", False), (f"{base}/configs/good.json", True),
        (f"{base}/configs/nested/deep.json", False), (f"{base}/configs/secret", True)]
    assert [codes for p, bad, codes in got["results"] if bad] == [
        [["PL006", "config permission denied"]], [["PL006", "folder cannot be read: permission denied"]]]
    assert [c for c in got["listing"] if c[1] == "unreadable"] == [
        [f"{base}/configs/good.json", "unreadable", "config permission denied"],
        [f"{base}/configs/secret", "unreadable", "folder cannot be read: permission denied"]]


def test_show_files_lists_and_lints_nothing(proj):
    proc = run_probe("lint", "--isolated", "--show-files", "proj", "proj/models/config.json")
    assert proc.returncode == 0  # bad.json has an error, but nothing is linted
    lines = proc.stdout.splitlines()
    assert "lint  proj/configs/bad.json  (msprobe config)" in lines
    assert "skip  proj/.venv/  (hidden)" in lines
    assert "skip  proj/env/  (virtual environment: holds pyvenv.cfg)" in lines
    assert "skip  proj/package.json  (not an msprobe config)" in lines
    assert lines[-1] == "lint  proj/models/config.json  (named on the command line)"
    assert "PL103" not in proc.stdout
    as_json = run_probe("lint", "--isolated", "--show-files", "-f", "json", "proj")
    files = json.loads(as_json.stdout)["files"]
    assert {"path": "proj/configs/good.json", "action": "lint", "reason": "msprobe config",
            "folder": False} in files
    assert {"path": "proj/node_modules", "action": "skip", "reason": "excluded by default: node_modules",
            "folder": True} in files
    stdin = run_probe("lint", "--isolated", "--show-files", "-", "--stdin-filename", "x.json", input="{}")
    assert stdin.stdout == "lint  x.json  (standard input)\n"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_walked_file_name_that_is_not_utf8(tmp_path, fmt):
    (tmp_path / os.fsdecode(b"bad\xff.json")).write_text(json.dumps(BAD))
    proc = subprocess.run(probe_command() + ["lint", "--isolated", "-f", fmt, "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "PL103" in proc.stdout
    if fmt == "sarif":
        (result,) = json.loads(proc.stdout)["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad%FF.json"


def test_a_folder_without_configs_passes_with_a_warning(proj):
    proc = run_probe("lint", "--isolated", "proj/models")
    assert proc.returncode == 0 and "All checks passed (0 files)." in proc.stdout
    assert proc.stderr == ("probe: warning: no msprobe config found in proj/models; "
                           "--show-files lists what was skipped and why\n")
    assert run_probe("lint", "--isolated", "proj/configs").stderr == ""


@pytest.mark.parametrize("path", ["nope/", "nope", "proj/gone/", "proj/configs/gone"])
def test_a_missing_folder_or_a_path_not_known_to_be_a_file(proj, path):
    proc = run_probe("lint", "--isolated", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stdout.startswith(f"{path}:1:1: PL006 error: no such file or folder"), proc.stdout
    assert listing([path]) == {path: ("unreadable", "no such file or folder")}
    shown = run_probe("lint", "--isolated", "--show-files", path)
    assert shown.returncode == 2 and shown.stdout == f"error {path}  (no such file or folder)\n"
    # a missing .json is a config file that is not there; so is any path taken for a file (probe run)
    assert run_probe("lint", "--isolated", "gone.json").stdout.startswith(
        "gone.json:1:1: PL006 error: config file not found")
    (result,) = lint_paths([path], LintOptions(isolated=True), walk=False).results
    assert [d.message for d in result.diagnostics] == ["config file not found"]


def test_output_file_found_by_the_walk_is_not_overwritten(proj):
    target = proj / "configs" / "good.json"
    before = target.read_text()
    proc = run_probe("lint", "--isolated", "proj", "-o", str(target))
    assert proc.returncode == 2 and "would be overwritten" in proc.stderr
    assert target.read_text() == before


def test_probe_run_still_wants_one_config_file(tmp_path):
    folder = tmp_path / "config.json"
    folder.mkdir()
    write_config(folder, config(), "inner.json")
    proc = run_probe("run", str(folder), "--isolated", "--", sys.executable, "-c", "print('started')")
    assert proc.returncode == 2 and "PL006" in proc.stderr and "started" not in proc.stdout


# ---------------------------------------------------------------------------
# Standard input

STDIN_BAD = json.dumps(BAD, indent=4)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_stdin_in_every_format(tmp_path, fmt):
    plain = run_probe("lint", "--isolated", "-f", fmt, "-", input=STDIN_BAD, cwd=tmp_path)
    named = run_probe("lint", "--isolated", "-f", fmt, "-", "--stdin-filename", "cfg/my.json", input=STDIN_BAD,
                      cwd=tmp_path)
    for proc, name in ((plain, "-"), (named, "cfg/my.json")):
        assert proc.returncode == 1 and "Traceback" not in proc.stderr and "PL103" in proc.stdout
        if fmt == "text":
            assert proc.stdout.startswith(f"{name}:6:14: PL103 [*] error")
            assert '   6 |     "level": "l1"' in proc.stdout  # the source line comes from the input
        elif fmt == "json":
            assert [(d["path"], d["line"]) for d in json.loads(proc.stdout)["diagnostics"]] == [(name, 6)]
        elif fmt == "sarif":
            (result,) = json.loads(proc.stdout)["runs"][0]["results"]
            assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == name
        else:
            assert proc.stdout.startswith(f"::error file={name},line=6,col=14")


def test_stdin_filename_alone_reads_stdin_and_a_file_of_that_name_is_not_read(tmp_path):
    write_config(tmp_path, '{"task": "overflow_check", "dump_path": "/d", "rank": [], "step": [],\n'
                           '"level": "L1", "other": 1}', "my.json")
    proc = run_probe("lint", "--isolated", "--stdin-filename", "my.json", input=STDIN_BAD, cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith("my.json:6:14: PL103")
    assert '"level": "l1"' in proc.stdout and '"other"' not in proc.stdout


def test_stdin_filename_finds_the_settings_and_per_file_ignores(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    project_toml(sub, 'framework = "mindspore"\nmode = "graph"\njit-level = "O1"\nmindspore-version = "2.6.0"\n'
                      'world-size = 1\n[tool.probe-lint.per-file-ignores]\n"skip/*.json" = ["PL202"]\n')
    data = json.dumps(config(level="L2", rank=[0]))
    # the pyproject.toml is found from the name's folder, not the current one:
    # its context makes L2 in GRAPH_MODE O1 PL202 and rank [0] with one process PL304
    proc = run_probe("lint", "-", "--stdin-filename", "sub/other/c.json", "-f", "json", input=data, cwd=tmp_path)
    found = json.loads(proc.stdout)["diagnostics"]
    assert proc.returncode == 1 and sorted(d["code"] for d in found) == ["PL202", "PL304"]
    assert all("pyproject.toml [tool.probe-lint]" in d["message"] for d in found)
    assert {d["path"] for d in found} == {"sub/other/c.json"}
    # per-file-ignores match the name
    proc = run_probe("lint", "-", "--stdin-filename", "sub/skip/c.json", "-f", "json", input=data, cwd=tmp_path)
    assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["PL304"]
    # without a name: the current folder's settings (none here)
    plain = run_probe("lint", "-", "-f", "json", input=data, cwd=tmp_path)
    assert plain.returncode == 0 and "pyproject.toml" not in plain.stdout


@pytest.mark.parametrize("data, code", [
    (b"\xff\xfe\x00{\x80\x81", "PL004"),  # binary, not UTF-8
    (b"", "PL001"),  # empty
    (b"\xef\xbb\xbf" + json.dumps(config()).encode(), "PL004"),  # a byte-order mark
    (b"   \n", "PL001"),
    (b"[1, 2]", "PL003"),
])
def test_bad_stdin_gives_a_diagnostic_not_a_traceback(data, code):
    proc = subprocess.run(probe_command() + ["lint", "--isolated", "-"], input=data, capture_output=True,
                          timeout=60)
    assert b"Traceback" not in proc.stderr
    assert proc.stdout.startswith(b"-:") and f" {code} ".encode() in proc.stdout
    assert proc.returncode == 1


def test_check_fs_on_stdin_looks_at_no_file_named_dash(tmp_path):
    dash = write_config(tmp_path, config(), "-")
    dash.chmod(0o666)  # PL408 if it were looked at
    data = json.dumps(config(dump_path=str(tmp_path / "dump")))
    proc = run_probe("lint", "--isolated", "--check-fs", "-", input=data, cwd=tmp_path)
    assert proc.returncode == 0 and "PL408" not in proc.stdout, proc.stdout
    named = run_probe("lint", "--isolated", "--check-fs", "-", "--stdin-filename", "-", input=data, cwd=tmp_path)
    assert named.returncode == 0 and "PL408" not in named.stdout


def test_closed_stdin_is_pl006():
    proc = subprocess.run(probe_command() + ["lint", "--isolated", "-"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stdout.startswith("-:1:1: PL006 error: config cannot be read: standard input is closed")


def test_stdin_and_files_together_and_the_worst_status(tmp_path):
    good = write_config(tmp_path, config(), "good.json")
    proc = run_probe("lint", "--isolated", str(good), "-", str(tmp_path / "gone.json"), "-f", "json",
                     input=STDIN_BAD)
    assert proc.returncode == 2
    assert [(d["path"], d["code"]) for d in json.loads(proc.stdout)["diagnostics"]] == [
        ("-", "PL103"), (str(tmp_path / "gone.json"), "PL006")]


@pytest.mark.parametrize("args, message", [
    (["-", "-"], "- (standard input) given more than once"),
    (["a.json", "--stdin-filename", "x.json"], "--stdin-filename names standard input; add - to the paths"),
    ([], "give at least one PATH"),
])
def test_stdin_usage_errors(tmp_path, args, message):
    proc = run_probe("lint", "--isolated", *args, input="{}", cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_read_stdin_is_the_one_reader():
    import io

    from msprobe_lint.lint.loader import MAX_BYTES, read_stdin

    source = read_stdin("c.json", io.BytesIO(b'{"task": "tensor"}'))
    assert (source.name, source.raw, source.reason) == ("c.json", b'{"task": "tensor"}', None)
    assert read_stdin(None, io.BytesIO(b"")).name == "-"
    big = read_stdin(None, io.BytesIO(b" " * (MAX_BYTES + 1)))
    assert big.raw is None and "10 MiB" in (big.reason or "")

    class Broken(io.RawIOBase):
        def read(self, size=-1):
            raise OSError(5, "Input/output error")

    broken = read_stdin(None, Broken())
    assert broken.raw is None and "Input/output error" in (broken.reason or "")


def test_discover_library_api_defaults(proj):
    found = discovery.discover([str(proj / "configs")])
    assert [c.path for c in found if c.action == "lint"] == [
        "proj/configs/bad.json", "proj/configs/good.json", "proj/configs/nested/deep.json"]
    assert all(c.raw for c in found if c.action == "lint")  # read once, handed to the lint
    lint_only = discovery.discover([str(proj)], skipped=False)
    assert {c.path for c in lint_only if c.action == "lint"} == {c.path for c in discovery.discover([str(proj)])
                                                                 if c.action == "lint"}
    assert "proj/package.json" not in [c.path for c in lint_only]
    assert discovery.show_files(discovery.discover(["-"], stdin_filename="a.json")) == \
        "lint  a.json  (standard input)\n"


# ---------------------------------------------------------------------------
# The content test's shortcuts (sniff.py) against its plain definition

FRAGMENTS = ['{', '}', '[', ']', ',', ':', ' ', '\n', '\t', '\f', '"task"', '"dump_path"', '"level"', '"tensor"',
             '"statistics"', '"L1"', '"l0"', '"INFO"', '"mix"', '"debug"', '"x"', '1', 'null', '"data"',
             '"dump_data_dir"', '"t\\u0061sk"', '\ufeff', '\xa0', '"\\""', 'true', '"é"', '"exec_range"',
             '"save_child"', '\uff1a', '\u201c', '\u201d', 'task', '"acc_check"', "'task'", "'level'", "'L1'", '\x00',
             '\ufffe']


def test_sniff_shortcuts_agree_with_the_plain_test():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from msprobe_lint.project.sniff import looks_like_msprobe, parsed_verdict

    @settings(max_examples=3000, deadline=None, derandomize=True)
    @given(st.lists(st.sampled_from(FRAGMENTS), max_size=14), st.booleans())
    def check(parts, latin1):
        raw = "".join(parts).encode("latin-1" if latin1 else "utf-8", errors="replace")
        assert looks_like_msprobe(raw) is parsed_verdict(raw), raw

    check()
    for raw in (b'{"task": "x"}', b'\xef\xbb\xbf {"dump_path": 1, "a": [}', b'{"task": "s", "level": "L1", '
                b'"dump_data_dir": null, "data": {}}', b'{"a": {"task": 1}}', b'{"level": "DEBUG"}',
                b'{"t\\u0061sk": 1}', b'[{"task": 1}]', '{"task"\uff1a 1}'.encode(), '{\u201ctask\u201d: 1}'.encode(),
                b'{"exec_range": "all", "ids": ""}', '{"a"\uff1a 1}'.encode()):
        assert looks_like_msprobe(raw) is parsed_verdict(raw), raw


@pytest.mark.parametrize("raw", [
    json.dumps(config()).encode("utf-16"), json.dumps(config()).encode("utf-16-le"),
    json.dumps(config()).encode("utf-16-be"), json.dumps(config()).encode("utf-32"),
    b"{'task': 'overflow_check', 'dump_path': '/d'}",  # Python's repr of the dict, not JSON
])
def test_configs_msprobe_cannot_read_are_still_configs(raw):
    """A folder walk, --only-msprobe and the pre-commit hook skipped a
    config saved as UTF-16 and one written with single quotes as "not an
    msprobe config", so the hook passed files msprobe cannot read."""
    from msprobe_lint.project.sniff import looks_like_msprobe

    assert looks_like_msprobe(raw)
    assert not looks_like_msprobe('{"name": "bert", "level": "INFO"}'.encode("utf-16"))
    # a JSON data file whose strings hold Python text is valid JSON, and no config (a reviewer's case)
    assert not looks_like_msprobe(b'[{"instruction": "write code", "output": "cfg = {\'task\': \'ner\'}"}]')
