"""Where each context value comes from: flags over [tool.probe-lint] over
the script over the live environment, else unknown; provenance in
messages; the live environment (versions from metadata, world size from
the launcher) and PL601."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import codes, config, write_config
from msprobe_lint.lint import context as context_mod
from msprobe_lint.lint.api import LintOptions, UsageError, lint_paths, prepare
from msprobe_lint.lint.context import Context, Fact, environment_facts, normalise

GRAPH_SCRIPT = "import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE, jit_config={'jit_level': 'O0'})\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with a pyproject.toml, a config and a script; the
    live environment faked (mindspore 2.4.0, mindstudio-probe 8.3.3,
    WORLD_SIZE=8)."""
    versions = {"mindspore": "2.4.0", "mindstudio-probe": "8.3.3"}
    monkeypatch.setattr(context_mod, "installed_version", lambda dist: versions.get(dist))
    monkeypatch.setenv("WORLD_SIZE", "8")
    for name in ("RANK_SIZE", "MS_WORKER_NUM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)

    def make(table: str = "", script: str = GRAPH_SCRIPT, cfg=None) -> tuple[str, str]:
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + (
            "[tool.probe-lint]\n" + textwrap.dedent(table) if table else ""), encoding="utf-8")
        (tmp_path / "train.py").write_text(script, encoding="utf-8")
        return str(write_config(tmp_path, cfg if cfg is not None else config(level="L2"))), str(tmp_path / "train.py")

    return make


def ctx(path: str, **options) -> Context:
    context, _, _ = prepare(LintOptions(**options), first_path=path)
    return context


def test_each_layer_alone(project):
    path, script = project()
    context = ctx(path)
    assert context.fact("mindspore_version") == Fact(normalise("mindspore_version", "2.4.0", "").value,
                                                     "installed mindspore 2.4.0")
    assert context.fact("world_size").value == 8 and context.fact("world_size").source == "environment WORLD_SIZE"
    assert context.mode is None and context.value("jit_level") is None  # the environment never gives these
    context = ctx(path, script=script)
    assert context.fact("mode") == Fact("graph", f"{script}:2")
    assert context.fact("jit_level") == Fact("O0", f"{script}:2")


def test_flag_over_pyproject_over_script_over_environment(project):
    path, script = project(table='mode = "pynative"\njit-level = "O1"\nmindspore-version = "2.6.0"\n'
                                 'world-size = 4\n')
    context = ctx(path, script=script)
    assert context.fact("mode").value == "pynative" and "pyproject.toml" in context.fact("mode").source
    assert context.fact("jit_level").value == "O1"
    assert str(context.value("mindspore_version")) == "2.6.0"
    assert context.value("world_size") == 4
    context = ctx(path, script=script, mode="graph", jit_level="O2", mindspore_version="2.7.0", world_size=2)
    assert context.fact("mode") == Fact("graph", "--mode")
    assert context.fact("jit_level") == Fact("O2", "--jit-level")
    assert context.fact("mindspore_version").source == "--mindspore-version"
    assert context.fact("world_size") == Fact(2, "--world-size")


def test_script_over_environment(project):
    path, script = project(script=GRAPH_SCRIPT + "import mindspore\n")
    context = ctx(path, script=script)
    assert context.fact("framework").source.startswith(script)
    assert context.fact("mindspore_version").source.startswith("installed")


def test_isolated_reads_neither_pyproject_nor_environment(project):
    path, script = project(table='mode = "pynative"\n')
    context = ctx(path, isolated=True)
    assert context.facts == {}
    context = ctx(path, isolated=True, script=script)
    assert set(context.facts) == {"mode", "jit_level", "framework"}
    # --config-file is read even with --isolated: it was asked for explicitly
    context = ctx(path, isolated=True, config_file=str(Path(path).parent / "pyproject.toml"))
    assert context.fact("mode").value == "pynative"


def test_messages_say_which_value_and_where_from(project):
    path, script = project()
    run = lint_paths([path], LintOptions(script=script))
    by_code = {d.code: d.message for d in run.results[0].diagnostics}
    assert "jit_level=O0 from " + script + ":2" in by_code["PL202"]
    assert "mindspore_version=2.4.0 from installed mindspore 2.4.0" in by_code["PL203"]
    run = lint_paths([path], LintOptions(script=script, jit_level="O1", mindspore_version="2.5.0"))
    by_code = {d.code: d.message for d in run.results[0].diagnostics}
    assert "jit_level=O1 from --jit-level" in by_code["PL202"]
    assert "mindspore_version=2.5.0 from --mindspore-version" in by_code["PL203"]


