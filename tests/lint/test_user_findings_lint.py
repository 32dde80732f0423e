"""Findings of a first-time user's session (bad input must give a clear
message and exit 2, never a traceback; nothing the user had is lost)."""
from __future__ import annotations

import json
import os

import pytest

from conftest import config, run_probe, write_config


def test_non_utf8_pyproject_is_a_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"\xff\xfe[tool]")
    path = write_config(tmp_path, config())
    proc = run_probe("lint", str(path), cwd=tmp_path)
    assert proc.returncode == 2 and "not UTF-8" in proc.stderr and "Traceback" not in proc.stderr


def test_probe_run_without_config_is_a_usage_error(tmp_path):
    marker = tmp_path / "started"
    proc = run_probe("run", "--", "touch", str(marker), cwd=tmp_path)
    assert proc.returncode == 2 and "CONFIG must be the msprobe config" in proc.stderr
    assert not marker.exists()
    upper = write_config(tmp_path, config(), "config.JSON")  # msprobe refuses the name, not only a missing CONFIG
    proc = run_probe("run", str(upper), "--", "touch", str(marker), cwd=tmp_path)
    assert proc.returncode == 2 and "must end in '.json', in lower case (msprobe's PrecisionDebugger" in proc.stderr
    assert "(rename it, e.g. to config.json)" in proc.stderr and not marker.exists()


def test_pl410_judges_the_name_msprobe_reads(tmp_path):
    """A fresh user's findings on PL410: hidden behind a syntax error;
    silent on a soft link to Real.JSON (msprobe resolves the link, then
    checks the real name) and wrong on Link.JSON -> config.json; a hint
    that renamed config.json.bak onto the config.json beside it."""
    def codes(*args):
        out = json.loads(run_probe("lint", "--isolated", "-f", "json", *args, cwd=tmp_path).stdout)
        return [(d["path"], d["code"], d["hint"]) for d in out["diagnostics"]]

    (tmp_path / "bad.JSON").write_text('{"task": "overflow_check",}')
    assert [c for _, c, _ in codes("bad.JSON")] == ["PL410", "PL001"]
    write_config(tmp_path, config(), "Real.JSON")
    os.symlink("Real.JSON", tmp_path / "link.json")
    write_config(tmp_path, config(), "config.json")
    os.symlink("config.json", tmp_path / "Link.JSON")
    found = codes("--check-fs", "link.json", "Link.JSON")
    assert [(p, c) for p, c, _ in found] == [("link.json", "PL406"), ("link.json", "PL410"), ("Link.JSON", "PL406")]
    assert "Real.json" in found[1][2]
    write_config(tmp_path, config(), "config.json.bak")
    write_config(tmp_path, config(), "other.json.bak")
    hints = [h for _, _, h in codes("config.json.bak", "other.json.bak")]
    assert hints == ["rename the file, e.g. to config_bak.json, and pass that name as config_path",
                     "rename the file, e.g. to other.json, and pass that name as config_path"]


def test_output_never_overwrites_an_input(tmp_path):
    path = write_config(tmp_path, config(levle="L1"))
    before = path.read_bytes()
    proc = run_probe("lint", str(path), "--isolated", "--format", "json", "--output", str(path))
    assert proc.returncode == 2 and "would be overwritten" in proc.stderr
    assert path.read_bytes() == before


def test_output_never_overwrites_the_script_or_the_settings(tmp_path):
    """A fresh user's finding: ``--script train.py --output train.py`` left
    the lint report where the training script was; so did the pyproject.toml
    holding [tool.probe-lint] and the script it names."""
    path = write_config(tmp_path, config())
    script = tmp_path / "train.py"
    script.write_text("import mindspore as ms\nms.set_context(mode=ms.PYNATIVE_MODE)\n")
    settings = tmp_path / "pyproject.toml"
    settings.write_text('[tool.probe-lint]\nscript = "train.py"\n')
    before = {f: f.read_bytes() for f in (script, settings)}
    for flags, target in ((["--isolated", "--script", str(script)], script), ([], script), ([], settings),
                          (["--config-file", str(settings)], settings), (["--force"], script)):  # not even so
        proc = run_probe("lint", str(path), *flags, "--output", str(target), cwd=tmp_path)
        assert proc.returncode == 2 and "is read by the lint" in proc.stderr, (flags, target, proc.stderr)
        assert {f: f.read_bytes() for f in before} == before
    proc = run_probe("lint", str(path), "--output", str(tmp_path / "report.txt"), cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "report.txt").exists(), proc.stderr


