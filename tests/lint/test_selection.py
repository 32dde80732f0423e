"""msprobe_lint/lint/selection.py: code prefixes as --select and
[tool.probe-lint] give them, checked against the catalogue, and matched."""
from __future__ import annotations

import pytest

from msprobe_lint.lint.selection import Selection, SelectionError, check_code, known_codes, matches, parse_codes


def test_parse_splits_commas_strips_and_upper_cases():
    assert parse_codes(["pl2, PL401", "PL3,", " ,PL1"]) == ("PL2", "PL401", "PL3", "PL1")
    assert parse_codes(["all"]) == ("ALL",)


@pytest.mark.parametrize("text, message", [
    ("E501", "'E501' is not a rule code, prefix or name (e.g. PL201, PL2, ALL, unknown-key)"),
    ("PL", "'PL' is not a rule code, prefix or name (e.g. PL201, PL2, ALL, unknown-key)"),
    ("PL2011", "'PL2011' is not a rule code, prefix or name (e.g. PL201, PL2, ALL, unknown-key)"),
    ("PL2x", "'PL2X' is not a rule code, prefix or name (e.g. PL201, PL2, ALL, unknown-key)"),
    ("PL9", "'PL9' matches no rule; see `probe rules`"),
    ("PL209", "'PL209' matches no rule; see `probe rules`"),
])
def test_a_bad_prefix_is_refused_with_the_reason(text, message):
    with pytest.raises(SelectionError) as err:
        check_code(text)
    assert str(err.value) == message
    with pytest.raises(SelectionError):
        parse_codes([f"PL1,{text}"])


def test_known_codes_and_matching():
    assert known_codes("PL30") == ["PL301", "PL302", "PL303", "PL304", "PL305", "PL306"]
    assert len(known_codes("ALL")) == 46
    assert matches("PL204", ("PL2",)) and matches("PL204", ("ALL",)) and not matches("PL204", ("PL20 1",))


def test_selection_select_ignore_and_pointer_scoped_ignores():
    selection = Selection(select=("PL2", "PL401"), ignore=("PL204",),
                          pointer_ignores=(("/overflow_check", ("PL1",)),))
    assert [c for c in ("PL101", "PL201", "PL204", "PL401", "PL402") if selection.enabled(c)] == ["PL201", "PL401"]
    assert not selection.keeps("PL101", "/overflow_check/overflow_nums")
    assert not selection.keeps("PL101", "/overflow_check")
    assert selection.keeps("PL101", "/overflow_checks")
    assert selection.keeps("PL201", "/overflow_check") and selection.keeps("PL101", None)
    assert Selection().enabled("PL601")
