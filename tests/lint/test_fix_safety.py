"""What a fix may do (issues 26 and 28): a safe fix writes only what the
user plainly meant, and no fix deletes what another wrote.

- PL101's did-you-mean renames only a slip of the keyboard: never a key
  some release, section or tool this project knows (8.1, 8.3, 26.0, 26.1,
  26.2, every section, the ATB dump config), never to a key whose schema
  the value does not fit (then the rename is unsafe), never when the two
  names are different words (``dump_enable`` -> ``dump_path``,
  ``bench_path`` -> ``nfs_path``, ``filter_level`` -> ``risk_level``);
- PL105 moves a key only between the places msprobe reads (the top level
  and the active task's section), so PL206 cannot then remove it;
- a removal of a section holding keys is never safe, and ``--fix`` never
  applies a removal covering what an earlier fix of the run wrote;
- every fix of every rule, over generated configs: the safe ones resolve
  their finding, keep the text parseable and never remove a non-empty
  section.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from conftest import config
from msprobe_lint.lint.context import Context, Fact
from msprobe_lint.lint.diagnostic import Diagnostic, Edit, Fix, Severity
from msprobe_lint.lint.engine import lint_file
from msprobe_lint.lint.fixes.edits import apply_fixes, fix_text
from msprobe_lint.lint.positions import split
from msprobe_lint.lint.profiles import PROFILES
from msprobe_lint.lint.rules import load_all
from msprobe_lint.lint.schema.files import ATB, key_index
from msprobe_lint.lint.schema.keys import known_places, plausible_misspelling

RELEASES = sorted(PROFILES)
PROPERTY = settings(deadline=None, derandomize=True, database=None, max_examples=150,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
# Every key some release or the ATB dump tool knows, anywhere.
KNOWN = sorted({key for name in RELEASES + [ATB] for keys in key_index(name).values() for key in keys})


def lint_as(text: str, release: str, **facts) -> list[Diagnostic]:
    context = Context({"msprobe_version": Fact(Version(release), "--msprobe-version"),
                       **{k: Fact(v, "--" + k) for k, v in facts.items()}})
    return lint_file("config.json", context, raw=text.encode("utf-8")).diagnostics


def value_at(data, ptr: str):
    node = data
    for token in split(ptr):
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def exists(data, ptr: str) -> bool:
    try:
        value_at(data, ptr)
        return True
    except (KeyError, IndexError, TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------
# The reported cases

@pytest.mark.parametrize("release", RELEASES)
def test_dump_enable_is_never_renamed_to_dump_path(release):
    found = lint_as(json.dumps({"task": "statistics", "dump_enable": True, "level": "L1"}), release)
    assert all(d.fix is None or "dump_path" not in d.fix.description for d in found)


def test_bench_path_in_tensor_is_not_renamed_to_nfs_path_for_8_3():
    text = json.dumps(config(task="tensor", step=[0], tensor={"list": ["mm"], "bench_path": "/data/golden"}))
    (unknown,) = [d for d in lint_as(text, "8.3") if d.code == "PL101"]
    assert unknown.fix is None
    assert "26.0, 26.1 and 26.2" in unknown.message and "remove it" in unknown.hint


def test_filter_level_is_not_renamed_to_risk_level_for_26():
    text = json.dumps(config(task="statistics", filter_level=1))
    (unknown,) = [d for d in lint_as(text, "26.2") if d.code == "PL101"]
    assert unknown.fix is None and "ATB dump config" in unknown.message


def test_a_typo_whose_value_does_not_fit_is_renamed_only_as_an_unsafe_fix():
    (typo,) = [d for d in lint_as(json.dumps(config(overflow_check={"overflow_numbr": "3"})), "8.3")
               if d.code == "PL101"]
    assert typo.fix is not None and not typo.fix.safe
    (typo,) = [d for d in lint_as(json.dumps(config(overflow_check={"overflow_numbr": 3})), "8.3")
               if d.code == "PL101"]
    assert typo.fix.safe and typo.fix.description == "rename 'overflow_numbr' to 'overflow_nums'"


@pytest.mark.parametrize("release", RELEASES)
def test_no_fix_is_applied_to_a_file_whose_task_names_no_msprobe_task(release):
    """A hunt's finding: the pre-commit fix hook renamed ``steps`` to
    ``step`` in a trainer config (``"task": "translation"``) that only
    shares the ``task`` key with msprobe. A task near none of msprobe's
    is no typo: the file is reported, nothing in it is fixed. A typo of a
    task is still fixed, and its file with it."""
    text = json.dumps({"task": "translation", "model": "t5-small", "steps": [1000, 2000], "Rank": 8})
    found = lint_as(text, release)
    assert {d.code for d in found} >= {"PL101", "PL103"} and all(d.fix is None for d in found), found
    (task,) = [d for d in found if d.code == "PL103" and d.pointer == "/task"]
    assert "no fix is applied to this file while its task names no msprobe task" in task.message
    assert fix_text(text, lambda t: lint_as(t, release))[0] == text
    typo = json.dumps(config(task="overflow-check", overflow_check={"overflow_numbr": 3}))
    assert '"overflow_nums": 3' in fix_text(typo, lambda t: lint_as(t, "8.3"))[0]  # 26.x no longer reads it


def test_moved_key_is_not_deleted_with_an_inactive_section():
    """The issue's chain: "device" (read only in statistics) at the top of an
    overflow_check config. It is not moved into statistics, so PL206's
    removal of that section takes nothing the user wrote at the top."""
    text = json.dumps({"task": "overflow_check", "dump_path": "/d", "level": "L1", "device": "host",
                       "statistics": {}}, indent=2)
    fixed, applied, left = fix_text(text, lambda t: lint_as(t, "8.3"), unsafe=True)
    assert json.loads(fixed)["device"] == "host"
    assert [d.code for d in applied] == ["PL206"]
    assert [d.code for d in left] == ["PL105"]


def test_a_removal_covering_what_a_fix_wrote_is_never_applied():
    """The guard itself: a fix moved a key into /statistics in an earlier
    round; removing /statistics is then refused (the move's edits are taken
    as already applied)."""
    removal = Diagnostic("config.json", 3, 3, "PL206", Severity.INFO, "inactive", None, "/statistics",
                         fix=Fix("remove the inactive section", (Edit(10, 30, ""),), False, (), ("/statistics",)))
    text = "x" * 40
    assert apply_fixes(text, [removal], unsafe=True, protected=["/statistics/device"])[1] == []
    assert apply_fixes(text, [removal], unsafe=True, protected=["/statistic"])[1] == [removal]


@pytest.mark.parametrize("release", RELEASES)
def test_removing_a_section_with_keys_is_never_safe(release):
    found = lint_as(json.dumps(config(task="statistics", tensor={"file_format": "npy"}, statistics={})), release)
    removals = [d for d in found if d.fix is not None and d.fix.removes]
    assert removals and all(not d.fix.safe for d in removals if "/tensor" in d.fix.removes)


@pytest.mark.parametrize("release", [r for r in RELEASES if "overflow_check" in PROFILES[r].tasks])
def test_an_inactive_section_holding_a_value_meant_for_the_active_task_is_not_removed(release):
    """overflow_nums written in the statistics section of an overflow_check
    config: --unsafe-fixes removed the section and the user's 5 with it.
    PL206 now offers no removal and says to move the key first (PL105);
    a key the active section already sets does not hold it back."""
    text = json.dumps({"task": "overflow_check", "dump_path": "/d", "level": "L1",
                       "statistics": {"overflow_nums": 5, "scope": []}}, indent=2)
    (inactive,) = [d for d in lint_as(text, release) if d.code == "PL206"]
    assert inactive.fix is None
    assert inactive.hint == ("move 'overflow_nums' into the overflow_check section (PL105), then remove it; "
                             "or set \"task\": \"statistics\"")
    fixed, applied, _ = fix_text(text, lambda t: lint_as(t, release), unsafe=True)
    assert json.loads(fixed)["statistics"]["overflow_nums"] == 5 and "PL206" not in [d.code for d in applied]
    text = json.dumps({"task": "overflow_check", "dump_path": "/d", "level": "L1", "overflow_check": {
        "overflow_nums": 1}, "statistics": {"overflow_nums": 5}}, indent=2)
    (inactive,) = [d for d in lint_as(text, release) if d.code == "PL206"]
    assert inactive.fix is not None and inactive.hint == 'remove it, or set "task": "statistics"'


# ---------------------------------------------------------------------------
# Properties over the known keys of every release

@PROPERTY
@given(key=st.sampled_from(KNOWN), release=st.sampled_from(RELEASES),
       where=st.sampled_from(["", "statistics", "tensor", "overflow_check", "acc_check", "run_ut", "diff_check"]),
       value=st.sampled_from([True, 1, "x", [], ["a"], None, {}]))
def test_a_known_key_is_never_renamed(key, release, where, value):
    """Wherever a key some release or tool knows stands, and whatever the
    target, PL101 offers no rename for it: it is that other setting, not a
    typo (the release note says what it is)."""
    data = config(task="statistics")
    if where:
        data[where] = {key: value}
    else:
        data[key] = value
    for diagnostic in lint_as(json.dumps(data), release):
        if diagnostic.code == "PL101" and split(diagnostic.pointer or "")[-1:] == [key]:
            assert diagnostic.fix is None, (release, where, key, diagnostic.fix)


def _slips(key: str):
    """Strategies for one slip of the keyboard on ``key``."""
    positions = st.integers(min_value=0, max_value=max(len(key) - 1, 0))
    letters = st.sampled_from("abcdefghijklmnopqrstuvwxyz_")
    return st.one_of(
        positions.map(lambda i: key[:i] + key[i + 1:]),
        st.tuples(positions, letters).map(lambda t: key[:t[0]] + t[1] + key[t[0]:]),
        st.tuples(positions, letters).map(lambda t: key[:t[0]] + t[1] + key[t[0] + 1:]),
        positions.map(lambda i: key[:i] + key[i + 1:i + 2] + key[i:i + 1] + key[i + 2:]),
        st.just(key.upper()))


@st.composite
def slipped(draw):
    release = draw(st.sampled_from(RELEASES))
    index = key_index(release)
    where = draw(st.sampled_from(sorted(loc for loc in index if loc in ("", "statistics", "tensor")
                                        or loc in PROFILES[release].tasks)))
    key = draw(st.sampled_from(sorted(index[where])))
    typed = draw(_slips(key))
    value = draw(st.sampled_from([True, False, 0, 1, 3, -1, "L1", "all", "md5", "/data/d", [], ["all"], [0],
                                  ["a", "b"], "3", None]))
    return release, where, key, typed, value


@PROPERTY
@given(slipped())
def test_a_safe_rename_is_a_slip_to_a_key_the_value_fits(case):
    """For any slip on any key of any release: when PL101 offers a safe
    rename, the old name is a plausible misspelling of the new, known
    nowhere, and the value is valid for the new key (no structural error
    at the new place once renamed)."""
    release, where, key, typed, value = case
    data = config(task=where if where in PROFILES[release].tasks else "statistics")
    (data.setdefault(where, {}) if where else data)[typed] = value
    text = json.dumps(data, indent=2)
    for diagnostic in lint_as(text, release):
        fix = diagnostic.fix
        if diagnostic.code != "PL101" or fix is None or not fix.safe:
            continue
        old = split(diagnostic.pointer)[-1]
        new = split(fix.writes[0])[-1]
        assert plausible_misspelling(old, new), (old, new)
        assert not known_places(old), old
        renamed, _ = apply_fixes(text, [diagnostic])
        after = lint_as(renamed, release)
        structural = {"PL101", "PL102", "PL103", "PL104", "PL107", "PL301"}  # the schema's verdicts
        assert not [d for d in after if d.pointer == fix.writes[0] and d.code in structural], (old, new, value)


# ---------------------------------------------------------------------------
# Every rule's fix, over generated configs

KEYS_AND_SLIPS = st.one_of(st.sampled_from(KNOWN), st.sampled_from(KNOWN).flatmap(_slips))
VALUES = st.one_of(
    st.sampled_from([True, False, None, 0, 1, 2, -1, -2, 3.0, "3", "", "L1", "l1", "mix", "L2", "all", "md5", "xor",
                     "statistics", "tensor", "overflow_check", "aicore", "true", "/data/d", "./d", "~/d", "/a/../b",
                     "/path/to/dump", "/data/my dump", "0", "2_1", "0,2", "1-2"]),
    st.lists(st.sampled_from([0, 1, 1, 3, "0-3", "5-2", "3", "all", "forward", "Functional.relu.0.forward",
                              "relu"]), max_size=4))
SECTIONS = sorted({task for p in PROFILES.values() for task in p.tasks})


INDEX_ITEMS = st.lists(st.sampled_from([0, 1, 1, 3, 9, "0-3", "5-2", "2-2", "3", -1, "a"]), max_size=4)


@st.composite
def messy_configs(draw):
    """Configs with the mistakes every fixing rule answers: keys of every
    release and their slips, misplaced keys, deprecated keys, bad rank and
    step entries, odd paths and levels, inactive sections."""
    data = {}
    for key, values in (("task", st.sampled_from(SECTIONS + ["all", "Tensor", "statistic"])),
                        ("dump_path", st.sampled_from(["/data/d", "./d", "~/d", "/a/../b", "/data/my dump",
                                                       "/path/to/dump", "", 3])),
                        ("level", st.sampled_from(["L0", "L1", "l1", "L2", "mix", "debug", "L9"])),
                        ("rank", INDEX_ITEMS | st.sampled_from([0, None, "0"])),
                        ("step", INDEX_ITEMS | st.sampled_from([1, None])),
                        ("async_dump", st.sampled_from([True, "false"])),
                        ("precision", st.sampled_from(["high", "LOW"])),
                        ("enable_dataloader", st.booleans()), ("seed", st.just(7))):
        if draw(st.booleans()):
            data[key] = draw(values)
    data.update(draw(st.dictionaries(KEYS_AND_SLIPS, VALUES, max_size=4)))
    for name in draw(st.lists(st.sampled_from(SECTIONS), max_size=2, unique=True)):
        data[name] = draw(st.dictionaries(KEYS_AND_SLIPS, VALUES, max_size=4))
    return data


@settings(deadline=None, derandomize=True, database=None, max_examples=120,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(messy_configs(), st.sampled_from(RELEASES),
       st.sampled_from([{}, {"framework": "pytorch"}, {"mode": "pynative"}, {"mode": "graph", "jit_level": "O2"},
                        {"world_size": 1, "mindspore_version": Version("2.6.0")}]))
def test_every_fix_keeps_the_properties(data, release, facts):
    text = json.dumps(data, indent=2, ensure_ascii=False)

    def lint(candidate: str) -> list[Diagnostic]:
        return lint_as(candidate, release, **facts)

    found = lint(text)
    parsed = json.loads(text)
    written = [w for d in found if d.fix is not None for w in d.fix.writes]
    assert len(written) == len(set(written)), found  # two fixes making one key: only one could apply
    for diagnostic in found:
        fix = diagnostic.fix
        if fix is None:
            continue
        assert load_all()[diagnostic.code].fix, f"{diagnostic.code} attaches a fix its catalogue entry does not declare"
        for removed in fix.removes:
            held = value_at(parsed, removed) if exists(parsed, removed) else None
            assert not (fix.safe and isinstance(held, dict) and held), (diagnostic.code, removed)
        if fix.safe:
            alone, chosen = apply_fixes(text, [diagnostic])
            assert chosen == [diagnostic]
            json.loads(alone)  # still parses
            again = lint(alone)  # resolved: one finding of its code fewer (a list may hold the same repeat twice)
            assert sum(d.code == diagnostic.code for d in again) < sum(d.code == diagnostic.code for d in found), \
                diagnostic
    fixed, applied, _ = fix_text(text, lint, unsafe=True)
    final = json.loads(fixed)
    for diagnostic in applied:
        for written in diagnostic.fix.writes:
            if split(written)[-1].isdigit():
                continue  # a list item: removing another item before it renumbers it
            # Nothing a fix wrote is removed by a later one (a later rename or move may carry it on).
            carried = any(later.fix.writes and written in [op.pointer for op in later.fix.edits]
                          for later in applied[applied.index(diagnostic) + 1:])
            assert exists(final, written) or carried, (diagnostic.code, written, fixed)


@pytest.mark.parametrize("entry", ['"-1"', "-1.0", '" -2 "', '"3"', "2.0", '" 4 "'])
def test_a_rank_or_step_entry_fix_leaves_a_valid_entry_or_is_not_offered(tmp_path, entry):
    """Issue 34: PL301's safe fix of ``"-1"`` wrote ``-1``, still a PL301."""
    path = tmp_path / "config.json"
    path.write_text('{"task": "statistics", "dump_path": "/data/d", "level": "L1", "step": [' + entry + "]}")
    (found,) = [d for d in lint_file(str(path), Context()).diagnostics if d.code == "PL301"]
    if found.fix is None:
        assert "-" in entry and found.hint == "ranks and steps count from 0"
        return
    fixed, _ = apply_fixes(path.read_text(), [found])
    path.write_text(fixed)
    assert [d.code for d in lint_file(str(path), Context()).diagnostics] == []
    assert json.loads(fixed)["step"][0] >= 0


