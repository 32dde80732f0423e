"""The typer-free ``probe lint`` (msprobe_lint/cli/__init__.py reading the
command line with cli/lint_args.py) behaves exactly like the typer command
of cli/app.py: same output, same exit status, and the same option table."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import config, probe_command, run_probe, write_config

from msprobe_lint.cli import lint_args, report_args


# probe's main with the typer-free reader declining everything: typer parses
TYPER_ONLY = ("import sys; from msprobe_lint import cli; from msprobe_lint.cli import lint_args, report_args; "
              "lint_args.parse_lint = lambda args: None; report_args.parse_report = lambda args: None; "
              "cli.main(sys.argv[1:])")


def typer_probe(*args: str, cwd, input=None) -> subprocess.CompletedProcess:
    """``probe ARGS`` through the typer application only."""
    return subprocess.run([sys.executable, "-c", TYPER_ONLY, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, input=input)


@pytest.fixture
def project(tmp_path):
    write_config(tmp_path, config(), "good.json")
    write_config(tmp_path, config(level="l1", seed=1, rank=[0], overflow_check={"overflow_number": 2}), "bad.json")
    write_config(tmp_path, '{"task": "overflow_check",}', "broken.json")
    write_config(tmp_path, {"architectures": ["Bert"], "hidden_size": 768}, "model_config.json")
    (tmp_path / "train.py").write_text("import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\n")
    (tmp_path / "notes.txt").write_text("the user's notes\n")
    return tmp_path


ARGVS = [
    ["lint", "good.json"],
    ["lint", "bad.json", "good.json", "--isolated"],
    ["lint", "--isolated", "-f", "json", "bad.json"],
    ["lint", "--format=sarif", "--isolated", "bad.json"],
    ["lint", "--format", "github", "--isolated", "--", "bad.json", "broken.json"],
    ["lint", "--isolated", "--mode", "graph", "--framework", "mindspore", "--jit-level", "O0",
     "--mindspore-version", "2.4.0", "--world-size", "1", "bad.json"],
    ["lint", "--isolated", "--select", "PL1", "--select", "PL3,PL4", "--ignore", "PL101", "bad.json"],
    ["lint", "--isolated", "--extend-select", "PL2", "--strict", "bad.json"],
    ["lint", "--isolated", "--check-fs", "--cwd", ".", "good.json"],
    ["lint", "--isolated", "--script", "train.py", "bad.json"],
    ["lint", "--isolated", "--only-msprobe", "model_config.json", "bad.json", "broken.json"],
    ["lint", "--isolated", "--select", "XX1", "bad.json"],  # usage error from the library
    ["lint", "--isolated", "--mindspore-version", "banana", "bad.json"],
    ["lint", "--isolated", "--config-file", "missing.toml", "good.json"],
    ["lint", "--isolated", "missing.json"],
    ["lint", "--isolated", "-o", "no/such/dir/out.txt", "bad.json"],
    ["lint", "--isolated", "-o", "notes.txt", "bad.json"],  # refused: not an earlier report
    ["lint", "--isolated", "-o", "notes.txt", "--force", "bad.json"],
    ["lint", "--isolated", "--force", "bad.json"],  # usage error: needs --output
    ["lint", "--isolated", "--diff", "bad.json", "good.json", "broken.json"],
    ["lint", "--isolated", "--diff", "--unsafe-fixes", "--mode", "pynative", "bad.json"],
    ["lint", "--isolated", "--unsafe-fixes", "bad.json"],  # usage error: needs --fix or --diff
    ["lint", "--isolated", "."],  # a folder walk
    ["lint", "--isolated", "--show-files", "."],
    ["lint", "--isolated", "--show-files", "-f", "json", "--follow-symlinks", ".", "good.json"],
    ["lint", "--isolated", "--exclude", "bad.json", "--extend-exclude", "broken.json,x", "-f", "github", "."],
    ["lint", "--isolated", "--stdin-filename", "x.json", "bad.json"],  # usage error: no -
    ["lint", "--isolated", "--exclude", "*.json", "."],  # nothing found: a warning
    # handed to typer: its own parsing and errors
    ["lint"],
    ["lint", "--help"],
    ["lint", "--format", "xml", "bad.json"],
    ["lint", "--format", "JSON", "bad.json"],
    ["lint", "--world-size", "0", "bad.json"],
    ["lint", "--world-size", "two", "bad.json"],
    ["lint", "--no-such-option", "bad.json"],
    ["lint", "--isolated=yes", "bad.json"],
    ["lint", "-fjson", "--isolated", "bad.json"],
    ["lint", "--mode", "graph", "--mode", "pynative", "--isolated", "bad.json"],
    ["lint", "--output"],
    ["rules"],
    ["explain", "PL101"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) for a in ARGVS])
def test_same_output_and_status_as_typer(project, argv):
    fast = subprocess.run(probe_command() + argv, capture_output=True, text=True, cwd=project, timeout=120)
    slow = typer_probe(*argv, cwd=project)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert "Traceback" not in fast.stderr


@pytest.mark.parametrize("extra", [[], ["--unsafe-fixes", "--mode", "pynative"], ["-f", "json"]])
def test_fix_same_files_and_output_as_typer(tmp_path, extra):
    """--fix rewrites the files: each route gets its own copy."""
    outcomes = []
    for route in ("fast", "typer"):
        folder = tmp_path / route
        folder.mkdir()
        write_config(folder, config(level="l1", seed=1, rank=0, step=["3-1"], dump_path="d",
                                    overflow_check={"overflow_number": 2, "check_mode": "all"}), "bad.json")
        write_config(folder, '{"task": "overflow_check",}', "broken.json")
        argv = ["lint", "--isolated", "--fix", "--cwd", str(tmp_path), *extra, "bad.json", "broken.json"]
        proc = (subprocess.run(probe_command() + argv, capture_output=True, text=True, cwd=folder, timeout=120)
                if route == "fast" else typer_probe(*argv, cwd=folder))
        outcomes.append((proc.returncode, proc.stdout, proc.stderr, (folder / "bad.json").read_text(),
                         (folder / "broken.json").read_text()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][3] != json.dumps(config(level="l1"), indent=4)


STDIN_ARGVS = [
    ["lint", "--isolated", "-"],
    ["lint", "--isolated", "-f", "sarif", "-", "--stdin-filename", "sub/c.json"],
    ["lint", "--isolated", "--stdin-filename", "c.json", "--format", "github"],
    ["lint", "--isolated", "-", "good.json", "-"],
    ["lint", "--isolated", "--fix", "-"],  # the fixed text on stdout, the report on stderr
    ["lint", "--isolated", "--diff", "--unsafe-fixes", "--stdin-filename", "c.json"],
]


@pytest.mark.parametrize("argv", STDIN_ARGVS, ids=[" ".join(a) for a in STDIN_ARGVS])
def test_same_output_and_status_as_typer_on_standard_input(project, argv):
    data = (project / "bad.json").read_text()
    fast = subprocess.run(probe_command() + argv, capture_output=True, text=True, cwd=project, timeout=120,
                          input=data)
    slow = typer_probe(*argv, cwd=project, input=data)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert "Traceback" not in fast.stderr and fast.returncode in ((0,) if "--fix" in argv else (1, 2))


@pytest.mark.parametrize("argv", [a for a in ARGVS if a[0] != "lint" or "--help" in a or len(a) == 1])
def test_other_commands_are_handed_to_typer(argv):
    assert lint_args.parse_lint(argv) is None


def test_parse_examples():
    assert lint_args.parse_lint(["lint", "a.json", "-f", "json", "--select", "PL1", "--select=PL2", "--strict",
                               "--world-size", "4", "--", "--weird.json"]) == (
        ["a.json", "--weird.json"], {"format": "json", "select": ["PL1", "PL2"], "strict": True, "world_size": 4})
    for bad in (["lint", "a.json", "--output", "-"], ["lint", "a.json", "--cwd", ""], ["lint", "--stdin-filename", "-"],
                ["lint", "a.json", "--strict", "--strict"], ["lint", "a.json", "--jit-level", "o2"],
                ["lint", "a.json", "--world-size", "01"], ["lint", "a.json", "-x"]):
        assert lint_args.parse_lint(bad) is None, bad
    assert lint_args.parse_lint(["lint", "-", "--stdin-filename", "c.json"]) == (["-"], {"stdin_filename": "c.json"})
    assert lint_args.parse_lint(["lint", "--stdin-filename", "c.json"]) == ([], {"stdin_filename": "c.json"})


def test_option_table_matches_the_typer_command():
    import typer.main

    from msprobe_lint.cli.app import app

    command = typer.main.get_command(app).commands["lint"]
    declared: dict[str, tuple] = {}
    for param in command.params:
        if param.param_type_name != "option":
            continue
        if param.is_flag:
            kind = "flag"
        elif param.multiple:
            kind = "multi"
        elif param.name == "world_size":
            kind = "posint"
        else:
            choices = getattr(param.type_descriptor, "choices", None)
            kind = tuple(getattr(c, "value", c) for c in choices) if choices else "str"
        for opt in param.opts:
            declared[opt] = (param.name, kind)
    table = {name: (option.field, option.kind) for option in lint_args.LINT_OPTIONS for name in option.names}
    assert declared == table


def test_the_format_choices_are_the_reporters_names():
    from msprobe_lint.lint.context import FRAMEWORKS, JIT_LEVELS, MODES
    from msprobe_lint.lint.reporters import NAMES

    kinds = {option.field: option.kind for option in lint_args.LINT_OPTIONS}
    assert (kinds["format"], kinds["framework"], kinds["mode"], kinds["jit_level"]) == (
        NAMES, FRAMEWORKS, MODES, JIT_LEVELS)


def test_console_script_is_the_fast_entry_point():
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "probe"]
    assert script.value == "msprobe_lint.cli:main"


# What a plain `probe lint` of a clean small config must not load: the typer
# side of the command line, the heavy libraries a valid config never needs,
# and what start-up time was lost to (issue 24).
NEVER = ("typer", "click", "pydantic", "rich", "jsonschema", "referencing", "jinja2", "markupsafe", "email",
         "dataclasses", "inspect", "pkgutil", "difflib")
LOADED = ("import sys, json; from msprobe_lint.cli import main\n"
          "try:\n    main(sys.argv[1:])\n"
          "except SystemExit as e:\n"
          "    print(json.dumps([e.code, sorted(sys.modules)]))\n")


def loaded_by(*argv: str, cwd=None) -> tuple[int, set]:
    proc = subprocess.run([sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, cwd=cwd, timeout=120)
    code, modules = json.loads(proc.stdout.splitlines()[-1])
    return code, set(modules)


def top(modules: set) -> set:
    return {m.split(".")[0] for m in modules}


def test_plain_lint_loads_no_typer_jsonschema_or_metadata(tmp_path):
    path = write_config(tmp_path, config())
    code, modules = loaded_by("lint", "--isolated", str(path))
    assert code == 0
    assert not top(modules) & set(NEVER), sorted(top(modules) & set(NEVER))
    assert not {"importlib.metadata", "typing", "pathlib", "packaging", "msprobe_lint.lint.settings"} & modules
    assert {"msprobe_lint.lint.engine", "msprobe_lint.lint.schema.fast"} <= modules  # it did lint
    # without --isolated it reads the settings and the installed versions, still without importlib.metadata
    code, modules = loaded_by("lint", str(path), cwd=tmp_path)
    assert code == 0 and "msprobe_lint.lint.settings" in modules
    assert not top(modules) & set(NEVER) and "importlib.metadata" not in modules
    assert run_probe("lint", "--isolated", str(path)).returncode == 0


def test_importing_the_package_loads_nothing_else():
    code = "import sys; before = set(sys.modules); import msprobe_lint; print(sorted(set(sys.modules) - before))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "['__future__', 'msprobe_lint']", proc.stdout + proc.stderr


def test_report_and_run_do_not_load_the_lint_engine(tmp_path):
    (tmp_path / "dump").mkdir()
    code, modules = loaded_by("report", str(tmp_path / "dump"))
    assert code == 1  # no dump found
    assert not {m for m in modules if m.startswith("msprobe_lint.lint")} - {
        "msprobe_lint.lint", "msprobe_lint.lint.context", "msprobe_lint.lint.reporters"}
    import_run = ("import sys; import msprobe_lint.run; "
                  "print(sorted(m for m in sys.modules if m.startswith('msprobe_lint.lint')))")
    proc = subprocess.run([sys.executable, "-c", import_run], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "['msprobe_lint.lint', 'msprobe_lint.lint.context']", proc.stdout + proc.stderr


REPORT_DATA = Path(__file__).resolve().parents[1] / "data" / "report"
REPORT_ARGVS = [
    ["report", str(REPORT_DATA / "ours")],
    ["report", str(REPORT_DATA / "ours"), "--all", "-f", "json"],
    ["report", "--format=html", str(REPORT_DATA / "msprobe")],
    ["report", str(REPORT_DATA / "ours"), "-o", "out.txt"],
    ["report", str(REPORT_DATA / "ours"), "-o", "exists.txt"],  # refused: exists
    ["report", str(REPORT_DATA / "ours"), "--output", "exists.txt", "--force"],
    ["report", "--", str(REPORT_DATA / "multirank" / "dp-allreduce")],
    ["report", "missing"],  # exit 2 from the report
    ["report", "."],  # nothing found: exit 1
    # handed to typer: its own parsing and errors
    ["report"],
    ["report", "--help"],
    ["report", "a", "b"],
    ["report", str(REPORT_DATA / "ours"), "--format", "xml"],
    ["report", str(REPORT_DATA / "ours"), "-fjson"],
    ["report", str(REPORT_DATA / "ours"), "--all", "--all"],
    ["report", str(REPORT_DATA / "ours"), "--force=yes"],
    ["report", str(REPORT_DATA / "ours"), "--output"],
    ["report", str(REPORT_DATA / "ours"), "--no-such-option"],
]


@pytest.mark.parametrize("argv", REPORT_ARGVS, ids=[" ".join(a[1:]).replace(str(REPORT_DATA), "DATA")
                                                      for a in REPORT_ARGVS])
def test_report_same_output_and_status_as_typer(tmp_path, argv):
    """`probe report` without typer (cli/report_args.py) gives what the
    typer command gives: output, files written, exit status, errors."""
    outcomes = []
    for route in ("fast", "typer"):
        folder = tmp_path / route
        folder.mkdir()
        (folder / "exists.txt").write_text("keep")
        proc = (subprocess.run(probe_command() + argv, capture_output=True, text=True, cwd=folder, timeout=120)
                if route == "fast" else typer_probe(*argv, cwd=folder))
        files = {p.name: p.read_text() for p in folder.iterdir()}
        outcomes.append((proc.returncode, proc.stdout, proc.stderr, files))
    assert outcomes[0] == outcomes[1]
    assert "Traceback" not in outcomes[0][2]


def test_parse_report_examples():
    assert report_args.parse_report(["report", "d", "-f", "json", "--all", "-o", "r.json", "--force"]) == (
        "d", {"format": "json", "show_all": True, "output": "r.json", "force": True})
    assert report_args.parse_report(["report", "--", "-d"]) == ("-d", {})
    for bad in (["report"], ["report", "a", "b"], ["report", "d", "-o", "-"], ["report", "d", "-o", ""],
                ["report", "d", "--format", "JSON"], ["report", "d", "-x"], ["lint", "d"]):
        assert report_args.parse_report(bad) is None, bad


def test_report_option_table_matches_the_typer_command():
    import typer.main

    from msprobe_lint.cli.app import app

    command = typer.main.get_command(app).commands["report"]
    declared: dict[str, tuple] = {}
    for param in command.params:
        if param.param_type_name != "option":
            continue
        choices = getattr(param.type_descriptor, "choices", None)
        kind = "flag" if param.is_flag else tuple(getattr(c, "value", c) for c in choices) if choices else "str"
        for opt in param.opts:
            declared[opt] = ({"show_all": "show_all"}.get(param.name, param.name), kind)
    assert declared == report_args.OPTIONS


def test_a_plain_report_loads_neither_typer_nor_jinja2():
    """A text report of a small dump loads no typer, click, rich, pydantic,
    Jinja2 (only the HTML page needs it) and no lint engine."""
    code, modules = loaded_by("report", str(REPORT_DATA / "ours"))
    assert code == 0
    heavy = {"typer", "click", "pydantic", "rich", "jinja2", "markupsafe", "jsonschema", "msprobe_lint.lint"}
    assert not heavy & modules, sorted(heavy & modules)


def test_a_pyproject_without_the_table_is_not_parsed(tmp_path):
    """Issue 34 (start-up): in a project whose pyproject.toml has no
    [tool.probe-lint] (most projects), plain `probe lint` parsed it with
    tomllib (about 6 ms to import) and built pathlib paths; the file's
    bytes tell it holds no table, so neither is loaded. With the table it
    is parsed and applied."""
    path = write_config(tmp_path, config())
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "train"\n\n[tool.ruff]\nline-length = 100\n')
    code, modules = loaded_by("lint", str(path), cwd=tmp_path)
    assert code == 0 and not {"tomllib", "pathlib", "difflib"} & modules, sorted({"tomllib", "pathlib"} & modules)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "train"\n\n[tool.probe-lint]\nselect = ["PL9"]\n')
    code, modules = loaded_by("lint", str(path), cwd=tmp_path)
    assert code == 2 and "tomllib" in modules  # read: PL9 is no rule