def test_world_size_from_the_environment_drives_pl303(project):
    path, _ = project(cfg=config(rank=[9]))
    assert "PL303" in codes(lint_paths([path], LintOptions()).results[0].diagnostics)
    assert "PL303" not in codes(lint_paths([path], LintOptions(isolated=True)).results[0].diagnostics)


@pytest.mark.parametrize("environ, expected", [
    ({"RANK_SIZE": "4"}, (4, "environment RANK_SIZE")),
    ({"WORLD_SIZE": "2"}, (2, "environment WORLD_SIZE")),
    ({"MS_WORKER_NUM": "16"}, (16, "environment MS_WORKER_NUM")),
    ({"RANK_SIZE": "3", "WORLD_SIZE": "5"}, (3, "environment RANK_SIZE")),
    ({"RANK_SIZE": "x", "WORLD_SIZE": "5"}, (5, "environment WORLD_SIZE")),
    ({"RANK_SIZE": "0"}, None),
    ({}, None),
])
def test_world_size_variables(monkeypatch, environ, expected):
    monkeypatch.setattr(context_mod, "installed_version", lambda dist: None)
    fact = environment_facts(environ).get("world_size")
    assert (None if fact is None else (fact.value, fact.source)) == expected


def test_versions_come_from_metadata_never_by_import(monkeypatch):
    import builtins
    import sys

    real_import = builtins.__import__

    def guard(name, *args, **kwargs):
        if name.split(".")[0] in ("mindspore", "msprobe"):
            raise AssertionError(f"{name} was imported")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", guard)
    for name in [m for m in sys.modules if m.split(".")[0] in ("mindspore", "msprobe")]:
        monkeypatch.delitem(sys.modules, name)
    facts = environment_facts({})
    from importlib import metadata

    try:
        expected = metadata.version("mindspore")
    except metadata.PackageNotFoundError:
        expected = None
    got = facts.get("mindspore_version")
    assert (None if got is None else str(got.value)) == (None if expected is None else
                                                          str(normalise("mindspore_version", expected, "").value))


def test_broken_version_metadata_is_ignored(monkeypatch):
    monkeypatch.setattr(context_mod, "installed_version", lambda dist: "not-a-version")
    assert "mindspore_version" not in environment_facts({})


def test_bad_flag_value_is_a_usage_error(tmp_path):
    path = str(write_config(tmp_path, config()))
    with pytest.raises(UsageError, match="world_size"):
        lint_paths([path], LintOptions(isolated=True, world_size=0))


# ---------------------------------------------------------------- PL601


def test_pl601_bad_and_good(project, monkeypatch):
    path, _ = project(cfg=config())
    monkeypatch.setattr(context_mod, "installed_version",
                        lambda dist: {"mindstudio-probe": "26.2.0", "mindspore": "2.6.0"}.get(dist))
    found = lint_paths([path], LintOptions()).results[0].diagnostics
    assert "PL601" in codes(found)
    assert "26.2.0" in next(d.message for d in found if d.code == "PL601")
    monkeypatch.setattr(context_mod, "installed_version",
                        lambda dist: {"mindstudio-probe": "8.3.3", "mindspore": "2.6.0"}.get(dist))
    assert "PL601" not in codes(lint_paths([path], LintOptions()).results[0].diagnostics)


def test_pl601_only_from_the_live_environment(project, monkeypatch):
    path, _ = project(cfg=config())
    monkeypatch.setattr(context_mod, "installed_version", lambda dist: "26.2.0")
    assert "PL601" not in codes(lint_paths([path], LintOptions(isolated=True)).results[0].diagnostics)
    assert "PL601" not in codes(lint_paths([path], LintOptions(isolated=True, msprobe_version="26.2.0"))
                                .results[0].diagnostics)


def test_pl601_not_for_other_tasks_or_frameworks(project, monkeypatch):
    monkeypatch.setattr(context_mod, "installed_version", lambda dist: "26.2.0" if dist == "mindstudio-probe" else None)
    path, _ = project(cfg=config(task="statistics"))
    assert "PL601" not in codes(lint_paths([path], LintOptions()).results[0].diagnostics)
    path, _ = project(cfg=config())
    assert "PL601" not in codes(lint_paths([path], LintOptions(framework="pytorch")).results[0].diagnostics)
