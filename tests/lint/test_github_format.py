"""``--format github``: one workflow command per diagnostic, escaped as
the Actions runner requires."""
from __future__ import annotations

from conftest import config, run_probe, write_config

from msprobe_lint.lint.diagnostic import Diagnostic, Severity
from msprobe_lint.lint.engine import Result
from msprobe_lint.lint.reporters.github import escape_data, escape_property, render


def test_one_command_per_diagnostic_with_severity_position_and_title(tmp_path):
    write_config(tmp_path, config(level="l1", overflow_check={"overflow_number": 3}, seed=1,
                                  free_benchmark={}), "config.json")
    proc = run_probe("lint", "--isolated", "--format", "github", "config.json", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("::error file=config.json,line=6,col=14,endLine=6,endColumn=18,"
                               "title=PL103 value-not-allowed::")
    typo = next(line for line in lines if "PL101" in line)
    assert typo == ("::error file=config.json,line=8,col=9,endLine=8,endColumn=26,title=PL101 unknown-key::"
                    "unknown key 'overflow_number' in the overflow_check section; msprobe ignores it"
                    "%0Ahelp: did you mean 'overflow_nums'?")
    assert any(line.startswith("::warning ") and "title=PL106 deprecated-key" in line for line in lines)
    assert any(line.startswith("::notice ") and "title=PL206 " in line for line in lines)


def test_clean_config_prints_nothing(tmp_path):
    write_config(tmp_path, config(), "config.json")
    proc = run_probe("lint", "--isolated", "--format", "github", "config.json", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""


def test_paths_are_relative_to_the_working_folder_with_forward_slashes(tmp_path):
    (tmp_path / "configs").mkdir()
    path = write_config(tmp_path / "configs", config(level="l1"))
    proc = run_probe("lint", "--isolated", "--format", "github", str(path), cwd=tmp_path)
    assert proc.stdout.startswith("::error file=configs/config.json,line=")


def test_escaping():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("C:\\a,b%\n") == "C%3A\\a%2Cb%25%0A"


def diagnostic(**kw) -> Diagnostic:
    base = dict(path="dir/a,b:c.json", line=3, column=5, code="PL201", severity=Severity.ERROR,
                message="50% of\nit", hint=None)
    base.update(kw)
    return Diagnostic(**base)


def test_properties_and_message_are_escaped():
    out = render([Result("dir/a,b:c.json", [diagnostic()])])
    assert out == ("::error file=dir/a%2Cb%3Ac.json,line=3,col=5,title=PL201 level-not-allowed::"
                   "50%25 of%0Ait\n")


def test_no_column_when_the_range_spans_lines():
    multi = diagnostic(end_line=5, end_column=2)
    out = render([Result("x.json", [multi])])
    assert out.startswith("::error file=dir/a%2Cb%3Ac.json,line=3,endLine=5,title=PL201 ")
    assert "col=" not in out and "endColumn=" not in out
    single = diagnostic(end_line=3, end_column=9)
    assert ",line=3,col=5,endLine=3,endColumn=9," in render([Result("x.json", [single])])


def test_info_is_a_notice_and_unknown_codes_keep_a_title():
    out = render([Result("x.json", [diagnostic(severity=Severity.INFO, code="PL999")])])
    assert out.startswith("::notice ") and ",title=PL999::" in out
    out = render([Result("x.json", [diagnostic(severity=Severity.WARNING)])])
    assert out.startswith("::warning ")
