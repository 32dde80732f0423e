"""Findings of a new user about the rules: what msprobe refuses must be
reported (a rank or step over 1000000, grad_probe bounds that do not
ascend), what it accepts must not be ("1 - 3"), the unknown mode is taken
from the level for check_mode as for overflow_nums, and the messages say
exactly what is wrong (the missing part of a rank range, no "null null").

The msprobe facts are read from the mindstudio-probe wheels (8.1.2, 8.3.3,
26.0.0-26.2.0); the rule modules cite the files."""
from __future__ import annotations

import json

import pytest
from conftest import config

from msprobe_lint.lint.api import LintOptions, fix_paths
from msprobe_lint.lint.schema.fast import is_valid


def only(diagnostics, code):
    return [d for d in diagnostics if d.code == code]


# ---------------------------------------------------------------- 1. rank/step over 1000000 (PL301)


@pytest.mark.parametrize("key", ["step", "rank"])
def test_an_integer_over_a_million_is_refused(lint, key):
    (found,) = lint(config(**{key: [2000000]}))
    assert found.code == "PL301" and found.pointer == f"/{key}/0"
    assert "mindstudio-probe 8.1 to 26.2" in found.message
    assert f"Each element of {key} must be between 0 and 1000000" in found.message
    assert found.hint == f"use {key}s between 0 and 1000000"


@pytest.mark.parametrize("key", ["step", "rank"])
def test_a_range_past_a_million_is_refused(lint, key):
    (found,) = lint(config(**{key: ["0-2000000"]}))
    assert found.code == "PL301" and found.pointer == f"/{key}/0"
    assert f"{key} range '0-2000000' goes past 1000000" in found.message
    assert "The boundaries must fall within the range of [0, 1000000]" in found.message
    assert "mindstudio-probe 8.1 to 26.2" in found.message


def test_a_list_of_more_than_a_million_entries_is_refused(lint):
    """msprobe 8.1.2's get_real_step_or_rank (core/common/utils.py:510-512)
    refuses a rank/step list longer than 1000000 entries as written (before
    ranges are expanded); the lint passed it with a PL302 at most."""
    from msprobe_lint.lint.schema.files import load_schema

    # compact: under 10 MiB; no PL302 for its repeats (one diagnostic per fault)
    (found,) = lint(json.dumps(config(step=[0] * 1_000_001)))
    assert (found.code, found.severity.value, found.pointer) == ("PL107", "error", "/step")
    assert 'step has 1000001 entries' in found.message and "its length cannot exceed 1000000" in found.message
    assert '"a-b" ranges' in found.hint
    for profile in ("8.1", "8.3", "26.0", "26.2"):  # the schema says so too (jsonschema would take minutes here)
        assert load_schema(profile)["$defs"]["indexList"]["maxItems"] == 1_000_000
        base = {"task": "statistics", "dump_path": "/home/data_dump"}
        assert is_valid(dict(base, rank=[0] * 1_000_001), profile) is False
        assert is_valid(dict(base, rank=[0] * 1_000_000), profile) is True


@pytest.mark.parametrize("profile", ["8.1", "8.3", "26.0", "26.2"])
def test_a_million_itself_is_accepted_by_every_release(lint, profile):
    statistics = {"task": "statistics", "dump_path": "/home/data_dump", "level": "L1"}
    assert lint(dict(statistics, step=[1000000, "0-999999"]), msprobe_version=profile) == []
    assert is_valid(dict(statistics, step=[1000000]), profile) is True
    assert is_valid(dict(statistics, step=[1000001]), profile) is False  # the schema's maximum, for editors too


# ---------------------------------------------------------------- 2. grad_probe bounds (PL107)

GRAD = {"task": "grad_probe", "dump_path": "/home/data_dump"}


