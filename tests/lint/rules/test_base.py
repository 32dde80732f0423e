"""msprobe_lint.lint.rules.base: relations between rules are declared on
the rule (``supersedes``) and read by the engine for every rule alike
(issue 32; it was a PL601 special case in lint/engine.py)."""
from __future__ import annotations

import pytest

from msprobe_lint.lint import engine
from msprobe_lint.lint.context import Context, normalise
from msprobe_lint.lint.rules import base, load_all
from msprobe_lint.lint.selection import Selection

CONFIG = {"task": "overflow_check", "dump_path": "/tmp/dump", "level": "L1", "overflow_check": {"overflow_nums": 1}}


def findings(catalogue=None, monkeypatch=None):
    if catalogue is not None:
        monkeypatch.setattr(engine, "load_all", lambda: catalogue)
    context = Context({"msprobe_version": normalise("msprobe_version", "26.2.0", "installed mindstudio-probe 26.2.0"),
                       "framework": normalise("framework", "mindspore", "--framework")})
    return {(f.code, f.pointer) for f in engine.check_data(dict(CONFIG), context, selection=Selection())}


def test_pl601_declares_what_it_replaces():
    assert load_all()["PL601"].supersedes == (("PL103", "/task"), ("PL101", "/overflow_check"))


def test_the_engine_drops_what_a_reported_rule_supersedes(monkeypatch):
    found = findings()
    assert ("PL601", "/task") in found
    assert ("PL103", "/task") not in found and ("PL101", "/overflow_check") not in found
    # the same catalogue with PL601's declaration taken away: the 26.x schema's findings come back
    catalogue = dict(load_all())
    catalogue["PL601"] = catalogue["PL601"]._replace(supersedes=())
    found = findings(catalogue, monkeypatch)
    assert {("PL601", "/task"), ("PL103", "/task")} <= found


def test_any_rule_can_declare_it(monkeypatch):
    catalogue = dict(load_all())
    catalogue["PL601"] = catalogue["PL601"]._replace(supersedes=())
    catalogue["PL101"] = catalogue["PL101"]._replace(supersedes=(("PL601", "/task"),))
    found = findings(catalogue, monkeypatch)
    assert ("PL101", "/overflow_check") in found and ("PL601", "/task") not in found


@pytest.mark.parametrize("entry", [("PL299", "task"), ("PL298",), "PL103", ("PL298", "/task", 1)])
def test_a_malformed_declaration_is_refused(entry, monkeypatch):
    monkeypatch.setattr(base, "RULES", {})
    with pytest.raises(ValueError, match="supersedes"):
        base.define("PL298", "test-rule", "warning", "x", "test", "", supersedes=(entry,))
