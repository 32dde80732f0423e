"""[tool.probe-lint] in pyproject.toml (or --config-file): selection by
code or prefix, severity overrides, per-file and pointer-scoped ignores,
default context; a malformed table is exit 2 with a clear message."""
from __future__ import annotations

import json
import textwrap

import pytest

from conftest import codes, config, run_probe, write_config
from msprobe_lint.lint.api import LintOptions, UsageError, lint_paths
from msprobe_lint.lint import rules
from msprobe_lint.lint.settings import SettingsError, find, load

# overflow_nums at top level (PL105), check_mode in pynative (PL204), a
# statistics section (PL206), a relative dump_path (PL401)
NOISY = config(dump_path="dump", overflow_nums=2, overflow_check={"check_mode": "all"}, statistics={})


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def make(table: str, cfg=NOISY, name: str = "config.json") -> str:
        (tmp_path / "pyproject.toml").write_text("[tool.probe-lint]\n" + textwrap.dedent(table), encoding="utf-8")
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return str(write_config(target.parent, cfg, target.name))

    return make


def run(path: str, **options):
    return lint_paths([path], LintOptions(**options)).results[0].diagnostics


def test_no_table_runs_everything(project):
    path = project('mode = "pynative"\n')
    assert sorted(set(codes(run(path)))) == ["PL105", "PL204", "PL206", "PL401"]


def test_select_by_code_and_prefix(project):
    assert set(codes(run(project('mode = "pynative"\nselect = ["PL2"]\n')))) == {"PL204", "PL206"}
    assert set(codes(run(project('mode = "pynative"\nselect = ["PL401", "PL105"]\n')))) == {"PL105", "PL401"}


def test_ignore_and_extend_select(project):
    assert set(codes(run(project('mode = "pynative"\nignore = ["PL2", "PL105"]\n')))) == {"PL401"}
    path = project('mode = "pynative"\nselect = ["PL4"]\nextend-select = ["PL206"]\n')
    assert set(codes(run(path))) == {"PL206", "PL401"}


def test_cli_select_replaces_and_ignore_adds(project):
    path = project('mode = "pynative"\nselect = ["PL2"]\nignore = ["PL206"]\n')
    assert set(codes(run(path, select=("PL4,PL1",)))) == {"PL105", "PL401"}
    assert set(codes(run(path, ignore=("PL204",)))) == set()


def test_disabled_rules_do_not_run(project, monkeypatch):
    ran = []
    info = rules.load_all()["PL204"]

    def spy(config, context):
        ran.append(1)
        return info.check(config, context)

    monkeypatch.setitem(rules.load_all(), "PL204", info._replace(check=spy))
    run(project('mode = "pynative"\nignore = ["PL204"]\n'))
    assert ran == []
    run(project('mode = "pynative"\n'))
    assert ran == [1]


def test_severity_overrides_by_code_and_prefix(project):
    found = run(project('mode = "pynative"\n[tool.probe-lint.severity]\nPL2 = "error"\nPL206 = "warning"\n'
                        'PL401 = "info"\n'))
    grade = {d.code: d.severity.value for d in found}
    assert grade == {"PL105": "warning", "PL204": "error", "PL206": "warning", "PL401": "info"}


def test_severity_override_changes_the_exit_status(project):
    path = project('mode = "pynative"\nselect = ["PL204"]\n[tool.probe-lint.severity]\nPL204 = "error"\n')
    assert lint_paths([path], LintOptions()).status == 1


def test_per_file_ignores_by_glob(project, tmp_path):
    table = 'mode = "pynative"\n[tool.probe-lint.per-file-ignores]\n"configs/*.json" = ["PL2", "PL401"]\n'
    inside = project(table, name="configs/a.json")
    outside = project(table, name="other.json")
    assert set(codes(run(inside))) == {"PL105"}
    assert "PL204" in codes(run(outside))


def test_ignore_scoped_to_a_json_pointer(project):
    table = ('mode = "pynative"\n[tool.probe-lint.per-file-ignores]\n'
             '"configs/a.json#/overflow_check" = ["PL204"]\n"configs/a.json#/statistics" = ["PL1"]\n')
    path = project(table, name="configs/a.json")
    found = codes(run(path))
    assert "PL204" not in found and "PL206" in found and "PL105" in found
    other = project(table, cfg=NOISY, name="configs/b.json")
    assert "PL204" in codes(run(other))


