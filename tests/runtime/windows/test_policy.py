"""The window rules of docs/checks.md, tested without MindSpore
(probe_runtime.windows.policy imports nothing of the runtime)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from probe_runtime.windows.policy import DEFAULT_CHECKS, Checks, Kind, WindowPolicy, parse_checks


def test_the_default_is_exact_checks():
    assert DEFAULT_CHECKS is Checks.EXACT
    assert parse_checks(None) is Checks.EXACT
    assert parse_checks("") is Checks.EXACT


def test_a_mode_is_read_whatever_its_case_and_white_space():
    assert parse_checks("Exact") is Checks.EXACT
    assert parse_checks(" AUTO\n", "PROBE_CHECKS") is Checks.AUTO
    assert parse_checks("  ") is Checks.EXACT


def test_a_bad_mode_is_refused_naming_where_it_came_from():
    with pytest.raises(ValueError, match=r"PROBE_CHECKS must be 'exact', 'auto' or 'sentinel', not 'foo'"):
        parse_checks("foo", "PROBE_CHECKS")


def test_exact_checks_run_exact_windows_whatever_happened():
    policy = WindowPolicy(Checks.EXACT)
    for computed in (True, False, True):
        assert policy.next_kind() is Kind.EXACT
        policy.ask_exact()
        policy.closed(computed_gradients=computed)
    assert policy.next_kind() is Kind.EXACT


def test_auto_checks_watch_after_a_window_with_gradients_only():
    policy = WindowPolicy(Checks.AUTO)
    assert policy.next_kind() is Kind.EXACT  # the first window
    policy.closed(computed_gradients=True)
    assert policy.next_kind() is Kind.WATCHED
    policy.closed(computed_gradients=False)  # an evaluation step
    assert policy.next_kind() is Kind.EXACT
    policy.closed(computed_gradients=True)
    assert policy.next_kind() is Kind.WATCHED


def test_a_finding_auto_checks_could_not_name_asks_for_one_exact_window():
    policy = WindowPolicy(Checks.AUTO)
    policy.closed(computed_gradients=True)
    assert policy.next_kind() is Kind.WATCHED
    policy.ask_exact()
    policy.closed(computed_gradients=True)
    assert policy.next_kind() is Kind.EXACT
    policy.closed(computed_gradients=True)
    assert policy.next_kind() is Kind.WATCHED


def test_sentinel_checks_until_they_find_then_exact_for_good():
    policy = WindowPolicy(Checks.SENTINEL)
    assert policy.next_kind() is Kind.SENTINEL
    policy.closed(computed_gradients=True)
    assert policy.next_kind() is Kind.SENTINEL
    policy.sentinel_found()
    for _ in range(3):
        assert policy.next_kind() is Kind.EXACT
        policy.closed(computed_gradients=True)


@pytest.mark.parametrize("checks, defaulted, distributed, expected", [
    (Checks.AUTO, True, True, Checks.EXACT),     # a defaulted auto mode in a job of several ranks
    (Checks.AUTO, False, True, Checks.AUTO),     # chosen: kept
    (Checks.AUTO, True, False, Checks.AUTO),
    (Checks.SENTINEL, True, True, Checks.SENTINEL),
    (Checks.EXACT, True, True, Checks.EXACT),
])
def test_settle_changes_only_a_defaulted_auto_mode_of_a_distributed_job(checks, defaulted, distributed, expected):
    policy = WindowPolicy(checks, defaulted=defaulted)
    assert policy.settle(distributed) is (expected is not checks)
    assert policy.checks is expected
    assert policy.settle(distributed) is False  # only the first window settles


def test_the_policy_imports_nothing_of_the_runtime():
    code = ("import sys; import probe_runtime.windows.policy; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('mindspore', 'numpy') "
            "or (m.startswith('probe_runtime.') and m not in ('probe_runtime.windows', 'probe_runtime.windows.policy', "
            "'probe_runtime.debugger', 'probe_runtime.errors', 'probe_runtime.gate', 'probe_runtime.state', "
            "'probe_runtime.lifecycle', 'probe_runtime.scenario', 'probe_runtime.instance'))]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == "[]"
