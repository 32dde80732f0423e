"""What a user of ruff or pytest expects of ``probe``: ``--version``,
``python -m msprobe_lint``, readable ``--help`` at 80 columns with its
options under headings, and shell completion."""
from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata

import pytest
from conftest import config, probe_command, run_probe, write_config

from msprobe_lint.cli.lint_args import LINT_OPTIONS


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_distributions(flag):
    proc = run_probe(flag)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"probe (msprobe-lint) {metadata.version('msprobe-lint')}\n"


def test_version_through_typer_says_the_same():
    """``-V`` given with other arguments goes to typer's eager option."""
    proc = run_probe("-V", "lint")
    assert (proc.returncode, proc.stdout) == (0, f"probe (msprobe-lint) {metadata.version('msprobe-lint')}\n")


def test_package_version_is_the_metadatas():
    import msprobe_lint

    assert msprobe_lint.__version__ == metadata.version("msprobe-lint")


def test_python_m_runs_the_same_command_line(tmp_path):
    write_config(tmp_path, config(level="l1"), "bad.json")
    for args in (["lint", "--isolated", "bad.json"], ["lint", "--isolated", "-f", "json", "bad.json"], ["rules"],
                 ["explain", "PL999"], ["--version"]):
        script = run_probe(*args, cwd=tmp_path)
        module = subprocess.run([sys.executable, "-m", "msprobe_lint", *args], capture_output=True, text=True,
                                cwd=tmp_path, timeout=120)
        assert (module.returncode, module.stdout, module.stderr) == (script.returncode, script.stdout, script.stderr)
    assert module.returncode == 0 and "msprobe-lint" in module.stdout


def help_at_80(*args: str) -> str:
    proc = run_probe(*args, "--help", env={"COLUMNS": "80", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_lint_help_at_80_columns_is_readable():
    text = help_at_80("lint")
    assert max(len(line) for line in text.splitlines()) <= 80
    # no Python type where a value is described: <bool>, <str>, <list[str]>, <text|json|...>
    assert not re.search(r"<[a-z][^>]*>", text), re.findall(r"<[a-z][^>]*>", text)
    # every option, under its heading, and every choice whole on one line
    headings = re.findall(r"╭─ (.+?) ─", text)
    assert headings == ["Arguments", "Options", "Output", "Rule selection", "Target environment", "Files"]
    for option in LINT_OPTIONS:
        assert re.search(rf"(?<![\w-]){re.escape(option.names[0])}(?![\w-])", text), option.names[0]
        if isinstance(option.kind, tuple):
            for choice in option.kind:
                assert re.search(rf"(?<![\w-]){re.escape(choice)}(?![\w-])", text), choice
    section = text.split("╭─ Target environment")[1].split("╰")[0]
    assert "--framework" in section and "--world-size" in section and "--select" not in section


@pytest.mark.parametrize("command", [[], ["run"], ["report"], ["migrate"], ["explain"], ["completion"]])
def test_other_help_pages_have_no_type_placeholders(command):
    text = help_at_80(*command)
    assert not re.search(r"<[a-z][^>]*>", text), re.findall(r"<[a-z][^>]*>", text)
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o default -F _probe_completion probe"),
                                           ("zsh", "#compdef probe"), ("fish", "complete --command probe")])
def test_completion_prints_the_script_of_the_shell(shell, marker):
    proc = run_probe("completion", shell)
    assert proc.returncode == 0 and proc.stderr == ""
    assert marker in proc.stdout and "_PROBE_COMPLETE=complete_" + shell in proc.stdout


def test_the_bash_script_completes_against_probe_itself():
    """What the sourced script runs: probe called back with _PROBE_COMPLETE."""
    def complete(words: str) -> list[str]:
        proc = run_probe(env={"_PROBE_COMPLETE": "complete_bash", "COMP_WORDS": words,
                              "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert complete("probe li") == ["lint"]
    assert complete("probe lint --form") == ["--format"]
    assert complete("probe lint --format s") == ["sarif"]
    assert complete("probe completion ") == ["bash", "zsh", "fish"]


def test_completion_for_an_unknown_shell_is_a_usage_error():
    proc = run_probe("completion", "tcsh", env={"COLUMNS": "120"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in proc.stderr and "Traceback" not in proc.stderr



@pytest.mark.parametrize("command", [["lint"], ["lint", "--isolated"], ["run"]])
def test_a_deleted_current_folder_is_a_usage_error(tmp_path, command):
    """Issue 34: ``mkdir x && cd x && rmdir ../x`` then ``probe lint`` gave
    a FileNotFoundError traceback from os.getcwd()."""
    path = write_config(tmp_path, config(), "config.json")
    gone = tmp_path / "gone"
    gone.mkdir()
    probe = " ".join(f"'{part}'" for part in probe_command())
    rest = " ".join(command + [str(path)] + (["--", "true"] if command == ["run"] else []))
    proc = subprocess.run(["sh", "-c", f"cd '{gone}' && rmdir '{gone}' && exec {probe} {rest}"],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("probe: error: the current folder no longer exists (it was deleted); cd to an existing "
                           "folder and run probe again\n")