def test_default_context_values(project):
    path = project('framework = "mindspore"\nmode = "graph"\njit-level = "O1"\nmindspore-version = "2.6.0"\n'
                   'world-size = 1\n', cfg=config(level="L2", rank=[0]))
    found = run(path)
    assert set(codes(found)) == {"PL202", "PL304"}
    assert all("pyproject.toml [tool.probe-lint]" in d.message for d in found)


def test_script_key_is_read_as_script_and_the_flag_replaces_it(project, tmp_path):
    """verl's shape: no dump_path in the config, one passed to PrecisionDebugger."""
    (tmp_path / "train.py").write_text("from msprobe.pytorch import PrecisionDebugger\n"
                                       "d = PrecisionDebugger(config_path='c.json', dump_path='/data/step0')\n"
                                       "d.start()\nd.stop()\n", encoding="utf-8")
    (tmp_path / "other.py").write_text("from msprobe.pytorch import PrecisionDebugger\n"
                                       "d = PrecisionDebugger(config_path='c.json')\nd.start()\nd.stop()\n",
                                       encoding="utf-8")
    path = project('script = "train.py"\n', cfg=config(dump_path=None))
    assert "PL104" not in codes(run(path))
    assert "PL104" in codes(run(path, script=str(tmp_path / "other.py")))


def test_config_file_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "elsewhere.toml"
    other.write_text('[tool.probe-lint]\nselect = ["PL401"]\n', encoding="utf-8")
    path = str(write_config(tmp_path, NOISY))
    assert set(codes(run(path, config_file=str(other)))) == {"PL401"}
    with pytest.raises(UsageError, match="no such file"):
        run(path, config_file=str(tmp_path / "missing.toml"))


def test_nearest_pyproject_is_used(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.probe-lint]\n", encoding="utf-8")
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.probe-lint]\n", encoding="utf-8")
    assert find(str(tmp_path / "sub" / "deeper" / "config.json")) == tmp_path / "sub" / "pyproject.toml"
    assert load(tmp_path / "pyproject.toml") is not None


@pytest.mark.parametrize("table, message", [
    ('select = "PL2', "not valid TOML"),
    ('select = 3\n', "select must be a list of rule codes"),
    ('select = ["E501"]\n', "'E501' is not a rule code, prefix or name"),
    ('select = ["PL9"]\n', "'PL9' matches no rule"),
    ('ignore = [1]\n', "ignore must be a list of rule codes"),
    ('selct = ["PL2"]\n', "unknown key 'selct'; did you mean 'select'?"),
    ('mode = "eager"\n', "mode must be one of pynative, graph"),
    ('world-size = 0\n', "world_size must be an integer >= 1"),
    ('mindspore-version = "two"\n', "mindspore_version must be a version"),
    ('severity = "error"\n', "severity must be a table"),
    ('[tool.probe-lint.severity]\nPL204 = "fatal"\n', "severity.PL204 must be error, warning or info"),
    ('[tool.probe-lint.severity]\nPL204 = 1\n', "severity.PL204 must be"),
    ('per-file-ignores = ["a"]\n', "per-file-ignores must be a table"),
    ('[tool.probe-lint.per-file-ignores]\n"#/x" = ["PL2"]\n', "has no file glob"),
    ('[tool.probe-lint.per-file-ignores]\n"a.json#x" = ["PL2"]\n', "must be a JSON pointer"),
    ('[tool.probe-lint.per-file-ignores]\n"a.json" = "PL2x"\n', "is not a rule code"),
    ('script = 3\n', "script must be the path of the training script"),
    ('script = "missing.py"\n', "[tool.probe-lint] script: "),
])
def test_malformed_table_is_a_clear_usage_error(project, table, message):
    path = project(table)
    with pytest.raises(UsageError) as caught:
        run(path)
    assert message in str(caught.value) and "pyproject.toml" in str(caught.value)