def test_bounds_that_descend_are_refused(lint):
    (found,) = lint(dict(GRAD, grad_probe={"grad_level": "L1", "bounds": [1, 0.5]}))
    assert found.code == "PL107" and found.pointer == "/grad_probe/bounds/1"
    assert "bounds[1] 0.5 is less than the bound before it, 1" in found.message
    assert '"The input list should be ascending"' in found.message
    assert found.hint == "sort the bounds: [0.5, 1]"


def test_a_repeated_bound_only_pytorch_refuses(lint):
    repeated = dict(GRAD, grad_probe={"bounds": [-1, 0, 0, 1]})
    assert lint(repeated) == []  # framework unknown: MindSpore's msprobe accepts it
    assert lint(repeated, framework="mindspore") == []
    (found,) = lint(repeated, framework="pytorch")
    assert found.code == "PL107" and found.pointer == "/grad_probe/bounds/2"
    assert '"bounds list is not ascending"' in found.message and "framework=pytorch" in found.message
    assert found.hint == "sort the bounds and drop the repeats: [-1, 0, 1]"


def test_bounds_of_an_inactive_section_are_checked_but_not_in_26(lint):
    bad = config(task="statistics", grad_probe={"bounds": [2, 1]})
    assert only(lint(bad), "PL107")
    assert not only(lint(bad, msprobe_version="26.2"), "PL107")  # no grad_probe there: PL101


# ---------------------------------------------------------------- 3. the unknown mode (PL204)
# SPEC 3 takes an L2 config with the mode unknown to be static graph and
# leaves every other rule without its context value silent: L0/L1 imply no
# mode. docs/context.md said "at L0/L1 dynamic graph"; the doc was wrong.


def test_the_unknown_mode_is_inferred_at_l2_only(lint):
    assert lint(config(level="L1", dump_path="/tmp/d", overflow_check={"check_mode": "aicore"})) == []
    (nums,) = lint(config(level="L2", overflow_check={"overflow_nums": 3}), select=("PL204",))
    assert nums.pointer == "/overflow_check/overflow_nums"
    (known,) = lint(config(overflow_check={"check_mode": "aicore"}), mode="pynative")
    assert known.code == "PL204" and "mode=pynative" in known.message


def test_the_docs_say_what_the_unknown_mode_does():
    from conftest import REPO

    from msprobe_lint.lint.rules import load_all

    context = " ".join((REPO / "docs" / "context.md").read_text(encoding="utf-8").split())
    assert "at L0/L1 dynamic graph" not in context
    assert "An L0/L1 config implies no mode" in context
    explained = " ".join(load_all()["PL204"].doc.split())
    assert "an L0/L1 config implies no mode" in explained


# ---------------------------------------------------------------- 4. PL303 on a partly valid range


def test_a_range_partly_beyond_the_world_names_the_missing_ranks(lint):
    (found,) = lint(config(rank=["6-9"]), world_size=8, select=("PL303",))
    assert found.message.startswith("ranks 8-9 of '6-9' do not exist with world size 8")
    assert found.hint == "write \"6-7\" (the ranks of '6-9' that exist)"
    (one,) = lint(config(rank=["7-8"]), world_size=8, select=("PL303",))
    assert one.message.startswith("rank 8 of '7-8' does not exist") and one.hint.startswith("write 7 ")
    (whole,) = lint(config(rank=["8-9"]), world_size=8, select=("PL303",))
    assert whole.message.startswith("rank '8-9' does not exist")


# ---------------------------------------------------------------- 5. PL102 wording


def test_null_is_not_named_twice(lint):
    (found,) = lint(dict(config(), async_dump=None))  # msprobe refuses it: not a bool (core/common_config.py:48)
    assert found.code == "PL102" and found.message == "async_dump must be a boolean, not null"
    (number,) = lint(config(rank=0))
    assert number.message == "rank must be an array, not integer 0"


# ---------------------------------------------------------------- 6. what msprobe's int() reads in a range (PL301)


