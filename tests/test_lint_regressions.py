"""Regression tests for the crashes and wrong positions the lint fuzzer
(fuzz/fuzz_lint.py, tests/test_fuzz_lint.py) found. Each test failed
before its fix."""
from __future__ import annotations

import json
from pathlib import Path

from msprobe_lint.engine import lint_file
from msprobe_lint.reporters import REPORTERS, get

from conftest import run_probe, write_config

BASE = '{"task": "overflow_check", "dump_path": "/home/dump", "level": "L1", '


def codes(path: Path, **kw) -> list[str]:
    return [d.code for d in lint_file(str(path), **kw).diagnostics]


def test_integer_over_python_digit_limit_is_pl001_at_the_number(tmp_path):
    # json.loads raised ValueError("Exceeds the limit (4300 digits) ...")
    # straight through the lint: a traceback.
    text = BASE + '"x": "' + "1" * 5000 + '",\n "rank": [' + "9" * 5000 + "]}"
    path = write_config(tmp_path, text)
    (diagnostic,) = lint_file(str(path)).diagnostics
    assert diagnostic.code == "PL001"
    assert "4300 digits" in diagnostic.message
    assert (diagnostic.line, diagnostic.column) == (2, 11)  # the number, not the digits in the string
    done = run_probe("lint", "--isolated", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{path}:2:11: PL001" in done.stdout


def test_negative_and_limit_sized_integers(tmp_path):
    ok = write_config(tmp_path, BASE + '"overflow_check": {"overflow_nums": ' + "1" * 4300 + "}}", "ok.json")
    assert "PL001" not in codes(ok)
    bad = write_config(tmp_path, BASE + '"overflow_check": {"overflow_nums": -' + "1" * 4301 + "}}", "bad.json")
    (diagnostic,) = lint_file(str(bad)).diagnostics
    assert diagnostic.code == "PL001" and diagnostic.column == len(BASE) + len('"overflow_check": {"overflow_nums": ') + 1


def test_escaped_lone_surrogate_in_a_key_or_value_can_be_reported_in_every_format(tmp_path):
    # "\ud800" is valid JSON and json.loads gives a lone surrogate; it went
    # into messages and pointers, and writing the report (UTF-8) raised
    # UnicodeEncodeError.
    path = write_config(tmp_path, BASE + '"\\ud800": 1, "overflow_check": {"\\udfff~/": 2}, "x": "\\ud83d"}')
    result = lint_file(str(path))
    assert {d.code for d in result.diagnostics} == {"PL101"}
    for fmt in REPORTERS:
        get(fmt)([result]).encode("utf-8")
    for fmt in REPORTERS:
        done = run_probe("lint", "--isolated", "--format", fmt, str(path))
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
    report = json.loads(run_probe("lint", "--isolated", "--format", "json", str(path)).stdout)
    assert "\\ud800" in report["diagnostics"][0]["message"]


def test_rank_range_with_a_number_over_the_digit_limit_is_pl301_not_an_internal_error(tmp_path):
    # int() on the range's ends raised ValueError inside PL301 and PL302:
    # "internal error in rule PL301 ... please report it".
    long = "1" * 5000
    path = write_config(tmp_path, BASE + f'"rank": ["{long}-2", "0-{long}", 1], "step": ["{long}-{long}"]}}')
    diagnostics = lint_file(str(path)).diagnostics
    assert not [d for d in diagnostics if "internal error" in d.message]
    assert [(d.code, d.pointer) for d in diagnostics] == [
        ("PL301", "/rank/0"), ("PL301", "/rank/1"), ("PL301", "/step/0")]
    assert "4300 digits" in diagnostics[0].message
