"""The rule registry: codes unique and stable in shape, each documented
with a rationale, a bad and a good example, and each proven by a bad and a
good input (rule_examples.py)."""
from __future__ import annotations

import re

import pytest

from conftest import write_config
from msprobe_lint.lint.api import LintOptions, lint_paths
from msprobe_lint.lint.rules.registry import load_all
from rule_examples import EXAMPLES

RULES = load_all()


def test_codes_have_the_stable_shape_and_unique_names():
    assert all(re.fullmatch(r"PL[0-9]{3}", code) for code in RULES)
    names = [r.name for r in RULES.values()]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)


def test_catalogue_matches_spec():
    """Every code of SPEC 3.1 is registered, and nothing else."""
    expected = {f"PL00{i}" for i in range(1, 8)} | {f"PL10{i}" for i in range(1, 8)} \
        | {f"PL20{i}" for i in range(1, 8)} | {f"PL30{i}" for i in range(1, 5)} \
        | {f"PL40{i}" for i in range(1, 9)} | {f"PL50{i}" for i in range(1, 7)} | {"PL601"}
    assert set(RULES) == expected


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_is_documented(code):
    info = RULES[code]
    assert info.summary and not info.summary.endswith(".")
    assert len(info.rationale) > 40, "rationale too short"
    assert info.section("Bad"), "no Bad: example"
    assert info.section("Good"), "no Good: example"


def test_every_code_has_examples():
    assert set(EXAMPLES) == set(RULES)


def _run(tmp_path, case):
    options = dict(case.get("options", {}))
    cfg = case.get("config")
    path = None
    if "setup" in case:
        made = case["setup"](tmp_path)
        path = made.pop("path", None)
        cfg = made.pop("config", cfg)
        options.update(made)
    if path is None:
        path = str(write_config(tmp_path, cfg))
    if case.get("script"):
        script = tmp_path / "train.py"
        script.write_text(case["script"], encoding="utf-8")
        options["script"] = str(script)
    run = lint_paths([path], LintOptions(isolated=True, **options))
    return [d.code for d in run.results[0].diagnostics]


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_bad_example_reports_the_code(tmp_path, code):
    assert code in _run(tmp_path, EXAMPLES[code][0])


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_good_example_does_not(tmp_path, code):
    assert code not in _run(tmp_path, EXAMPLES[code][1])
