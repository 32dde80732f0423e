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
    report.write_text("config.json:1:1: PL103 error: old\n" * 3000 + "Found 3000 errors in 1 file.\n")
    proc = run_probe("lint", "--isolated", "-f", "json", "-o", str(report), "config.json", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(report.read_text())["summary"]["error"] == 1


def lint_in_process(*args: str) -> int:
    """``probe ARGS...`` run here (cwd: the test's folder); its exit status."""
    from msprobe_lint.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    return exit_.value.code


EARLIER = {  # what probe lint writes to --output, each replaced by the next run
    "text": ["bad.json"], "text-clean": ["good.json"], "json": ["-f", "json", "bad.json"],
    "sarif": ["-f", "sarif", "bad.json"],  # over 64 KiB (every rule's help): recognised by its start and end
    "github": ["-f", "github", "bad.json"], "github-clean": ["-f", "github", "good.json"],
    "diff": ["--diff", "bad.json"], "show-files": ["--show-files", "."],
    "show-files-json": ["--show-files", "-f", "json", "."],
}


def test_an_earlier_output_of_probe_lint_is_replaced_in_any_format(tmp_path, monkeypatch, capsys):
    """Running the same command again (or another format) replaces what
    an earlier run wrote: no --force needed."""
    write_config(tmp_path, config(level="l1"), "bad.json")
    write_config(tmp_path, config(), "good.json")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    for name, args in EARLIER.items():
        report = tmp_path / "out" / name
        assert lint_in_process("lint", "--isolated", *args, "-o", str(report)) in (0, 1)
        earlier = report.read_text()
        assert lint_in_process("lint", "--isolated", "-f", "json", "-o", str(report), "bad.json") == 1, \
            (name, capsys.readouterr().err)
        assert json.loads(report.read_text())["summary"]["error"] == 1, name
        assert lint_in_process("lint", "--isolated", *args, "-o", str(report)) in (0, 1)  # and back
        assert report.read_text() == earlier, name
    assert (tmp_path / "out" / "sarif").stat().st_size > 64 * 1024


NOT_REPORTS = {
    "notes.txt": "my notes\n",
    "package.json": json.dumps({"name": "web", "diagnostics": []}, indent=2) + "\n",
    "other.sarif": json.dumps({"$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/x.json",
                               "runs": [{"tool": {"driver": {"name": "ruff"}}}]}, indent=2) + "\n",
    "log.txt": "All checks passed (1 file).\nand then the user's own lines\n",
    "blank-then-text.txt": "\n" * (64 * 1024 + 1) + "Found 1 error in 1 file.\n",
    # a tester's findings: another tool's workflow commands, a log whose last line reads like a summary
    "ruff-github.txt": "::error title=Ruff (F401),file=/x/a.py,line=1,col=8::a.py:1:8: F401 unused import\n",
    "build.log": "Build log\nlots of notes\nFound 3 errors in the pipeline.\n",
}


@pytest.mark.parametrize("name", sorted(NOT_REPORTS))
def test_a_file_that_is_not_an_earlier_report_is_refused_unless_force(tmp_path, name):
    """A fresh user's finding: `probe lint -o notes.txt` replaced the
    user's file silently (probe report refused it). Refused, exit 2,
    nothing touched; --force replaces it."""
    write_config(tmp_path, config(level="l1"), "config.json")
    target = tmp_path / name
    target.write_text(NOT_REPORTS[name])
    proc = run_probe("lint", "--isolated", "-o", name, "config.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr == (f"probe: error: --output {name} already exists and is not a probe lint report; not "
                           "overwritten (give --force to replace it, or choose another file)\n")
    assert target.read_text() == NOT_REPORTS[name] and sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(["config.json", name])
    proc = run_probe("lint", "--isolated", "-o", name, "--force", "config.json", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == "" and "PL103" in target.read_text()


def test_an_empty_file_is_replaced_and_force_goes_with_output(tmp_path):
    write_config(tmp_path, config(level="l1"), "config.json")
    (tmp_path / "empty.txt").write_text("")
    proc = run_probe("lint", "--isolated", "-o", "empty.txt", "config.json", cwd=tmp_path)
    assert proc.returncode == 1 and "PL103" in (tmp_path / "empty.txt").read_text(), proc.stderr
    proc = run_probe("lint", "--isolated", "--force", "config.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "probe: error: --force replaces an existing --output file; it goes with --output\n"


def test_force_never_replaces_a_config_or_a_file_being_linted(tmp_path):
    write_config(tmp_path, config(level="l1"), "config.json")
    other = write_config(tmp_path, config(), "other.json")
    before = other.read_text()
    for target, said in (("other.json", "holds an msprobe config"), ("config.json", "one of the files being linted")):
        proc = run_probe("lint", "--isolated", "-o", target, "--force", "config.json", cwd=tmp_path)
        assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert other.read_text() == before and json.loads((tmp_path / "config.json").read_text())["level"] == "l1"


def test_a_file_made_at_output_while_the_lint_ran_is_not_replaced(tmp_path, monkeypatch, capsys):
    """The check is made again just before the write."""
    from msprobe_lint.cli import lint as lint_body

    write_config(tmp_path, config(level="l1"), "config.json")
    monkeypatch.chdir(tmp_path)
    real = lint_body.lint_or_fix

    def meanwhile(*args, **kwargs):
        (tmp_path / "r.txt").write_text("made meanwhile\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(lint_body, "lint_or_fix", meanwhile)
    assert lint_in_process("lint", "--isolated", "-o", "r.txt", "config.json") == 2
    assert "r.txt already exists and is not a probe lint report" in capsys.readouterr().err
    assert (tmp_path / "r.txt").read_text() == "made meanwhile\n"


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


def test_output_onto_a_soft_link_loop_is_said_as_probe_report_says_it(tmp_path):
    """It was the raw "Too many levels of symbolic links"."""
    write_config(tmp_path, config(), "config.json")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    proc = run_probe("lint", "--isolated", "-o", "a", "config.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("probe: error: cannot write a: it is a soft link loop ("), proc.stderr
    assert os.readlink(tmp_path / "a") == "b" and os.readlink(tmp_path / "b") == "a"


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
    report.write_text("All checks passed (1 file).\n")  # an earlier report: replaced
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
    report.write_text("All checks passed (1 file).\n")
    monkeypatch.chdir(tmp_path)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(SystemExit) as exit_:
        main(["lint", "--isolated", "-f", "json", "-o", str(report), "config.json"])
    monkeypatch.undo()
    assert exit_.value.code == 2 and capsys.readouterr().err.startswith("probe: error: cannot write ")
    assert report.read_text() == "All checks passed (1 file).\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