@pytest.mark.parametrize("entry", ["1 - 3", " 1-3 ", "+1-+3", "1_0-2_0", "\uff11-\uff13", "1\t-\t3"])
def test_a_range_msprobe_reads_is_accepted(lint, entry):
    assert lint(config(rank=[entry])) == []


@pytest.mark.parametrize("entry", ["1--3", "-1-3", "1-3-5", "1 2-3", "1-", "1__0-3", "+ 1-3", "\u00b2-3"])
def test_a_range_msprobe_refuses_is_still_pl301(lint, entry):
    assert [d.code for d in lint(config(rank=[entry]))] == ["PL301"], entry


def test_a_range_with_blanks_counts_for_the_other_rank_rules(lint):
    found = lint(config(rank=["0 - 3", 2, " 6 - 9"]), world_size=8)
    assert [(d.code, d.pointer) for d in found] == [("PL302", "/rank/1"), ("PL303", "/rank/2")]
    assert "ranks 8-9 of ' 6 - 9'" in found[1].message


def test_a_reversed_range_with_blanks_is_fixed_to_the_plain_form(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config(step=[" 5 - 2 "])))
    fix_paths([str(path)], LintOptions(isolated=True, select=("PL301",)))
    assert json.loads(path.read_text())["step"] == ["2-5"]


# ---------------------------------------------------------------- 7. what msprobe refuses or accepts, read from its
# source (mindstudio-probe 8.1.2 and 8.3.3; the rule modules cite the lines)

FREE = {"task": "free_benchmark", "dump_path": "/home/data_dump", "level": "L1"}


def test_online_run_ut_keys_are_known_where_read_and_never_renamed(lint):
    run_ut = {"task": "run_ut", "dump_path": "/home/data_dump",
              "run_ut": {"is_online": True, "host": "127.0.0.1", "port": 59208, "rank_list": [0],
                         "tls_path": "/home/user/certs"}}
    assert lint(run_ut, framework="pytorch", msprobe_version="8.1") == []
    tensor = {"task": "tensor", "dump_path": "/home/data_dump", "step": [0],
              "tensor": {"list": ["matmul"], "tls_path": "/home/user/certs", "online_run_ut_recompute": True}}
    assert lint(tensor, framework="pytorch", msprobe_version="8.1") == []
    # 8.3.3 reads none of them: deprecated there, and no rename into another key anywhere
    found = lint(run_ut, framework="pytorch")
    assert {d.code for d in found} == {"PL106"} and len(found) == 5
    assert all("mindstudio-probe 8.3 no longer reads it" in d.message for d in found)
    (unknown,) = lint(dict(tensor, tensor={"list": ["matmul"], "tls_path": "/c"}), msprobe_version="26.0")
    assert unknown.code == "PL101" and unknown.fix is None and "mindstudio-probe 8.1" in unknown.message
    assert "--msprobe-version 8.1" in unknown.hint


def test_online_run_ut_keys_are_ignored_by_8_3(lint):
    tensor = {"task": "tensor", "dump_path": "/home/data_dump", "step": [0],
              "tensor": {"list": ["matmul"], "online_run_ut": True, "nfs_path": "/home/nfs", "host": "127.0.0.1",
                         "port": 59208}}
    found = lint(tensor, framework="pytorch")
    assert [(d.code, d.pointer) for d in found] == [("PL106", f"/tensor/{key}") for key in
                                                   ("online_run_ut", "nfs_path", "host", "port")]
    assert lint(tensor, framework="pytorch", msprobe_version="8.1") == []


def test_if_preheat_is_described_as_refused_with_fix():
    from msprobe_lint.lint.schema.files import load_schema

    for profile in ("8.1", "8.3"):
        text = load_schema(profile)["$defs"]["freeBenchmarkSection"]["properties"]["if_preheat"]["description"]
        assert "refuses it with handler_type fix" in text and "fix only" not in text


