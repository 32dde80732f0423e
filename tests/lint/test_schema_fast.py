"""msprobe_lint.lint.schema.fast must agree with jsonschema (with the engine's
strict integers) on every instance: its True lets the engine skip
jsonschema, so a wrong True would hide findings."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import DATA, REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_lint.lint.schema import fast as fastschema
from msprobe_lint.lint.rules.schema import _validator
from msprobe_lint.lint.schema.files import key_index

PROBES = [0, -1, 1, 2, 65536, 1.0, 3.5, -0.0, True, False, None, "", "x", "L1", "l1", "all", "0-3", "3-1",
          [], [0], [-1], [True], [1.0], ["a"], ["a", "b"], ["a", "b", "c"], ["all"], ["all", "forward"],
          ["max", "min"], {}, {"overflow_nums": 0}]


def base_configs() -> list[dict]:
    found = []
    for pattern_root in (REPO / "tests" / "cases", DATA):
        for path in sorted(Path(pattern_root).rglob("*.json")):
            if path.name in ("expected.json", "meta.json", "index.json") or path.parent.name == "sarif":
                continue
            try:
                data = json.loads(path.read_bytes().decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):  # the corpus has broken files too
                continue
            found.append(data)
    return found


def variants(config) -> list:
    """The config, and each place in it replaced by each probe value,
    removed, or given an unknown key."""
    out = [config]
    if not isinstance(config, dict):
        return out

    def places(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                yield path + (key,)
                yield from places(value, path + (key,))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield path + (index,)
                yield from places(value, path + (index,))

    for path in list(places(config, ())):
        for probe in PROBES + ["<delete>", "<unknown-key>"]:
            copy_ = copy.deepcopy(config)
            parent = copy_
            for part in path[:-1]:
                parent = parent[part]
            if probe == "<delete>":
                del parent[path[-1]]
            elif probe == "<unknown-key>":
                if isinstance(parent[path[-1]], dict):
                    parent[path[-1]]["surprise"] = 1
                else:
                    continue
            else:
                parent[path[-1]] = copy.deepcopy(probe)
            out.append(copy_)
    for section in key_index():
        if section:
            for probe in PROBES[:12]:
                out.append({**config, section: {key: probe for key in key_index()[section]}})
    return out


def test_the_project_schema_compiles():
    assert fastschema._compiled() is not None


def test_agrees_with_jsonschema_on_every_case_and_its_variants():
    validator = _validator()
    checked = valid = 0
    for config in base_configs():
        for instance in variants(config):
            expected = validator.is_valid(instance)
            assert fastschema.is_valid(instance) is expected, json.dumps(instance)[:500]
            checked += 1
            valid += expected
    assert checked > 5000 and 0 < valid < checked


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70000) | st.floats(allow_nan=False) |
    st.sampled_from(["", "L0", "L1", "l2", "all", "md5", "0-3", "5-2", "a", "npy", "/d"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["overflow_nums", "check_mode", "scope", "list", "data_mode", "summary_mode",
                         "port", "bounds", "zzz", "backward_input", "rank_list", "preheat_step"]),
        inner, max_size=4),
    max_leaves=12)
top_keys = st.sampled_from(["task", "dump_path", "rank", "step", "level", "async_dump", "precision", "seed",
                            "statistics", "tensor", "overflow_check", "free_benchmark", "run_ut",
                            "grad_probe", "structure", "exception_dump", "nope"])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(top_keys, json_values, max_size=8))
def test_agrees_with_jsonschema_on_generated_configs(instance):
    assert fastschema.is_valid(instance) is _validator().is_valid(instance)


@pytest.mark.parametrize("one, two, same", [
    (1, 1.0, True), (0, False, False), (True, 1, False), (True, True, True), ("a", "a", True),
    ([0], [False], False), ({"a": 1}, {"a": 1.0}, True), ([1, 2], [1], False), (None, None, True),
    (0, None, False), ("0", 0, False), ([], {}, False)])
def test_equal_follows_json_schema(one, two, same):
    assert fastschema.equal(one, two) is same


def test_unknown_keywords_disable_the_shortcut():
    compiler = fastschema._Compiler({})
    with pytest.raises(fastschema.Unsupported):
        compiler.compile({"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": False})
    with pytest.raises(fastschema.Unsupported):
        compiler.compile({"format": "email"})
    with pytest.raises(fastschema.Unsupported):
        compiler.compile({"$ref": "other.json#/a"})
    check = fastschema._Compiler({"$defs": {"a": {"type": "integer"}}}).compile({"$ref": "#/$defs/a"})
    assert check(3) is True and check(3.0) is False and check(True) is False


def test_long_valid_lists_are_cut_for_jsonschema_with_the_same_findings(monkeypatch):
    """Issue 34: an invalid config with a 200,000-entry rank list took
    seconds in jsonschema, which descends into every (valid) entry. A long
    list its key's schema accepts is cut to one item; the findings stay."""
    from msprobe_lint.lint.rules import schema as stage

    data = {"task": "statistics", "dump_path": "/d", "level": "L1", "xx": 1,
            "step": list(range(5000)), "rank": [*range(3000), "9-1", -1],
            "statistics": {"list": [f"Functional.f{i}" for i in range(3000)], "scope": ["a"], "bad": 2}}
    shrunk = stage._shrunk(data, "8.3")
    assert shrunk["step"] == [0] and shrunk["statistics"]["list"] == ["Functional.f0"]
    assert shrunk["rank"] is data["rank"] and data["step"] == list(range(5000))  # a list with an error: all of it
    cut = stage.validate(data)
    monkeypatch.setattr(stage, "_shrunk", lambda data, profile, too_long=None: data)
    full = stage.validate(data)
    assert cut == full and len(cut[0]) >= 4