def test_table_that_is_not_a_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('tool = 3\n', encoding="utf-8")
    assert load(tmp_path / "pyproject.toml") is None
    (tmp_path / "pyproject.toml").write_text('[tool]\nprobe-lint = 3\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="must be a table"):
        load(tmp_path / "pyproject.toml")


def test_broken_pyproject_exits_2_without_traceback(project, tmp_path):
    path = project('select = ["PL2"\nmode = 1\n')
    proc = run_probe("lint", path, cwd=tmp_path)
    assert proc.returncode == 2
    assert "pyproject.toml" in proc.stderr and "not valid TOML" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    project('severity = {PL204 = "loud"}\n')
    proc = run_probe("lint", path, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 2 and "severity.PL204" in proc.stderr and "Traceback" not in proc.stderr


def test_isolated_skips_the_pyproject_even_if_broken(project, tmp_path):
    path = project('select = [\n')
    proc = run_probe("lint", path, "--isolated", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)["diagnostics"]


def test_every_problem_of_the_table_is_reported_at_once(project):
    """Issue 34: [tool.probe-lint] errors came one at a time, with no "did
    you mean" for an unknown key."""
    path = project('selct = ["PL2"]\nmodes = "graph"\nworld-size = 0\nignore = ["E501"]\n')
    proc = run_probe("lint", path)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].endswith("pyproject.toml: 4 problems in [tool.probe-lint]:"), proc.stderr
    assert lines[1:] == ["  unknown key 'modes'; did you mean 'mode'?", "  unknown key 'selct'; did you mean 'select'?",
                         "  world-size: world_size must be an integer >= 1, not 0",
                         "  ignore: 'E501' is not a rule code, prefix or name (e.g. PL201, PL2, ALL, unknown-key)"]


def test_a_config_file_without_the_table_is_a_usage_error(tmp_path):
    """Issue 34: --config-file on a file with no [tool.probe-lint] was
    silently ignored."""
    (tmp_path / "other.toml").write_text('[tool.ruff]\nline-length = 100\n')
    write_config(tmp_path, config(), "config.json")
    proc = run_probe("lint", "--config-file", "other.toml", "config.json", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (
        2, "probe: error: --config-file other.toml: it has no [tool.probe-lint] table\n")


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--extend-select"])
def test_an_empty_code_list_is_a_usage_error(tmp_path, flag):
    """Issue 34: --select "" selected everything. ruff refuses an empty
    selector too."""
    write_config(tmp_path, config(level="l1"), "config.json")
    proc = run_probe("lint", "--isolated", flag, "", "config.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(f"probe: error: {flag}: an empty code selects nothing")


def test_rule_names_are_accepted_wherever_codes_are(tmp_path, monkeypatch):
    """Issue 34: --select unknown-key refused the rule names probe explain
    accepts."""
    monkeypatch.chdir(tmp_path)
    bad = write_config(tmp_path, {**config(level="l1"), "dump_pth": "/x"}, "config.json")
    by_name = lint_paths([str(bad)], LintOptions(isolated=True, select=("unknown-key",)))
    assert codes(by_name.results[0].diagnostics) == ["PL101"]
    ignored = lint_paths([str(bad)], LintOptions(isolated=True, ignore=("unknown-key", "value-not-allowed")))
    assert "PL101" not in codes(ignored.results[0].diagnostics)
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nselect = ["value-not-allowed"]\n')
    assert codes(lint_paths([str(bad)], LintOptions()).results[0].diagnostics) == ["PL103"]
    proc = run_probe("lint", "--isolated", "--select", "unknwn-key", str(bad))
    assert proc.returncode == 2 and proc.stderr.endswith("; did you mean unknown-key?\n"), proc.stderr


@pytest.mark.parametrize("line, key, quoted", [
    ("mindspore-version = 2.10", "mindspore-version", '"2.10"'),
    ("mindspore_version = 2.6", "mindspore_version", '"2.6"'),
    ("msprobe-version = 8.30", "msprobe-version", '"8.30"'),
    ("mindspore-version = 2", "mindspore-version", '"2"'),
    ('"mindspore-version" = 2.10', "mindspore-version", '"2.10"'),  # a quoted key
])
def test_an_unquoted_version_is_refused_naming_the_key_and_the_quoted_form(project, tmp_path, line, key, quoted):
    """TOML reads ``mindspore-version = 2.10`` as the float 2.1: the lint
    took MindSpore 2.1 and gave a false PL203. A version that is not a
    string is a bad value (exit 2, as ``world-size = true``), and the
    message says to quote it."""
    path = project(line + "\n")
    proc = run_probe("lint", path, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    assert f"[tool.probe-lint] {key}: " in proc.stderr and quoted in proc.stderr and "PL203" not in proc.stderr
    with pytest.raises(UsageError, match="quote"):
        run(path)