@pytest.mark.parametrize("framework,section,expected", [
    ("mindspore", {"fuzz_device": "cpu", "pert_mode": "to_cpu"},
     [("/free_benchmark/fuzz_device", '"fuzz_device must be npu or empty"'),
      ("/free_benchmark/pert_mode", '"pert_mode must be improve_precision, add_noise')]),
    ("pytorch", {"pert_mode": "to_cpu"}, [("/free_benchmark/pert_mode", "You need to and can only set fuzz_device")]),
    ("pytorch", {"fuzz_device": "cpu"}, [("/free_benchmark/fuzz_device", "You need to and can only set fuzz_device")]),
    (None, {"pert_mode": "to_cpu"}, [("/free_benchmark/pert_mode", "You need to and can only set fuzz_device")]),
    ("mindspore", {"handler_type": "fix", "pert_mode": "add_noise"},
     [("/free_benchmark/pert_mode", "pert_mode must be improve_precision or empty when handler_type is fix")]),
    (None, {"handler_type": "fix", "pert_mode": "bit_noise"},
     [("/free_benchmark/pert_mode", "The pert_mode when opening fix handler must be one of")]),
    ("pytorch", {"handler_type": "fix", "fuzz_stage": "backward"},
     [("/free_benchmark/fuzz_stage", "The fuzz_stage when opening fix handler must be one of ['forward']")]),
    ("mindspore", {"handler_type": "fix", "fuzz_stage": "backward"},
     [("/free_benchmark/fuzz_stage", "handler_type must be check or empty when fuzz_stage is backward")]),
    ("pytorch", {"handler_type": "fix", "if_preheat": True},
     [("/free_benchmark/if_preheat", "Preheating is not supported for fix handler type")]),
    ("pytorch", {"scope": ["Torch.matmul.0.forward"], "list": ["matmul"]},
     [("/free_benchmark/list", "scope and list cannot both be set")]),
])
def test_free_benchmark_combinations_msprobe_refuses(lint, framework, section, expected):
    found = lint(dict(FREE, free_benchmark=section), framework=framework)
    assert [d.code for d in found] == ["PL103"] * len(expected)
    for diagnostic, (where, words) in zip(found, expected):
        assert diagnostic.pointer == where and words in diagnostic.message, diagnostic.message
        assert "msprobe stops" in diagnostic.message and diagnostic.hint


@pytest.mark.parametrize("framework,section", [
    ("pytorch", {"fuzz_device": "cpu", "pert_mode": "to_cpu"}),
    ("pytorch", {"handler_type": "fix", "pert_mode": "to_cpu", "fuzz_device": "cpu"}),
    ("mindspore", {"handler_type": "fix", "if_preheat": True}),  # MindSpore only warns about preheating
    ("mindspore", {"scope": ["a"], "list": ["b"]}),  # its free_benchmark does not build that scope
    (None, {"fuzz_device": "cpu", "pert_mode": "to_cpu"}),  # PyTorch accepts it: framework needed
    ("pytorch", {"handler_type": "check", "pert_mode": "add_noise", "if_preheat": True}),
])
def test_free_benchmark_combinations_msprobe_accepts(lint, framework, section):
    assert lint(dict(FREE, free_benchmark=section), framework=framework) == []


def test_async_dump_tensor_needs_a_list(lint):
    tensor = {"task": "tensor", "dump_path": "/home/data_dump", "level": "L1", "step": [0], "async_dump": True}
    for version in ("8.1", "8.3"):
        (found,) = lint(dict(tensor, tensor={"list": []}), framework="mindspore", msprobe_version=version)
        assert found.code == "PL104" and found.pointer == "/tensor/list"
        assert "the parameters list cannot be empty" in found.message
    (missing,) = lint(tensor)
    assert missing.code == "PL104" and missing.pointer == "/async_dump"
    assert lint(dict(tensor, tensor={"list": ["conv2d"]})) == []
    assert lint(dict(tensor, level="debug", tensor={"list": []})) == []  # debug ignores the list


