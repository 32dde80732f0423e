"""The rule catalogue (msprobe_lint/lint/rules/): codes unique and stable
in shape, each documented with a rationale, a bad and a good example, each
proven by a bad and a good input (rule_examples.py); every family module
of the folder is loaded without being listed; ``probe explain``'s
look-up."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, write_config
from msprobe_lint.lint.api import LintOptions, lint_paths
from msprobe_lint.lint.rules import load_all, lookup
from rule_examples import EXAMPLES

RULES = load_all()


def test_codes_have_the_stable_shape_and_unique_names():
    assert all(re.fullmatch(r"PL[0-9]{3}", code) for code in RULES)
    names = [r.name for r in RULES.values()]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)


def test_catalogue_matches_spec():
    """Every code of SPEC 3.1 is registered, with those issue 28 added
    (PL008, PL305, PL306, PL409), PL410 and PL411, and nothing else."""
    expected = {f"PL00{i}" for i in range(1, 9)} | {f"PL10{i}" for i in range(1, 8)} \
        | {f"PL20{i}" for i in range(1, 8)} | {f"PL30{i}" for i in range(1, 7)} \
        | {f"PL40{i}" for i in range(1, 10)} | {"PL410", "PL411"} | {f"PL50{i}" for i in range(1, 7)} | {"PL601"}
    assert set(RULES) == expected


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_is_documented(code):
    info = RULES[code]
    assert info.summary and not info.summary.endswith(".")
    assert len(info.rationale) > 40, "rationale too short"
    assert info.section("Bad"), "no Bad: example"
    assert info.section("Good"), "no Good: example"


def test_every_family_module_is_loaded_and_names_its_family():
    folder = REPO / "msprobe_lint" / "lint" / "rules"
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "base"}
    assert {info.family for info in RULES.values()} == modules


EXTRA_FAMILY = '''from .base import rule


@rule("PL699", "extra-rule", "info", "An extra rule")
def extra(config, context):
    """Why it matters.

    Bad:
        {}
    Good:
        {}
    """
    return []
'''


def test_a_new_family_file_is_loaded_without_being_listed(tmp_path):
    """The catalogue walks its folder: a family file added to a copy of the
    package is in load_all(), beside every rule already there."""
    shutil.copytree(REPO / "msprobe_lint", tmp_path / "msprobe_lint", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "msprobe_lint" / "lint" / "rules" / "extra.py").write_text(EXTRA_FAMILY, encoding="utf-8")
    code = ("import msprobe_lint, sys; from msprobe_lint.lint.rules import load_all; rules = load_all(); "
            "print(msprobe_lint.__file__.startswith(sys.argv[1]), rules['PL699'].family, len(rules))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.stdout.split() == ["True", "extra", str(len(RULES) + 1)], proc.stdout + proc.stderr


@pytest.mark.parametrize("text, code", [("PL204", "PL204"), (" pl204 ", "PL204"), ("level-not-allowed", "PL201"),
                                        ("LEVEL-NOT-ALLOWED", "PL201")])
def test_lookup_by_code_or_name(text, code):
    assert lookup(text).code == code


@pytest.mark.parametrize("text, message", [
    ("PL1", "'PL1' is a prefix of 7 rules (PL101, PL102, PL103, PL104, PL105, PL106, PL107); explain takes one code"),
    ("PL2O1", "unknown rule 'PL2O1'; did you mean PL201?"),
    ("nothing-like-it", "unknown rule 'nothing-like-it'; see `probe rules`"),
])
def test_lookup_says_why_it_found_nothing(text, message):
    with pytest.raises(LookupError) as err:
        lookup(text)
    assert err.value.args[0] == message


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
