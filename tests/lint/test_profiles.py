"""Release profiles: configs judged by the mindstudio-probe release they
target (8.1, 8.3, 26.x), per-release schemas generated from one source,
and `probe migrate`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import DATA, REAL, REPO, config, run_probe, write_config
from msprobe_lint.lint.schema import fast as fastschema
from msprobe_lint.lint.api import LintOptions, lint_paths
from msprobe_lint.lint.profiles import PROFILES, for_version
from msprobe_lint.lint.rules.schema import _validator

DOCS = DATA / "msprobe_docs"
STRUCTURE = {"PL101", "PL103", "PL105"}  # the verdicts a profile decides


def _codes(path, **options):
    options.setdefault("isolated", True)
    return [d.code for d in lint_paths([str(path)], LintOptions(**options)).results[0].diagnostics]


def test_generated_schemas_are_current():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "build_schemas.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("version,profile", [("8.0.1", "8.1"), ("8.1.2", "8.1"), ("1.3.0", "8.1"), ("8.3", "8.3"),
                                             ("8.3.3", "8.3"), ("26", "26.0"), ("26.0.0", "26.0"),
                                             ("26.1.0.post1", "26.1"), ("26.1", "26.1"), ("26.2.0", "26.2"),
                                             ("27.0", "26.2")])
def test_version_to_profile(version, profile):
    assert for_version(version) == profile


# (real config, its own release line, the other one)
REAL_VERDICTS = [("mindspeed-npu-datadump-1", "8.3", "26"), ("slam-llm-fireredasr-1", "26", "8.3"),
                 ("slam-llm-fireredasr-2", "26", "8.3")]


@pytest.mark.parametrize("case,own,other", REAL_VERDICTS)
def test_real_config_right_under_its_release_wrong_under_the_other(case, own, other):
    path = REAL / case / "config.json"
    assert not STRUCTURE & set(_codes(path, msprobe_version=own))
    assert STRUCTURE & set(_codes(path, msprobe_version=other))


@pytest.mark.parametrize("case", ["ms-swift-1", "unattributed-id53875303043"])
def test_real_configs_valid_in_both_lines_stay_valid(case):
    path = REAL / case / "config.json"
    for version in ("8.1", "8.3", "26"):
        assert not STRUCTURE & set(_codes(path, msprobe_version=version)), version


def test_real_config_with_comments_is_a_syntax_error_in_every_release():
    path = REAL / "unattributed-id46968605285" / "config.json"
    assert _codes(path, msprobe_version="26") == _codes(path) == ["PL001"]


INDEX = json.loads((DOCS / "index.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("entry", [e for e in INDEX if not e["is_default"]], ids=lambda e: e["file"])
def test_docs_examples_error_free_under_their_own_release(entry):
    names = {"--framework": "framework", "--mode": "mode", "--jit-level": "jit_level",
             "--mindspore-version": "mindspore_version"}
    args = entry["lint_args"]
    options = {names[args[i]]: args[i + 1] for i in range(0, len(args), 2)}
    options["msprobe_version"] = entry["version"]
    found = lint_paths([str(DOCS / entry["file"])], LintOptions(isolated=True, **options)).results[0].diagnostics
    assert [d for d in found if d.severity.value == "error"] == []


@pytest.mark.parametrize("version", ["26.0.0", "26.2.0"])
def test_26_default_config_error_free_under_26(version):
    path = DOCS / f"{version}__default-config.json"
    found = lint_paths([str(path)], LintOptions(isolated=True, msprobe_version=version)).results[0].diagnostics
    # only its relative "./dump_path", as for the 8.x defaults
    assert [(d.code, d.pointer) for d in found if d.severity.value == "error"] == [("PL401", "/dump_path")]
    assert not STRUCTURE & {d.code for d in found}
    assert STRUCTURE & set(_codes(path, msprobe_version="8.3"))


def test_profile_dependent_findings_name_the_release_and_the_rename(lint):
    (acc,) = [d for d in lint(config(acc_check={})) if d.code == "PL101"]
    assert "26.x name of run_ut" in acc.message and "[judged against mindstudio-probe 8.3: the default target]" \
        in acc.message
    assert "--msprobe-version 26" in acc.hint
    (task,) = lint(config(), msprobe_version="26.1")
    assert task.code == "PL103" and "probe_runtime" in task.message
    assert "msprobe_version=26.1 from --msprobe-version" in task.message
    (precision,) = lint(config(task="statistics", precision="low"), msprobe_version="8.1.2")
    assert precision.code == "PL105" and "mindstudio-probe 8.3" in precision.message
    assert lint(config(task="exception_dump", level="L2"), msprobe_version="8.1") != []
    assert lint(config(task="statistics", statistics={"summary_mode": ["nan count"]}), msprobe_version="8.3") == []


def test_installed_26_gives_pl601_once_not_the_schema_findings(lint):
    from packaging.version import Version

    from msprobe_lint.lint.context import Fact

    installed = {"msprobe_version": Fact(Version("26.2.0"), "installed mindstudio-probe 26.2.0")}
    found = lint(config(overflow_check={"overflow_nums": 1}), extra_facts=installed)
    assert [d.code for d in found] == ["PL601"]


def test_pyproject_chooses_the_release(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nmsprobe-version = "26.2"\n')
    path = write_config(tmp_path, config(task="statistics", acc_check={}))
    found = lint_paths([str(path)], LintOptions(isolated=False)).results[0].diagnostics
    assert "PL101" not in {d.code for d in found}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_fast_check_agrees_with_jsonschema_per_release(profile):
    samples = [config(), config(task="acc_check", acc_check={"white_list": []}), config(extra_info=True),
               config(task="diff_check", diff_check={"diff_nums": 0}), config(precision="low"),
               config(task="exception_dump"), config(task="tensor", tensor={"summary_mode": "xor"})]
    for sample in samples:
        assert fastschema.is_valid(sample, profile) is _validator(profile).is_valid(sample), (profile, sample)


MIGRATABLE = """{
  "task": "run_ut",
  "dump_path": "/d",
    "level":"L1",
  "run_ut": {"white_list": [], "error_data_path": "/e"},
  "overflow_check": {
      "overflow_nums": 2
  }
}
"""


def test_migrate_shows_a_diff_and_writes_only_when_asked(tmp_path):
    path = write_config(tmp_path, MIGRATABLE)
    shown = run_probe("migrate", str(path), "--to", "26.0")
    assert shown.returncode == 0 and '-  "run_ut": {' in shown.stdout and '+  "acc_check": {' in shown.stdout
    assert "pytorch only" in shown.stderr  # overflow_check is not renamed for MindSpore
    assert path.read_text() == MIGRATABLE
    written = run_probe("migrate", str(path), "--to", "26.0", "--framework", "pytorch", "--write")
    assert written.returncode == 0
    after = path.read_text()
    assert after == (MIGRATABLE.replace('"run_ut"', '"acc_check"').replace('"overflow_check"', '"diff_check"')
                     .replace('"overflow_nums"', '"diff_nums"'))
    assert not STRUCTURE & set(_codes(path, msprobe_version="26", framework="pytorch"))


def test_migrate_round_trip_keeps_formatting(tmp_path):
    for source in (REAL / "mindspeed-npu-datadump-1" / "config.json", DOCS / "26.2.0__default-config.json"):
        text = source.read_text(encoding="utf-8")
        path = write_config(tmp_path, text)
        there = "26" if "run_ut" in text else "8.3"
        back = "8.3" if there == "26" else "26"
        assert run_probe("migrate", str(path), "--to", there, "--framework", "pytorch", "--write").returncode == 0
        assert path.read_text(encoding="utf-8") != text
        assert run_probe("migrate", str(path), "--to", back, "--framework", "pytorch", "--write").returncode == 0
        assert path.read_text(encoding="utf-8") == text


def test_migrate_errors_exit_two(tmp_path):
    bad = write_config(tmp_path, "{oops")
    proc = run_probe("migrate", str(bad), "--to", "26")
    assert proc.returncode == 2 and "PL001" in proc.stderr and "Traceback" not in proc.stderr
    good = write_config(tmp_path, config(), "good.json")
    proc = run_probe("migrate", str(good), "--to", "twenty")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    nothing = run_probe("migrate", str(good), "--to", "26")
    assert nothing.returncode == 0 and "nothing to rename" in nothing.stderr