def test_graph_mode_with_pytorch_is_a_usage_error(tmp_path):
    """A fresh user's finding: --framework pytorch --mode graph was taken
    and gave two findings that contradict each other."""
    path = write_config(tmp_path, config())
    proc = run_probe("lint", str(path), "--isolated", "--framework", "pytorch", "--mode", "graph")
    assert proc.returncode == 2 and "does not go with --framework pytorch" in proc.stderr, proc.stderr
    proc = run_probe("lint", str(path), "--isolated", "--framework", "mindspore", "--mode", "graph")
    assert proc.returncode != 2 and "PL201" in proc.stdout


def test_unknown_codes_and_versions_and_folders_are_usage_errors(tmp_path):
    path = write_config(tmp_path, config())
    for args in (["--select", "PL999"], ["--ignore", "PL9"], ["--msprobe-version", "9.0"],
                 ["--msprobe-version", "25.1"], ["--cwd", str(tmp_path / "nowhere")]):
        proc = run_probe("lint", str(path), "--isolated", *args)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr, args
    later = run_probe("lint", str(path), "--isolated", "--msprobe-version", "27.0")  # judged as the newest 26.x
    assert later.returncode == 1 and "mindstudio-probe 26.2" in later.stdout


def test_a_cwd_that_is_not_a_folder_is_the_same_usage_error_with_or_without_check_fs(tmp_path):
    """--cwd only anchors the config's relative paths; a folder that is not
    there (or a file, or an empty name) is a mistyped option: exit 2 with
    what is wrong, whether or not --check-fs asks for the filesystem. An
    existing file was called "no such folder", and --cwd "" was ignored."""
    path = write_config(tmp_path, config(dump_path="out/dump"))
    (tmp_path / "afile").write_text("")
    for cwd, what in ((tmp_path / "nowhere", "no such folder"), (tmp_path / "afile", "is not a folder"),
                      ("", "no such folder")):
        for extra in ([], ["--check-fs"], ["--unsafe-fixes", "--diff"]):
            proc = run_probe("lint", str(path), "--isolated", "--cwd", str(cwd), *extra)
            assert proc.returncode == 2 and proc.stdout == "", (cwd, extra, proc.stdout)
            assert f"--cwd {str(cwd)!r}: {what} (--cwd names the folder the job starts in" in proc.stderr
            assert "Traceback" not in proc.stderr
    for extra in ([], ["--check-fs"]):  # an existing folder anchors the relative path
        proc = run_probe("lint", str(path), "--isolated", "--cwd", str(tmp_path), "--unsafe-fixes", "--diff", *extra)
        assert proc.returncode != 2 and str(tmp_path / "out" / "dump") in proc.stdout, proc.stderr


def test_messages_and_hints(lint):
    (rank,) = lint(config(rank=["0"]))
    assert rank.code == "PL301" and rank.hint.startswith("write 0")
    (step,) = lint(config(step=[-1]))
    assert step.hint == "ranks and steps count from 0"
    (control,) = lint('{"dump_path": "/a\tb"}')
    assert control.code == "PL001" and control.message.endswith("in a string (write it escaped, e.g. \\n or \\t)")
    (single,) = lint(config(rank=[1]), world_size=1, select=("PL303",))
    assert "the only rank is 0" in single.message


def test_explain_takes_a_rule_name():
    proc = run_probe("explain", "level-not-allowed")
    assert proc.returncode == 0 and proc.stdout.startswith("PL201 level-not-allowed")


