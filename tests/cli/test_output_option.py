"""``--output FILE``: the report goes to the file (nothing on stdout), the
exit status is the same as without it, and an unwritable file is a usage
error (exit 2) without a traceback."""
from __future__ import annotations

import json
import os

import pytest
from conftest import config, run_probe, write_config


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
@pytest.mark.parametrize("bad", [True, False])
def test_report_goes_to_the_file_and_the_status_is_unchanged(tmp_path, fmt, bad):
    write_config(tmp_path, config(level="l1") if bad else config(), "config.json")
    plain = run_probe("lint", "--isolated", "--format", fmt, "config.json", cwd=tmp_path)
    report = tmp_path / "out" / f"report.{fmt}"
    report.parent.mkdir()
    proc = run_probe("lint", "--isolated", "--format", fmt, "--output", str(report), "config.json",
                     cwd=tmp_path)
    assert proc.returncode == plain.returncode == (1 if bad else 0)
    assert proc.stdout == "" and proc.stderr == ""
    assert report.read_text(encoding="utf-8") == plain.stdout
    if fmt in ("json", "sarif"):
        json.loads(report.read_text(encoding="utf-8"))


def test_short_option_and_overwrite(tmp_path):
    write_config(tmp_path, config(level="l1"), "config.json")
    report = tmp_path / "report.json"
    report.write_text("old contents that are longer than nothing\n" * 100)
    proc = run_probe("lint", "--isolated", "-f", "json", "-o", str(report), "config.json", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(report.read_text())["summary"]["error"] == 1


def test_text_report_in_a_file_has_no_colour(tmp_path):
    write_config(tmp_path, config(level="l1"), "config.json")
    report = tmp_path / "report.txt"
    run_probe("lint", "--isolated", "-o", str(report), "config.json", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in report.read_text()


def test_unwritable_output_is_a_usage_error(tmp_path):
    write_config(tmp_path, config(), "config.json")
    proc = run_probe("lint", "--isolated", "-o", str(tmp_path / "no" / "such" / "dir" / "r.txt"), "config.json",
                     cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("probe: error: cannot write ") and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_unreadable_config_still_exits_2_with_output(tmp_path):
    report = tmp_path / "report.json"
    proc = run_probe("lint", "--isolated", "-f", "json", "-o", str(report), "missing.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert [d["code"] for d in json.loads(report.read_text())["diagnostics"]] == ["PL006"]


SURROGATE_CONFIG = '{"task": "overflow_check", "dump_path": "\\ud800", "level": "L1"}\n'


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_lone_surrogate_in_a_config_is_written_escaped_and_the_old_report_kept_on_failure(tmp_path, fmt):
    """Issue 34: ``"dump_path": "\\ud800"`` (json.dumps of a surrogateescape
    file name) crashed the write of --output, leaving the file empty."""
    (tmp_path / "config.json").write_text(SURROGATE_CONFIG)
    report = tmp_path / f"report.{fmt}"
    report.write_text("old report\n")
    proc = run_probe("lint", "--isolated", "-f", fmt, "-o", str(report), "config.json", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    written = report.read_text(encoding="utf-8")
    assert "\\ud800" in written
    if fmt in ("json", "sarif"):
        assert "\ud800" in json.dumps(json.loads(written), ensure_ascii=False)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".probe-")]


def test_a_report_that_cannot_be_written_leaves_the_old_one(tmp_path, monkeypatch, capsys):
    """The write of the new report fails (here the rename, as a full disk
    or a read-only folder would make it, also for root): exit 2, the old
    report untouched, no temporary file left beside it."""
    from msprobe_lint.cli import main

    (tmp_path / "config.json").write_text(SURROGATE_CONFIG)
    out = tmp_path / "out"
    out.mkdir()
    report = out / "report.json"
    report.write_text("old report\n")
    monkeypatch.chdir(tmp_path)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(SystemExit) as exit_:
        main(["lint", "--isolated", "-f", "json", "-o", str(report), "config.json"])
    monkeypatch.undo()
    assert exit_.value.code == 2 and capsys.readouterr().err.startswith("probe: error: cannot write ")
    assert report.read_text() == "old report\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
