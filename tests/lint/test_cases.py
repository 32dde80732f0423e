"""The golden lint corpus (tests/cases/, see its README): every case's
`probe lint` run gives exactly its expected exit status, stderr and
diagnostics (or, for a format case, its whole report). On a mismatch the
expected and actual results are printed side by side; after a deliberate
change, `python tools/regen_cases.py CASE...` rewrites the expected files
for review as a diff (the suite never does)."""
from __future__ import annotations

import pytest

import golden

CASES = golden.discover()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case, tmp_path):
    expected = golden.load_expected(case)
    assert expected is not None, f"{case.name} has no expected.json: run python tools/regen_cases.py {case.name}"
    actual = golden.run(case, tmp_path)
    if actual != expected:
        pytest.fail(f"{case.name}: {case.description}\n\n{golden.side_by_side(expected, actual)}\n\n"
                    f"if the change is intended: python tools/regen_cases.py {case.name}", pytrace=False)


def _expected_codes() -> set[str]:
    found = set()
    for case in CASES:
        expected = golden.load_expected(case)
        for line in (expected.diagnostics or []) if expected else []:
            found.add(line.split(": ", 1)[1].split()[0])
    return found


def test_every_rule_code_has_a_case():
    from msprobe_lint.lint.rules import load_all

    missing = sorted(set(load_all()) - _expected_codes())
    assert not missing, f"no case in tests/cases reports {missing}"


def test_every_output_format_and_release_profile_has_a_case():
    from msprobe_lint.lint.profiles import for_version

    assert {c.format for c in CASES} >= set(golden.FORMATS)
    def target(case):
        try:
            return for_version(case.args[case.args.index("--msprobe-version") + 1])
        except ValueError:  # a usage case: a release that never existed
            return None

    targeted = {target(c) for c in CASES if "--msprobe-version" in c.args}
    assert targeted >= {"8.1", "8.3", "26.0", "26.1", "26.2"}


def test_every_case_is_described_and_both_kinds_of_context_are_covered():
    assert all(c.description for c in CASES), [c.name for c in CASES if not c.description]
    assert any(c.isolated for c in CASES) and any(not c.isolated for c in CASES)
    assert any(c.env for c in CASES) and any((c.folder / "pyproject.toml").is_file() for c in CASES)
    assert any("--script" in c.args for c in CASES)


def test_a_mismatch_is_shown_side_by_side():
    expected = golden.Outcome(1, "", diagnostics=["config.json:5:14: PL201 error \"/level\""])
    actual = golden.Outcome(0, "", diagnostics=[])
    table = golden.side_by_side(expected, actual)
    lines = table.splitlines()
    assert lines[0].startswith("expected") and lines[0].rstrip().endswith("actual")
    assert any(line.startswith("exit: 1") and "* exit: 0" in line for line in lines)
    assert any("PL201" in line and line.rstrip().endswith("* (no diagnostics)") for line in lines)


def test_malformed_case_is_refused(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "case.toml").write_text('args = ["config.json"]\nformats = "json"\n')
    with pytest.raises(golden.CaseError, match="unknown case.toml key"):
        golden.load_case(folder)
    (folder / "case.toml").write_text('args = ["config.json"]\n')
    with pytest.raises(golden.CaseError, match="pyproject.toml"):
        golden.load_case(folder)


def test_expected_files_round_trip_and_regen_refuses_unknown_cases(tmp_path):
    import subprocess
    import sys

    from conftest import REPO, config, write_config

    folder = tmp_path / "cases" / "sample"
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text('description = "x"\nargs = ["config.json", "--isolated"]\nformat = "text"\n')
    write_config(folder, config(level="l1"))
    case = golden.load_case(folder)
    outcome = golden.run(case, tmp_path)
    assert outcome.exit == 1 and "PL103" in outcome.stdout and "@CASE@" not in outcome.stdout
    assert golden.write_expected(case, outcome) is True
    assert golden.load_expected(case) == outcome and golden.write_expected(case, outcome) is False
    (folder / "case.toml").write_text('description = "x"\nargs = ["config.json", "--isolated"]\n')
    case = golden.load_case(folder)
    outcome = golden.run(case, tmp_path / "again")
    assert outcome.diagnostics == ['config.json:6:14: PL103 error "/level"']
    assert golden.write_expected(case, outcome) is True and not (folder / "expected.stdout").exists()
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "regen_cases.py"), "no-such-case"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no such case: no-such-case" in proc.stderr