def test_migrate_says_what_has_no_equivalent(tmp_path):
    path = write_config(tmp_path, {"task": "nan_check", "dump_path": "/d", "extra_info": True, "nan_check": {}})
    proc = run_probe("migrate", str(path), "--to", "8.3")
    assert proc.returncode == 0
    assert "'extra_info' has no equivalent in mindstudio-probe 8.3" in proc.stderr
    assert "'nan_check' has no equivalent" in proc.stderr


def _earlier_run(tmp_path):
    dump = tmp_path / "dump"
    (dump / "step0" / "rank").mkdir(parents=True)
    (dump / "step0" / "rank" / "dump.json").write_text("{}")
    os.chmod(dump, 0o750)
    return dump


def test_dump_of_an_earlier_run_warns_in_lint_and_blocks_a_guarded_launch(tmp_path):
    dump = _earlier_run(tmp_path)
    path = write_config(tmp_path, config(dump_path=str(dump)))
    os.chmod(path, 0o640)
    out = json.loads(run_probe("lint", str(path), "--isolated", "--check-fs", "--format", "json").stdout)
    (found,) = [d for d in out["diagnostics"] if d["code"] == "PL411"]
    assert found["severity"] == "warning" and "step0/rank" in found["message"]
    marker = tmp_path / "started"
    proc = run_probe("run", str(path), "--isolated", "--", "touch", str(marker), cwd=tmp_path)
    assert proc.returncode == 1 and "PL411" in proc.stderr and not marker.exists()
    assert (dump / "step0" / "rank" / "dump.json").read_text() == "{}"


@pytest.mark.parametrize("mine", ["step0/rank0", "rank0/step0"])
def test_runtime_gate_counts_only_its_own_rank_folder(tmp_path, mine):
    """In either nesting (``rank0/step0`` is read by `probe report` as a
    dump too): a worker counts its own rank folder and the single-process
    ``rank``, never a sibling's."""
    from msprobe_lint.lint.context import Context, Fact
    from msprobe_lint.lint.engine import lint_file

    dump = tmp_path / "dump"
    (dump / mine).mkdir(parents=True)
    (dump / mine / "dump.json").write_text("{}")
    os.chmod(dump, 0o750)
    path = write_config(tmp_path, config(dump_path=str(dump)))
    os.chmod(path, 0o640)

    def pl411(rank_dir):
        ctx = Context(facts={"rank_dir": Fact(rank_dir, "test")}, check_fs=True, runtime=True)
        return [d for d in lint_file(str(path), ctx).diagnostics if d.code == "PL411"]

    assert pl411("rank1") == []  # another worker of the same job already wrote rank0
    (found,) = pl411("rank0")
    assert found.severity.value == "error" and f"({mine})" in found.message
    (found,) = pl411("rank")  # a single process: any rank's folder is an earlier run's
    assert f"({mine})" in found.message
    rank0 = dump / mine[:mine.index("rank0") + len("rank0")]
    rank0.rename(rank0.with_name("rank"))  # a single process's earlier dump blocks a worker
    (found,) = pl411("rank1")
    assert f"({mine.replace('rank0', 'rank')})" in found.message


def test_context_flags_are_case_insensitive_like_pyproject(tmp_path):
    path = write_config(tmp_path, config(level="L1"))
    proc = run_probe("lint", str(path), "--isolated", "--mode", "Graph", "--jit-level", "o2", "--format", "json")
    assert proc.returncode == 1
    assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["PL201"]


def test_a_value_given_to_precisiondebugger_is_said_to_be_that_one(tmp_path):
    """A fresh user's finding: PrecisionDebugger(config, dump_path="out dir")
    was refused with PL401/PL402 at the config file's dump_path, whose own
    value was fine. The finding is still placed at the file's key, and now
    says the value judged is the keyword's, replacing the file's; without
    the key in the file it says it was given to PrecisionDebugger."""
    from msprobe_lint.lint.context import Context
    from msprobe_lint.lint.engine import lint_file

    path = write_config(tmp_path, config(dump_path="/abs/dump"))
    found = [d for d in lint_file(str(path), Context(), overrides={"dump_path": "out dir"}).diagnostics
             if d.code in ("PL401", "PL402")]
    assert {d.code for d in found} == {"PL401", "PL402"}
    assert all(d.message.endswith("(the dump_path= given to PrecisionDebugger, which replaces the file's value)")
               for d in found), found
    assert all(d.fix is None for d in found)
    data = config()
    del data["dump_path"]
    path = write_config(tmp_path, data)
    (relative,) = [d for d in lint_file(str(path), Context(), overrides={"dump_path": "out"}).diagnostics
                   if d.code == "PL401"]
    assert relative.message.endswith("(the dump_path= given to PrecisionDebugger)")


