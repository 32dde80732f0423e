"""``--format sarif``: a SARIF 2.1.0 log that validates against the
official schema, with every rule in the driver and one result per
diagnostic at its place."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, SARIF_SCHEMA, SHARED_CASES, config, run_probe, write_config


@pytest.fixture(scope="module")
def sarif_validator():
    from jsonschema import Draft4Validator

    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    Draft4Validator.check_schema(schema)
    return Draft4Validator(schema)


def assert_valid(validator, log: dict) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def sarif(*args: str, cwd: Path) -> tuple[dict, int]:
    proc = run_probe("lint", "--isolated", "--format", "sarif", *args, cwd=cwd)
    assert proc.stderr == ""
    return json.loads(proc.stdout), proc.returncode


def test_log_validates_and_describes_every_rule(tmp_path, sarif_validator):
    from msprobe_lint import __version__
    from msprobe_lint.lint.rules import load_all

    write_config(tmp_path, config(level="l1", overflow_check={"overflow_number": 3}, seed=1,
                                  free_benchmark={}), "config.json")
    log, status = sarif("config.json", cwd=tmp_path)
    assert status == 1
    assert_valid(sarif_validator, log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "msprobe-lint" and driver["version"] == __version__
    assert driver["informationUri"] == "https://pypi.org/project/msprobe-lint/"  # issue 34: no project URL set
    rules = load_all()
    assert [r["id"] for r in driver["rules"]] == list(rules)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for descriptor in driver["rules"]:
        info = rules[descriptor["id"]]
        assert descriptor["name"] == info.name
        assert descriptor["shortDescription"]["text"] == info.summary
        assert descriptor["fullDescription"]["text"]
        assert descriptor["defaultConfiguration"]["level"] == levels[info.severity.value]
        if info.section("Bad"):
            assert info.section("Bad") in descriptor["help"]["text"]
            assert "**Bad:**" in descriptor["help"]["markdown"]
            assert info.section("Good") in descriptor["help"]["text"]


def test_results_carry_rule_level_location_and_pointer(tmp_path, sarif_validator):
    write_config(tmp_path, config(level="l1", overflow_check={"overflow_number": 3}, seed=1,
                                  free_benchmark={}), "config.json")
    log, _ = sarif("config.json", cwd=tmp_path)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results = {r["ruleId"]: r for r in run["results"]}
    assert set(results) == {"PL101", "PL103", "PL106", "PL206"}
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": "config.json", "uriBaseId": "%SRCROOT%"}
    assert [results[c]["level"] for c in ("PL101", "PL103", "PL106", "PL206")] == [
        "error", "error", "warning", "note"]
    typo = results["PL101"]
    assert "overflow_number" in typo["message"]["text"] and "overflow_nums" in typo["message"]["text"]
    region = typo["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 8, "startColumn": 9, "endLine": 8, "endColumn": 9 + len('"overflow_number"')}
    logical = typo["locations"][0]["logicalLocations"][0]
    assert logical["fullyQualifiedName"] == "/overflow_check/overflow_number"
    assert typo["properties"]["pointer"] == "/overflow_check/overflow_number"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    assert run["columnKind"] == "unicodeCodePoints"


def test_uri_is_relative_with_forward_slashes_and_percent_encoded(tmp_path, sarif_validator):
    folder = tmp_path / "sub dir" / "nested"
    folder.mkdir(parents=True)
    write_config(folder, config(level="l1"), "my config.json")
    log, _ = sarif(str(Path("sub dir") / "nested" / "my config.json"), cwd=tmp_path)
    assert_valid(sarif_validator, log)
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "sub%20dir/nested/my%20config.json", "uriBaseId": "%SRCROOT%"}
    # an absolute path under the working folder is made relative too
    log, _ = sarif(str(folder / "my config.json"), cwd=tmp_path)
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact["uri"] == "sub%20dir/nested/my%20config.json"


def test_file_outside_the_working_folder_gets_an_absolute_uri(tmp_path, sarif_validator):
    inside, outside = tmp_path / "work", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    path = write_config(outside, config(level="l1"))
    log, _ = sarif(str(path), cwd=inside)
    assert_valid(sarif_validator, log)
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": path.resolve().as_uri()}


def test_clean_syntax_and_unreadable_files(tmp_path, sarif_validator):
    write_config(tmp_path, config(), "ok.json")
    log, status = sarif("ok.json", cwd=tmp_path)
    assert status == 0 and log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]
    assert_valid(sarif_validator, log)
    write_config(tmp_path, '{"task": "overflow_check",}', "broken.json")
    log, status = sarif("broken.json", "missing.json", cwd=tmp_path)
    assert status == 2
    assert_valid(sarif_validator, log)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["PL001", "PL006"]
    assert "pointer" not in results[0]["properties"]  # a syntax error has no place in the tree
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": False}]


def assert_valid_log_for(validator, paths: list[str]) -> None:
    from msprobe_lint.lint.api import LintOptions, lint_paths
    from msprobe_lint.lint.reporters.sarif import build_log

    run = lint_paths(paths, LintOptions(isolated=True, mode="graph"))
    log = build_log(run.results)
    assert_valid(validator, log)
    assert len(log["runs"][0]["results"]) == sum(len(r.diagnostics) for r in run.results) > 20
    json.dumps(log, allow_nan=False)


def test_every_golden_case_config_gives_a_valid_log(sarif_validator):
    paths = sorted(str(p) for p in (REPO / "tests" / "cases").glob("*/*.json")
                   if p.name != "expected.json")
    assert len(paths) > 80
    assert_valid_log_for(sarif_validator, paths)


@pytest.mark.shared
def test_every_shared_case_gives_a_valid_log(sarif_validator):
    assert_valid_log_for(sarif_validator, sorted(str(p) for p in (SHARED_CASES / "lint").glob("*/config.json")))


def test_fixes_are_sarif_fix_objects(tmp_path, sarif_validator):
    text = json.dumps(config(level="l1", dump_path="rel"), indent=4)
    write_config(tmp_path, text, "config.json")
    log, _ = sarif("config.json", cwd=tmp_path)
    assert_valid(sarif_validator, log)
    by_rule = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    (level_fix,) = by_rule["PL103"]["fixes"]
    assert level_fix["description"]["text"] == "replace 'l1' with 'L1'"
    assert level_fix["properties"]["applicability"] == "safe"
    (change,) = level_fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "config.json", "uriBaseId": "%SRCROOT%"}
    (replacement,) = change["replacements"]
    region = replacement["deletedRegion"]
    start = region["charOffset"]
    assert text[start:start + region["charLength"]] == '"l1"'
    assert replacement["insertedContent"]["text"] == '"L1"'
    assert by_rule["PL401"]["fixes"][0]["properties"]["applicability"] == "unsafe"