def test_async_dump_refuses_md5_from_8_3(lint):
    statistics = {"task": "statistics", "dump_path": "/home/data_dump", "level": "L1", "async_dump": True,
                  "statistics": {"summary_mode": "md5"}}
    (found,) = lint(statistics)
    assert found.code == "PL103" and found.pointer == "/statistics/summary_mode"
    assert "summary_mode cannot be" in found.message
    assert lint(statistics, msprobe_version="8.1") == []
    listed = dict(statistics, statistics={"summary_mode": ["max", "md5"]})
    (item,) = lint(listed, framework="mindspore")
    assert item.code == "PL103" and item.pointer == "/statistics/summary_mode/1"
    assert lint(listed) == []  # the list is MindSpore's: framework needed


def test_pytorch_summary_mode_is_a_string(lint):
    statistics = {"task": "statistics", "dump_path": "/home/data_dump", "level": "L1",
                  "statistics": {"summary_mode": ["max", "min"]}}
    (found,) = lint(statistics, framework="pytorch")
    assert found.code == "PL102" and found.pointer == "/statistics/summary_mode"
    assert "summary_mode is invalid, summary_mode is not in ['statistics', 'md5']" in found.message
    assert lint(statistics, framework="mindspore") == [] and lint(statistics) == []


def test_exception_dump_is_not_available_for_pytorch_in_8_3(lint):
    dump = {"task": "exception_dump", "dump_path": "/home/data_dump", "level": "L1"}
    (found,) = lint(dump, framework="pytorch")
    assert found.code == "PL205" and found.pointer == "/task" and "'NoneType' object is not callable" in found.message
    assert lint(dump, framework="mindspore") == [] and lint(dump) == []


def test_pytorch_level_l2_wants_task_tensor_no_scope_and_one_api(lint):
    l2 = {"dump_path": "/home/data_dump", "level": "L2"}
    (task,) = lint(dict(l2, task="statistics"), framework="pytorch")
    assert task.code == "PL103" and task.pointer == "/level" and "the task must be set to tensor" in task.message
    found = lint(dict(l2, task="tensor", tensor={"scope": ["Torch.a.0.forward", "Torch.b.0.forward"],
                                                  "list": ["a", "b"]}), framework="pytorch")
    assert [(d.code, d.pointer) for d in found] == [("PL107", "/tensor/scope"), ("PL107", "/tensor/list")]
    assert "the scope cannot be configured" in found[0].message and "one api name" in found[1].message
    assert lint(dict(l2, task="tensor", tensor={"list": ["Torch.matmul.0.forward"]}), framework="pytorch") == []
    assert lint(dict(l2, task="statistics"), framework="mindspore", mode="graph", jit_level="O2") == []


def test_an_invalid_name_regex_stops_mindspore_at_l2(lint):
    bad = {"task": "statistics", "dump_path": "/home/data_dump", "level": "L2",
           "statistics": {"list": ["ok", "name-regex(Default/Conv[)"]}}
    (found,) = lint(bad, framework="mindspore", mode="graph", jit_level="O2")
    assert found.code == "PL103" and found.pointer == "/statistics/list/1"
    assert "Illegal regular expressions exist in the list." in found.message
    assert lint(bad) == []  # PyTorch does not look at it: framework needed
    good = dict(bad, statistics={"list": ["name-regex(Default/Conv.*)"]})
    assert lint(good, framework="mindspore", mode="graph", jit_level="O2") == []


def test_data_mode_holds_at_most_four_modes(lint):
    five = config(task="statistics", statistics={"data_mode": ["input", "input", "output", "forward", "backward"]})
    (found,) = lint(five)
    assert found.code == "PL107" and found.pointer == "/statistics/data_mode"
    assert "cannot exceed 4" in found.hint
    assert lint(config(task="statistics", statistics={"data_mode": ["input", "output", "forward", "backward"]})) == []