@pytest.mark.parametrize("text, suggestion", [("PL999", None), ("PL1011", "PL101"), ("pl1o1", "PL101"),
                                              ("unknwn-key", "unknown-key")])
def test_explain_suggests_only_a_near_miss(text, suggestion):
    """``probe explain PL999`` said "did you mean PL409?": two of three
    digits differ, no typo of it. A code is suggested when one character
    differs, a rule name when it is close."""
    from msprobe_lint.lint.rules import lookup

    with pytest.raises(LookupError) as caught:
        lookup(text)
    message = str(caught.value)
    if suggestion is None:
        assert "did you mean" not in message and "see `probe rules`" in message
    else:
        assert message.endswith(f"did you mean {suggestion}?"), message


def _members(path):
    return json.loads(path.read_text(), object_pairs_hook=lambda pairs: pairs)


def test_migrate_into_an_empty_section_of_the_new_name_keeps_the_values(tmp_path):
    """Defect 9: run_ut renamed to acc_check beside an empty "acc_check": {}
    wrote acc_check twice; json.load kept the empty one, white_list was
    lost. The empty section is dropped, the rename keeps every value."""
    path = tmp_path / "config.json"
    path.write_text('{\n  "task": "run_ut",\n  "dump_path": "/tmp/d",\n  "run_ut": {"white_list": ["conv2d"]},\n'
                    '  "acc_check": {}\n}\n')
    proc = run_probe("migrate", str(path), "--to", "26.0", "--write")
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == ('{\n  "task": "acc_check",\n  "dump_path": "/tmp/d",\n'
                                '  "acc_check": {"white_list": ["conv2d"]}\n}\n')
    assert "empty 'acc_check'" in proc.stderr
    # the old name empty, the new one holding values: the empty old section is dropped
    path.write_text('{"task": "run_ut", "dump_path": "/tmp/d", "acc_check": {"white_list": ["mm"]}, "run_ut": {}}')
    proc = run_probe("migrate", str(path), "--to", "26.0", "--write")
    assert proc.returncode == 0, proc.stderr
    assert _members(path) == [("task", "acc_check"), ("dump_path", "/tmp/d"), ("acc_check", [("white_list", ["mm"])])]


def test_migrate_refuses_a_rename_into_a_key_that_holds_values(tmp_path):
    """Both sections hold values: no rename can keep both; nothing is
    written, the reason is said, the exit status is 1."""
    text = ('{"task": "run_ut", "dump_path": "/tmp/d", "run_ut": {"white_list": ["conv2d"]},\n'
            ' "acc_check": {"black_list": ["mm"]}}\n')
    path = tmp_path / "config.json"
    path.write_text(text)
    for extra in ([], ["--write"]):
        proc = run_probe("migrate", str(path), "--to", "26.0", *extra)
        assert proc.returncode == 1, proc.stderr
        assert "'run_ut' cannot be renamed to 'acc_check'" in proc.stderr and "both hold" in proc.stderr
        assert "rewritten" not in proc.stderr and path.read_text() == text
    # the same inside a section (PyTorch's overflow_nums -> diff_nums)
    path.write_text('{"task": "overflow_check", "dump_path": "/d", "level": "L1",'
                    ' "overflow_check": {"overflow_nums": 2, "diff_nums": 3}}')
    proc = run_probe("migrate", str(path), "--to", "26.0", "--framework", "pytorch", "--write")
    assert proc.returncode == 1
    assert "'overflow_nums' in the overflow_check section cannot be renamed to 'diff_nums'" in proc.stderr
    assert json.loads(path.read_text())["overflow_check"] == {"overflow_nums": 2, "diff_nums": 3}
