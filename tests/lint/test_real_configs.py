"""Real input: every JSON example of msprobe's 03.config_examples.md and
the default config.json of the mindstudio-probe 8.1.2 and 8.3.3 wheels
(tests/data/msprobe_docs, index.json names each one's scenario)."""
from __future__ import annotations

import json

import pytest
from conftest import DATA

from msprobe_lint.lint.api import LintOptions, lint_paths

DOCS_DIR = DATA / "msprobe_docs"
INDEX = json.loads((DOCS_DIR / "index.json").read_text(encoding="utf-8"))
FLAG_NAMES = {"--framework": "framework", "--mode": "mode", "--jit-level": "jit_level",
              "--mindspore-version": "mindspore_version"}


def _options(args: list[str]) -> dict:
    return {FLAG_NAMES[args[i]]: args[i + 1] for i in range(0, len(args), 2)}


def _lint(entry: dict):
    options = LintOptions(isolated=True, **_options(entry.get("lint_args", [])))
    return lint_paths([str(DOCS_DIR / entry["file"])], options).results[0].diagnostics


DOCS = [e for e in INDEX if not e["is_default"] and e["version"] in ("8.1.2", "8.3.3")]


@pytest.mark.parametrize("entry", DOCS, ids=[e["file"] for e in DOCS])
def test_docs_example_has_no_error_in_its_own_scenario(entry):
    errors = [d for d in _lint(entry) if d.severity.value == "error"]
    assert errors == []


def test_docs_examples_cover_every_scenario():
    assert {e["scenario"] for e in DOCS} >= {"pytorch", "mindspore-graph", "mindspore-pynative"}
    assert len(DOCS) >= 28


@pytest.mark.parametrize("version", ["8.1.2", "8.3.3"])
def test_shipped_default_config_gives_exactly_its_errors(version):
    (entry,) = [e for e in INDEX if e["is_default"] and e["version"] == version]
    found = _lint(entry)
    errors = [(d.code, d.pointer) for d in found if d.severity.value == "error"]
    assert errors == [("PL401", "/dump_path")]  # its "./dump_path" is relative
    others = sorted(d.code for d in found if d.severity.value != "error")
    assert others == ["PL106"] + ["PL206"] * 5  # enable_dataloader; five inactive sections
