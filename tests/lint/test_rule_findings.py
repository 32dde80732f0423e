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
    (found,) = lint(dict(config(), rank=None))
    assert found.code == "PL102" and found.message == "rank must be an array, not null"
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
