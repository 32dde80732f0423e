"""The `probe` command line as a user meets it: output formats, exit
statuses, several files, usage errors without tracebacks."""
from __future__ import annotations

import json
import os

import pytest

from conftest import config, run_probe, write_config


def test_text_output_has_location_code_caret_and_help(tmp_path):
    path = write_config(tmp_path, config(overflow_check={"overflow_number": 3}))
    proc = run_probe("lint", str(path), "--isolated", env={"NO_COLOR": "1"})
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == (f"{path}:8:9: PL101 [*] error: unknown key 'overflow_number' in the overflow_check "
                        "section; msprobe ignores it")
    assert lines[1] == '   8 |         "overflow_number": 3'
    assert lines[2] == "     |         " + "^" * len('"overflow_number"')
    assert lines[3] == "     = help: did you mean 'overflow_nums'?"
    assert lines[4] == "     = fix: rename 'overflow_number' to 'overflow_nums'"
    assert lines[-2:] == ["Found 1 error in 1 file.", "[*] 1 fixable with --fix."]
    assert "\x1b[" not in proc.stdout  # no colour when not a terminal


def test_summary_counts_the_files_with_problems_among_those_linted(tmp_path):
    """Before, "Found 1 error in 3 files" read as if every file had one."""
    bad = write_config(tmp_path, config(overflow_check={"overflow_number": 3}), "a.json")
    clean = [write_config(tmp_path, config(), n) for n in ("b.json", "c.json")]
    proc = run_probe("lint", str(bad), *map(str, clean), "--isolated", env={"NO_COLOR": "1"})
    assert proc.returncode == 1
    assert "Found 1 error in 1 of 3 files." in proc.stdout.splitlines()


