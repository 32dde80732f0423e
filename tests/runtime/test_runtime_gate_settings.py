"""The gate lints with the project's ``[tool.probe-lint]`` settings, as
``probe lint`` and ``probe run`` do, except for the rules the debugger
cannot run without, or not safely (``msprobe_lint.lint.selection.RUNTIME_ESSENTIAL``:
PL407 and PL411 among them), which ``probe run`` enforces too.

Before, a project that turned a rule off passed ``probe run``'s lint and
was then refused by ``PrecisionDebugger`` in the training process; a
project's extra or raised rules were not enforced there either.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
pytest.importorskip("mindspore")

from probe_runtime import ConfigLintError, PrecisionDebugger  # noqa: E402
from probe_runtime.gate import lint_live  # noqa: E402
from runtime_support import isolate  # noqa: E402


def project(folder: Path, table: str, **config) -> Path:
    """``folder/pyproject.toml`` holding ``table`` and ``folder/config.json``
    (an overflow_check config with dump_path ``folder/dump``, changed by
    ``config``; a value None removes the key)."""
    (folder / "pyproject.toml").write_text("[tool.probe-lint]\n" + table)
    data = {"task": "overflow_check", "dump_path": str(folder / "dump"), "rank": [], "step": [], "level": "L1",
            "overflow_check": {"overflow_nums": 1}}
    data.update(config)
    path = folder / "config.json"
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    os.chmod(path, 0o640)
    return path


def codes(path: Path) -> set[str]:
    return {d.code for d in lint_live(str(path), {}, (None, "test")) if d.severity.value == "error"}


def test_a_rule_the_project_turns_off_does_not_refuse(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, 'ignore = ["PL101"]\n', dump_pth="typo")
    assert "PL101" not in codes(path)
    debugger = PrecisionDebugger(config_path=str(path))  # what probe run's lint let through
    debugger.stop()


def test_without_the_project_table_the_same_config_is_refused(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, "", dump_pth="typo")
    with pytest.raises(ConfigLintError, match="PL101"):
        PrecisionDebugger(config_path=str(path))


def test_per_file_ignores_apply_to_the_config(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, '[tool.probe-lint.per-file-ignores]\n"config.json" = ["PL101"]\n', dump_pth="x")
    assert "PL101" not in codes(path)


def test_a_rule_the_project_raises_to_error_refuses(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    dotted = str(tmp_path / "sub" / ".." / "dump")  # PL404, a warning by default
    assert "PL404" not in codes(project(tmp_path, "", dump_path=dotted))
    path = project(tmp_path, '[tool.probe-lint.severity]\nPL404 = "error"\n', dump_path=dotted)
    assert "PL404" in codes(path)
    with pytest.raises(ConfigLintError, match="PL404"):
        PrecisionDebugger(config_path=str(path))


def test_the_rules_the_debugger_cannot_run_without_stand(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, 'ignore = ["PL0", "PL1", "PL2", "PL3", "PL4", "PL5"]\n', dump_path=None,
                   task="free_benchmark", level="L9")
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(config_path=str(path))
    message = str(caught.value)
    assert "PL104" in message and "PL103" in message and "PL205" in message
    assert "Traceback" not in message


#: a project's table and the selection probe run hands on (PROBE_LINT_SELECTION; None: not set) that turn
#: PL411 and PL407 off or down
GATE_TURNED_OFF = [
    ('ignore = ["PL411"]\n', None),
    ('ignore = ["PL407"]\n', None),  # the tester's: PL407 used to hold the earlier-dump check
    ('ignore = ["PL4"]\n', None),
    ('select = ["PL1"]\n', None),
    ('[tool.probe-lint.per-file-ignores]\n"config.json" = ["PL4"]\n', None),
    ('[tool.probe-lint.severity]\nPL411 = "info"\nPL407 = "info"\n', None),
    ("", {"ignore": ["PL411", "PL407"]}),
    ("", {"select": ["PL1"]}),
    ('ignore = ["PL4"]\n', {"select": ["PL2"], "isolated": True}),
]


def _hand_on(monkeypatch, handed):
    from msprobe_lint.run.environment import SELECTION

    if handed is None:
        monkeypatch.delenv(SELECTION, raising=False)
    else:
        monkeypatch.setenv(SELECTION, json.dumps({"select": [], "ignore": [], "extend_select": [],
                                                  "config_file": None, "isolated": False, **handed}))


@pytest.mark.parametrize("table, handed", GATE_TURNED_OFF)
def test_no_setting_lets_the_debugger_write_into_an_earlier_dump(tmp_path, monkeypatch, table, handed):
    """A tester's finding: with PL407 ignored (in the project, or by `probe
    run --ignore PL407` / `--select PL1`, handed on to the gate) the gate
    let a run into a dump_path holding an earlier run's step3/rank, which
    it overwrote; `probe report` then named the old run's origin. The gate
    refuses it (PL411) whatever the settings say."""
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, table)
    earlier = tmp_path / "dump" / "step3" / "rank"
    earlier.mkdir(parents=True)
    (earlier / "dump.json").write_text('{"data": {"earlier": 1}}')
    os.chmod(tmp_path / "dump", 0o750)
    _hand_on(monkeypatch, handed)
    assert "PL411" in codes(path)
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(config_path=str(path))
    assert "PL411" in str(caught.value) and "step3/rank" in str(caught.value)
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["step3"]
    assert (earlier / "dump.json").read_text() == '{"data": {"earlier": 1}}'


@pytest.mark.parametrize("table, handed", GATE_TURNED_OFF)
def test_no_setting_lets_the_debugger_start_into_a_dump_path_it_cannot_write(tmp_path, monkeypatch, caplog, table,
                                                                             handed):
    """A dump_path that is a file, let through with PL407 turned off, made
    the debugger turn detection off and the job end with "no overflow
    found". The gate refuses it (PL407) whatever the settings say."""
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, table)
    (tmp_path / "dump").write_text("not a folder")
    _hand_on(monkeypatch, handed)
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(config_path=str(path))
    assert "PL407" in str(caught.value) and "exists and is not a directory" in str(caught.value)
    assert "detection turned off" not in caplog.text


def test_a_malformed_table_falls_back_to_every_rule(tmp_path, monkeypatch, caplog):
    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, 'ignore = ["PL101", 3]\n', dump_pth="typo")  # codes must be strings
    with pytest.raises(ConfigLintError, match="PL101"):
        PrecisionDebugger(config_path=str(path))
    assert "every rule applies as by default" in caplog.text


def test_the_selection_probe_run_hands_on_is_the_gates(tmp_path, monkeypatch):
    """A hunt's finding: `probe run --ignore PL101 config.json -- python
    train.py` passed the config, then the job's debugger refused it, as
    the options stayed with probe run. It hands them on in
    PROBE_LINT_SELECTION; the gate lints with them (the project's table
    under --config-file too, none under --isolated)."""
    from msprobe_lint.run.environment import SELECTION

    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, "", dump_pth="typo")
    monkeypatch.setenv(SELECTION, json.dumps({"select": [], "ignore": ["PL101"], "extend_select": [],
                                              "config_file": None, "isolated": False}))
    assert "PL101" not in codes(path)
    PrecisionDebugger(config_path=str(path)).stop()
    other = tmp_path / "other.toml"
    other.write_text('[tool.probe-lint]\nignore = ["PL101"]\n')
    monkeypatch.setenv(SELECTION, json.dumps({"config_file": str(other), "isolated": True}))
    assert "PL101" not in codes(path)
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nignore = ["PL101"]\n')
    monkeypatch.setenv(SELECTION, json.dumps({"isolated": True}))  # the project's table is not read
    assert "PL101" in codes(path)


def test_a_malformed_handed_selection_is_left_out(tmp_path, monkeypatch, caplog):
    from msprobe_lint.run.environment import SELECTION

    isolate(monkeypatch, tmp_path)
    path = project(tmp_path, "", dump_pth="typo")
    for raw in ('{"ignore": "PL101"}', "[1]", '{"ignore": ["PL1x"]}', "{"):
        monkeypatch.setenv(SELECTION, raw)
        assert "PL101" in codes(path), raw
    assert "left out" in caplog.text and "every rule applies as by default" in caplog.text


@pytest.mark.parametrize("option", [["--ignore", "PL401"], ["--config-file", "other.toml"]])
def test_probe_run_selection_options_reach_the_job(tmp_path, option):
    """End to end: the config probe run passed with --ignore or
    --config-file is the config the job's debugger takes."""
    import subprocess
    import sys

    from runtime_support import LAUNCHER_VARIABLES

    (tmp_path / "other.toml").write_text('[tool.probe-lint]\nignore = ["PL401"]\n')
    config = tmp_path / "rel.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": "rel_dump", "rank": [], "step": [],
                                  "level": "L1", "overflow_check": {"overflow_nums": 1}}))
    os.chmod(config, 0o640)
    (tmp_path / "job.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                     "PrecisionDebugger().stop()\nprint('admitted')\n")
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    probe = [sys.executable, "-m", "msprobe_lint"]
    proc = subprocess.run(probe + ["run", *option, "rel.json", "--", sys.executable, "job.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "admitted" in proc.stdout, proc.stderr[-2000:]
    assert (tmp_path / "rel_dump").is_dir()
