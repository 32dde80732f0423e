"""Defect 10: one diagnostic per value, and a safe type fix never writes a
value out of range. ``"overflow_nums": 0.0`` gave PL102 [*] "write 0" and
PL107; ``"0"`` gave only PL102 whose fix wrote 0, still out of range (the
same for a port of 70000.0 / "70000")."""
from __future__ import annotations

import json

import pytest
from packaging.version import Version

from msprobe_lint.lint.context import Context, Fact
from msprobe_lint.lint.engine import lint_file


def lint(data: dict, release: str = "8.3") -> list:
    context = Context({"msprobe_version": Fact(Version(release), "--msprobe-version")})
    return lint_file("config.json", context, raw=json.dumps(data).encode()).diagnostics


def overflow(value) -> dict:
    return {"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1", "overflow_check": {"overflow_nums": value}}


def port(value) -> dict:
    return {"task": "tensor", "dump_path": "/tmp/d", "level": "L1", "step": [0], "tensor": {"port": value}}


@pytest.mark.parametrize("data, release, words", [
    (overflow(0.0), "8.3", "out of range"), (overflow("0"), "8.3", "out of range"),
    (overflow(" 0 "), "8.3", "out of range"),
    (overflow(-2.0), "8.3", "must be >= -1"), (overflow("-2"), "8.3", "must be >= -1"),
    (port(70000.0), "8.1", "must be <= 65535"), (port("70000"), "8.1", "must be <= 65535"),
])
def test_a_value_out_of_range_once_converted_is_one_range_finding_without_a_fix(data, release, words):
    (found,) = lint(data, release)
    assert found.code == "PL107" and words in found.message and found.fix is None, found
    written = json.dumps(data.get("overflow_check", data.get("tensor"))).split(": ", 1)[1].rstrip("}")
    assert written in found.message  # the value as the user wrote it


@pytest.mark.parametrize("data, release, number", [
    (overflow(3.0), "8.3", 3), (overflow("3"), "8.3", 3), (overflow("-1"), "8.3", -1),
    (port(8000.0), "8.1", 8000), (port("8000"), "8.1", 8000),
])
def test_a_value_in_range_once_converted_keeps_its_safe_type_fix(data, release, number):
    (found,) = lint(data, release)
    assert found.code == "PL102" and found.fix is not None and found.fix.safe
    assert found.fix.description == f"write {number}"