@settings(deadline=None, derandomize=True, database=None, max_examples=150,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(messy_configs(), st.sampled_from(RELEASES), st.sampled_from([None, 2, 4]),
       st.sampled_from([{}, {"framework": "pytorch"}, {"mode": "pynative"}, {"mode": "graph", "jit_level": "O2"},
                        {"world_size": 1, "mindspore_version": Version("2.6.0")}]))
def test_unsafe_fixes_reach_a_fixed_point(data, release, indent, facts):
    """Defect 6: ``--fix --unsafe-fixes`` ends with no finding whose fix
    could still apply: conflicting fixes (a key moved into a section whose
    only member another fix removes) take two rounds, never cancel each
    other or the rest. Compact and indented layouts both."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)

    def lint(candidate: str) -> list[Diagnostic]:
        return lint_as(candidate, release, **facts)

    fixed, applied, left = fix_text(text, lint, unsafe=True)
    json.loads(fixed)
    assert [d for d in left if d.fix is not None] == [], (text, fixed)
    if any(d.fix is not None for d in lint(text)):
        assert applied, text


@st.composite
def moves_into_emptied_sections(draw):
    """Keys of the active task's section at the top level (PL105 moves
    them in) while that section holds only what other fixes remove or
    rename (deprecated keys, slips, duplicate list entries)."""
    task = draw(st.sampled_from(["overflow_check", "statistics", "tensor"]))
    section_keys = sorted(set(key_index("8.3")[task]) - set(key_index("8.3")[""]) - {"backward_input"})
    data = {"task": task, "dump_path": "/data/d", "level": "L1"}
    if task == "tensor":
        data["step"] = [0]
    for key in draw(st.lists(st.sampled_from(section_keys), min_size=1, max_size=2, unique=True)):
        data[key] = draw(st.sampled_from([1, 4, "all", ["all"], [], "statistics", True]))
    inside = draw(st.dictionaries(st.sampled_from(["backward_input", "seed", "overflow_numbr", "summary_mod"]),
                                  st.sampled_from([[], 3, "x", ["a", "a"]]), min_size=1, max_size=2))
    data[task] = inside
    if draw(st.booleans()):
        data = {task: data.pop(task), **data}  # the section before the moved keys
    return data


@settings(deadline=None, derandomize=True, database=None, max_examples=80,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(moves_into_emptied_sections(), st.sampled_from([None, 2, 4]))
def test_moves_into_an_emptied_section_reach_a_fixed_point(data, indent):
    text = json.dumps(data, indent=indent)
    fixed, applied, left = fix_text(text, lambda t: lint_as(t, "8.3"), unsafe=True)
    json.loads(fixed)
    assert applied and [d for d in left if d.fix is not None] == [], (text, fixed)
    moved = [k for k in data if k in key_index("8.3")[data["task"]]]
    assert all(k in json.loads(fixed)[data["task"]] for k in moved), (text, fixed)  # no moved key lost


def test_a_move_into_a_section_emptied_by_a_removal_takes_two_rounds():
    text = json.dumps({"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1", "overflow_nums": 4,
                       "overflow_check": {"backward_input": []}})
    fixed, applied, left = fix_text(text, lambda t: lint_as(t, "8.3"), unsafe=True)
    assert json.loads(fixed)["overflow_check"] == {"overflow_nums": 4}
    assert sorted(d.code for d in applied) == ["PL105", "PL106"] and left == []


def test_moved_keys_whose_values_need_a_fix_are_fixed_within_the_rounds():
    """Twelve tensor-section keys at the top level, most with a value to
    fix: a move's insertion beside a fixed value (not a removal) needs no
    extra round, so every fix is applied and nothing fixable is left (a
    stricter conflict rule ran out of rounds and left a move undone)."""
    text = json.dumps({"task": "tensor", "dump_path": "/tmp/d", "level": "L1", "step": [0], "data_mode": "all",
                       "file_format": "NPY", "list": None, "scope": None, "summary_mode": "Statistics",
                       "online_run_ut": "false", "online_run_ut_recompute": "false", "host": "127.0.0.1",
                       "port": "8080", "nfs_path": "./n", "tls_path": "./t", "backward_input": None},
                      indent=4)
    fixed, applied, left = fix_text(text, lambda t: lint_as(t, "8.3"), unsafe=True)
    section = json.loads(fixed)["tensor"]
    assert {"data_mode", "file_format", "list", "scope", "summary_mode", "port", "backward_input"} <= set(section)
    assert section["file_format"] == "npy" and section["port"] == 8080 and section["list"] == []
    assert not [d for d in left if d.fix is not None], left
    assert len([d for d in applied if d.code == "PL105"]) == 12


# ---------------------------------------------------------------------------
# Defect 7: a rename into a key the target release no longer reads

def test_a_slip_of_a_key_26_0_no_longer_reads_is_not_renamed_into_it():
    """26.0 deprecates overflow_check's overflow_nums (PL106: not read). The
    safe rename of 'overflow_number' wrote it, and the next --fix removed
    it: the user's 3 was gone. No rename (26.0 has no replacement key in
    that section); the hint says why."""
    text = json.dumps({"task": "overflow_check", "dump_path": "/tmp/d", "level": "L2",
                       "overflow_check": {"overflow_number": 3}}, indent=2)
    (typo,) = [d for d in lint_as(text, "26.0") if d.code == "PL101"]
    assert typo.fix is None
    assert "'overflow_nums'" in typo.hint and "26.0 no longer reads it" in typo.hint
    for unsafe in (False, True):
        fixed, _, _ = fix_text(text, lambda t: lint_as(t, "26.0"), unsafe=unsafe)
        fixed, _, _ = fix_text(fixed, lambda t: lint_as(t, "26.0"), unsafe=unsafe)  # a second --fix
        assert json.loads(fixed)["overflow_check"] == {"overflow_number": 3}
    (typo,) = [d for d in lint_as(text, "8.3") if d.code == "PL101"]  # 8.3 reads it: the rename stays
    assert typo.fix.safe and typo.fix.description == "rename 'overflow_number' to 'overflow_nums'"


@PROPERTY
@given(slipped())
def test_no_rename_targets_a_key_the_release_does_not_read(case):
    """Safe or unsafe, PL101's rename never writes a key the target release
    marks deprecated (PL106 would then remove it, and the user's value with
    it); and safe fixes, run twice, never lose the value the user typed."""
    release, where, key, typed, value = case
    index = key_index(release)
    data = config(task=where if where in PROFILES[release].tasks else "statistics")
    (data.setdefault(where, {}) if where else data)[typed] = value
    text = json.dumps(data, indent=2)
    for diagnostic in lint_as(text, release):
        if diagnostic.code == "PL101" and diagnostic.fix is not None:
            new = split(diagnostic.fix.writes[0])[-1]
            assert not (index[where].get(new) or {}).get("deprecated"), (release, where, typed, new)
    if typed in index[where] or known_places(typed):
        return  # a key itself (PL106 may remove what the release ignores), not a slip
    fixed = text
    for _ in range(2):
        fixed, _, _ = fix_text(fixed, lambda t: lint_as(t, release))
    final = json.loads(fixed)
    base = "/" + where if where else ""
    assert any(exists(final, base + "/" + name) for name in {typed} | set(index[where])), (text, fixed)


@pytest.mark.parametrize("section", [None, {"check_mode": "all"}])
def test_a_top_level_slip_of_a_section_key_is_renamed_and_moved_only_as_an_unsafe_fix(section):
    """"overflow_num" at the top level of an overflow_check config: a
    slip of the overflow_check section's overflow_nums, in the wrong
    place too. --fix leaves it; --unsafe-fixes renames it and moves it
    into the section (made when absent), after which PL101 is gone."""
    data = {"task": "overflow_check", "dump_path": "/d", "overflow_num": 3, "level": "L1"}
    if section is not None:
        data["overflow_check"] = section
    text = json.dumps(data, indent=2)
    (slip,) = [d for d in lint_as(text, "8.3") if d.code == "PL101"]
    assert slip.fix is not None and not slip.fix.safe
    assert slip.fix.description == ("rename 'overflow_num' to 'overflow_nums' and move it into the "
                                    "'overflow_check' section")
    assert fix_text(text, lambda t: lint_as(t, "8.3"))[0] == text
    fixed, applied, left = fix_text(text, lambda t: lint_as(t, "8.3"), unsafe=True)
    assert "PL101" in [d.code for d in applied] and "PL101" not in [d.code for d in left]
    result = json.loads(fixed)
    assert "overflow_num" not in result and result["overflow_check"]["overflow_nums"] == 3


def test_the_rename_and_move_never_writes_over_a_key_the_section_sets():
    text = json.dumps({"task": "overflow_check", "dump_path": "/d", "overflow_num": 3, "level": "L1",
                       "overflow_check": {"overflow_nums": 1}}, indent=2)
    (slip,) = [d for d in lint_as(text, "8.3") if d.code == "PL101"]
    assert slip.fix is None
    fixed, _, _ = fix_text(text, lambda t: lint_as(t, "8.3"), unsafe=True)
    assert json.loads(fixed)["overflow_check"]["overflow_nums"] == 1 and json.loads(fixed)["overflow_num"] == 3