def test_a_script_finding_is_said_once_for_several_configs(tmp_path):
    """`probe lint --script train.py a.json b.json` printed the script's
    PL502 once per config ("Found 2 errors in 2 files" for one finding)."""
    for name in ("a.json", "b.json"):
        write_config(tmp_path, config(), name)
    (tmp_path / "train.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                       "d = PrecisionDebugger(config_path='a.json')\n")
    proc = run_probe("lint", "--isolated", "--script", "train.py", "a.json", "b.json", cwd=tmp_path,
                     env={"NO_COLOR": "1"})
    assert proc.returncode == 1 and proc.stdout.count("PL502") == 1, proc.stdout
    assert proc.stdout.splitlines()[-1] == "Found 1 error in 1 of 2 files."
    proc = run_probe("lint", "--isolated", "--script", "train.py", "a.json", "b.json", "--format", "json",
                     cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert [d["code"] for d in out["diagnostics"]] == ["PL502"] and out["summary"]["error"] == 1


def test_json_output_shape(tmp_path):
    path = write_config(tmp_path, config(level="l1", dump_path="rel"))
    proc = run_probe("lint", str(path), "--isolated", "--format", "json")
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["summary"]["error"] == 2 and out["summary"]["files"] == 1
    first = out["diagnostics"][0]
    assert set(first) >= {"path", "line", "column", "code", "severity", "message", "hint", "pointer"}
    assert [(d["code"], d["pointer"]) for d in out["diagnostics"]] == [("PL401", "/dump_path"), ("PL103", "/level")]
    assert out["diagnostics"][0]["line"] < out["diagnostics"][1]["line"]  # sorted by position


def test_clean_config_exits_zero_and_warnings_only_fail_with_strict(tmp_path):
    clean = write_config(tmp_path, config(), "clean.json")
    assert run_probe("lint", str(clean), "--isolated").returncode == 0
    warn = write_config(tmp_path, config(seed=1), "warn.json")
    assert run_probe("lint", str(warn), "--isolated").returncode == 0
    assert run_probe("lint", str(warn), "--isolated", "--strict").returncode == 1


def test_several_files_in_one_run(tmp_path):
    good = write_config(tmp_path, config(), "a.json")
    bad = write_config(tmp_path, config(level="L9"), "b.json")
    proc = run_probe("lint", str(good), str(bad), "--isolated", "--format", "json")
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["summary"]["files"] == 2
    assert {d["path"] for d in out["diagnostics"]} == {str(bad)}


def test_unreadable_file_exits_two_without_traceback(tmp_path):
    proc = run_probe("lint", str(tmp_path / "nope.json"), "--isolated")
    assert proc.returncode == 2
    assert "PL006" in proc.stdout and "Traceback" not in proc.stderr
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (10 * 1024 * 1024 + 1))
    proc = run_probe("lint", str(big), "--isolated", "--format", "json")
    assert proc.returncode == 2
    messages = [d["message"] for d in json.loads(proc.stdout)["diagnostics"]]
    assert any("10 MiB" in m for m in messages)


def test_usage_errors_exit_two(tmp_path):
    path = write_config(tmp_path, config())
    for args in (["--mode", "eager"], ["--mindspore-version", "two"], ["--world-size", "0"],
                 ["--select", "XY1"], ["--format", "xml"]):
        proc = run_probe("lint", str(path), "--isolated", *args)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr + proc.stdout, args
    assert run_probe("lint").returncode == 2


def test_select_and_ignore(tmp_path):
    path = write_config(tmp_path, config(levle="x", dump_path="rel"))
    out = json.loads(run_probe("lint", str(path), "--isolated", "--format", "json", "--ignore", "PL4").stdout)
    assert [d["code"] for d in out["diagnostics"]] == ["PL101"]
    out = json.loads(run_probe("lint", str(path), "--isolated", "--format", "json", "--select", "PL401").stdout)
    assert [d["code"] for d in out["diagnostics"]] == ["PL401"]


def test_output_goes_to_file_and_exit_status_is_kept(tmp_path):
    path = write_config(tmp_path, config(level="bad"))
    report = tmp_path / "report.json"
    proc = run_probe("lint", str(path), "--isolated", "--format", "json", "--output", str(report))
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(report.read_text())["diagnostics"][0]["code"] == "PL103"


def test_rules_explain_schema_commands():
    rules = run_probe("rules")
    assert rules.returncode == 0 and "PL201" in rules.stdout and "PL601" in rules.stdout
    explain = run_probe("explain", "pl204")
    assert explain.returncode == 0
    assert "Bad:" in explain.stdout and "Good:" in explain.stdout and "2.3.0" in explain.stdout
    unknown = run_probe("explain", "PL999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr
    prefix = run_probe("explain", "PL1")  # a --select prefix, not a near miss of PL601
    assert prefix.returncode == 2 and "'PL1' is a prefix of 7 rules (PL101," in prefix.stderr
    schema = run_probe("schema")
    assert json.loads(schema.stdout)["$schema"].endswith("2020-12/schema")


def test_colour_respects_no_color(tmp_path):
    from msprobe_lint.lint.engine import lint_file
    from msprobe_lint.lint.reporters import get

    path = write_config(tmp_path, config(level="bad"))
    result = lint_file(str(path))
    assert "\x1b[" in get("text")([result], color=True)
    import os

    os.environ["NO_COLOR"] = "1"
    try:
        assert "\x1b[" not in get("text")([result], color=True)
    finally:
        del os.environ["NO_COLOR"]


def test_a_named_pipe_is_pl006_at_once_in_the_text_report(tmp_path):
    """The text report quotes no line of an unreadable file: opening a pipe
    to read one would block for ever."""
    os.mkfifo(tmp_path / "pipe.json")
    proc = run_probe("lint", "--isolated", "pipe.json", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "PL006 error: config is not a regular file" in proc.stdout


NASTY_NAME = "a\x1b[31mb\nc.json"  # a terminal escape and a newline in a file name


@pytest.mark.parametrize("args", [["-f", "text"], ["-f", "github"], ["--show-files"], ["--fix"]])
def test_control_characters_of_a_file_name_never_reach_the_terminal(tmp_path, args):
    """Issue 34: file names were printed raw (a newline or ESC in one wrote
    them to the terminal; the github format escaped the newline only)."""
    (tmp_path / NASTY_NAME).write_text('{"task": "overflow_check", "dump_path": "/tmp/x", "level": "l1"}')
    proc = run_probe("lint", "--isolated", *args, ".", cwd=tmp_path)
    printed = proc.stdout + proc.stderr
    assert "\x1b" not in printed, printed
    if args[1:] == ["github"]:  # the runner's escape of a newline names the real file
        assert printed.startswith("::error file=a?[31mb%0Ac.json,"), printed
        return
    assert "a?[31mb?c.json" in printed, printed
    assert all(line.startswith(("a?[31mb?c.json", " ", "lint ", "::error", "Found", "[*]", "All checks"))
               for line in printed.splitlines()), printed


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_formats_keep_the_real_file_name(tmp_path, fmt):
    (tmp_path / NASTY_NAME).write_text('{"task": "overflow_check", "dump_path": "/tmp/x", "level": "l1"}')
    proc = run_probe("lint", "--isolated", "-f", fmt, NASTY_NAME, cwd=tmp_path)
    assert "\x1b" not in proc.stdout  # JSON-escaped
    log = json.loads(proc.stdout)
    if fmt == "json":
        assert [d["path"] for d in log["diagnostics"]] == [NASTY_NAME]
    else:
        location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        assert location["uri"] == "a%1B%5B31mb%0Ac.json"


@pytest.mark.parametrize("args, name", [
    ([], "msprobe-config.schema.json"), (["--msprobe-version", "8.1"], "msprobe-config-8.1.schema.json"),
    (["--msprobe-version", "8.3.0"], "msprobe-config.schema.json"),
    (["--msprobe-version", "26"], "msprobe-config-26.0.schema.json"),
    (["--msprobe-version", "26.1.0.post1"], "msprobe-config-26.1.schema.json"),
    (["--msprobe-version", "27"], "msprobe-config-26.2.schema.json"), (["--atb"], "atb-dump-config.schema.json"),
])
def test_schema_of_a_release_or_of_the_atb_config(args, name):
    """Issue 34: probe schema printed only the 8.3 schema, though the README
    points editors at the 8.1/26.x variants."""
    from msprobe_lint.lint.schema.files import schema_path

    proc = run_probe("schema", *args)
    assert proc.returncode == 0
    with open(os.path.join(os.path.dirname(schema_path()), name), encoding="utf-8") as handle:
        assert proc.stdout == handle.read()


@pytest.mark.parametrize("args, message", [
    (["--msprobe-version", "x"], "probe: error: --msprobe-version x: not a mindstudio-probe version"),
    (["--atb", "--msprobe-version", "8.1"], "probe: error: --atb prints the ATB dump config's schema"),
    # a release that never existed: refused as probe lint and probe migrate refuse it (a fresh user got 8.1's)
    (["--msprobe-version", "7.0"], "probe: error: --msprobe-version 7.0: there is no mindstudio-probe 7.0"),
    (["--msprobe-version", "9.9"], "probe: error: --msprobe-version 9.9: there is no mindstudio-probe 9.9"),
])
def test_schema_usage_errors(args, message):
    proc = run_probe("schema", *args)
    assert proc.returncode == 2 and proc.stderr.startswith(message)


@pytest.mark.parametrize("args, message", [
    (["--world-size", "0"], "Invalid value for '--world-size': 0 is not an integer >= 1"),
    (["--world-size", "x"], "Invalid value for '--world-size': 'x' is not an integer"),
])
def test_option_errors_are_worded_plainly(tmp_path, args, message):
    """Issue 34: pydantic's wording (Input should be greater than or equal
    to 1, Value error, ...) leaked into typer's messages."""
    write_config(tmp_path, config(), "config.json")
    proc = run_probe("lint", *args, "config.json", cwd=tmp_path, env={"COLUMNS": "200"})
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Input should" not in proc.stderr and "Value error" not in proc.stderr


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_show_files_refuses_a_format_it_cannot_honour(tmp_path, fmt):
    """Issue 34: --show-files --format sarif printed text."""
    write_config(tmp_path, config(), "config.json")
    proc = run_probe("lint", "--show-files", "-f", fmt, "config.json", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"probe: error: --show-files lists files as text or --format json; --format {fmt} "
                           "reports findings\n")


@pytest.mark.parametrize("flags", [["--ignore", "PL006"], ["--select", "PL1"], ["--ignore", "ALL"]])
def test_a_file_that_cannot_be_read_is_never_said_to_pass(tmp_path, flags):
    """`probe lint --ignore PL006 nope.json` printed "All checks passed (1
    file)." and exited 2. A file that cannot be read is never passed: PL006
    cannot be turned off (as the exit status 2 it gives cannot)."""
    proc = run_probe("lint", "--isolated", *flags, "nope.json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "passed" not in proc.stdout and "PL006" in proc.stdout, proc.stdout
    proc = run_probe("lint", "--isolated", *flags, "--format", "json", "nope.json", cwd=tmp_path)
    assert proc.returncode == 2 and [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["PL006"]
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nignore = ["PL006"]\n')
    proc = run_probe("lint", "nope.json", cwd=tmp_path)
    assert proc.returncode == 2 and "passed" not in proc.stdout and "PL006" in proc.stdout, proc.stdout


#: files msprobe cannot load, each with the code that says why
UNLOADABLE = {
    "PL001": b'{"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1"} // comment',
    "PL003": b'[{"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1"}]',
    "PL004": b'\xef\xbb\xbf{"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1"}',
    "PL008": '{"task"\uff1a "overflow_check", "dump_path": "/tmp/d", "level": "L1"}'.encode(),
}


@pytest.mark.parametrize("code", sorted(UNLOADABLE))
@pytest.mark.parametrize("flags", [["--select", "PL101"], ["--ignore", "{code}"], ["--ignore", "ALL"],
                                   ["--select", "PL4", "--ignore", "PL0"]])
def test_a_file_msprobe_cannot_load_is_never_said_to_pass(tmp_path, code, flags):
    """`probe lint --select PL101` on a file ending in a `// comment`
    printed "All checks passed (1 file)." and exited 0, and `--ignore PL004`
    passed a file starting with a byte-order mark, which msprobe rejects.
    As ruff reports a syntax error whatever is selected, the codes of a
    file msprobe cannot load are always reported, as errors."""
    (tmp_path / "config.json").write_bytes(UNLOADABLE[code])
    flags = [flag.format(code=code) for flag in flags]
    proc = run_probe("lint", "--isolated", *flags, "--format", "json", "config.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [(d["code"], d["severity"]) for d in json.loads(proc.stdout)["diagnostics"]] == [(code, "error")]


@pytest.mark.parametrize("code", sorted(UNLOADABLE))
def test_project_settings_cannot_turn_off_a_file_msprobe_cannot_load(tmp_path, code):
    """The same through [tool.probe-lint]: ignore, select, per-file ignores
    and a severity leave those codes errors."""
    (tmp_path / "config.json").write_bytes(UNLOADABLE[code])
    for table in (f'ignore = ["{code}"]', 'select = ["PL2"]',
                  f'[tool.probe-lint.per-file-ignores]\n"*.json" = ["{code}"]',
                  f'[tool.probe-lint.severity]\n{code} = "info"'):
        (tmp_path / "pyproject.toml").write_text("[tool.probe-lint]\n" + table + "\n")
        proc = run_probe("lint", "config.json", cwd=tmp_path, env={"NO_COLOR": "1"})
        assert proc.returncode == 1 and "passed" not in proc.stdout, (table, proc.stdout + proc.stderr)
        assert f" {code} " in proc.stdout and " error: " in proc.stdout, (table, proc.stdout)


def test_rule_selection_help_says_which_codes_are_always_on():
    proc = run_probe("lint", "--help", env={"COLUMNS": "200"})
    assert "A file msprobe cannot load (PL001, PL003, PL004, PL006, PL008) is reported whatever is selected." \
        in " ".join(proc.stdout.replace("│", " ").split()), proc.stdout