def test_nulls_msprobe_reads_as_absent_are_warnings(lint):
    nulls = dict(config(), rank=None, step=None, overflow_check={"overflow_nums": None, "check_mode": None})
    found = lint(nulls, mode="pynative")
    assert sorted(d.pointer for d in found) == ["/overflow_check/check_mode", "/overflow_check/overflow_nums",
                                                "/rank", "/step"]
    assert all(d.severity.value == "warning" and "reads it as absent" in d.message for d in found)
    empty = config(overflow_check={"check_mode": ""})
    (ms,) = lint(empty, framework="mindspore")
    assert ms.code == "PL103" and ms.severity.value == "warning" and "PyTorch's msprobe refuses it" in ms.message
    (pt,) = lint(empty, framework="pytorch")
    assert pt.code == "PL103" and pt.severity.value == "error"
    assert lint(config(overflow_check={"overflow_nums": "3"}))[0].severity.value == "error"


@pytest.mark.parametrize("key, value, code, meaning", [
    ("task", None, "PL102", "statistics"), ("task", "", "PL103", "statistics"),
    ("level", None, "PL102", "L1"), ("level", "", "PL103", "L1"),
    ("overflow_check", None, "PL102", "every option of the section at its default"),
])
def test_null_or_empty_task_level_and_section_are_warnings(lint, key, value, code, meaning):
    """msprobe 8.1.2 reads a null or "" task as statistics, level as L1
    (mindspore/debugger/debugger_config.py:39, core/debugger/
    precision_debugger.py:146-147) and a null active section as {}
    (mindspore/ms_config.py:140-142): they were PL102/PL103 errors, though
    a null rank was a warning."""
    (found,) = lint(dict(config(), **{key: value}), mode="pynative")
    assert (found.code, found.severity.value, found.pointer) == (code, "warning", "/" + key)
    assert found.message.endswith(f"reads it as absent, meaning {meaning}") or \
        f"meaning {meaning} (PyTorch" in found.message
    (unknown,) = lint(config(overflow_check={"check_mode": ""}))
    assert unknown.severity.value == "warning" and "PyTorch's msprobe refuses it" in unknown.message


def test_a_null_level_is_the_default_l1_for_the_level_rules(lint):
    found = lint(dict(config(), level=None), mode="graph")
    assert sorted((d.code, d.severity.value) for d in found) == [("PL102", "warning"), ("PL201", "error")]
    assert "level defaults to L1" in [d for d in found if d.code == "PL201"][0].message


def test_a_null_active_section_is_an_error_on_pytorch(lint):
    (found,) = lint(dict(config(), overflow_check=None), framework="pytorch")
    assert found.code == "PL102" and found.severity.value == "error" and "AttributeError" in found.message


def test_the_schema_accepts_what_the_lint_only_warns_about():
    from jsonschema import Draft202012Validator

    from msprobe_lint.lint.schema.files import load_schema

    for profile in ("8.1", "8.3", "26.0", "26.2"):
        validator = Draft202012Validator(load_schema(profile))
        base = {"task": "statistics", "dump_path": "/data/dump"}
        for key, value in (("task", None), ("task", ""), ("level", None), ("level", ""), ("rank", None),
                           ("step", None), ("statistics", None)):
            assert validator.is_valid(dict(base, **{key: value})), (profile, key, value)
        assert not validator.is_valid(dict(base, level="l1")) and not validator.is_valid(dict(base, rank=0))


def test_nulls_stay_plain_errors_inside_probe_runtime():
    """probe_runtime's gate and probe run need the plain form (and make
    PL102 an error): their message must not say the value is accepted."""
    from msprobe_lint.lint.rules.schema import validate

    found, _ = validate(dict(config(), rank=None, level=None, overflow_check={"overflow_nums": None}), runtime=True)
    assert sorted(f.pointer for f in found) == ["/level", "/overflow_check/overflow_nums", "/rank"]
    assert all(f.code == "PL102" and f.severity is None and "reads it as absent" not in f.message for f in found)
