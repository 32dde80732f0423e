"""Regression tests for the crashes and wrong positions the lint fuzzer
(fuzz/fuzz_lint.py, tests/lint/test_fuzz_lint.py) found. Each test failed
before its fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprobe_lint.lint.engine import lint_file
from msprobe_lint.lint.reporters import NAMES, get

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
    assert diagnostic.code == "PL001"
    assert diagnostic.column == len(BASE) + len('"overflow_check": {"overflow_nums": ') + 1


def test_escaped_lone_surrogate_in_a_key_or_value_can_be_reported_in_every_format(tmp_path):
    # "\ud800" is valid JSON and json.loads gives a lone surrogate; it went
    # into messages and pointers, and writing the report (UTF-8) raised
    # UnicodeEncodeError.
    path = write_config(tmp_path, BASE + '"\\ud800": 1, "overflow_check": {"\\udfff~/": 2}, "x": "\\ud83d"}')
    result = lint_file(str(path))
    assert {d.code for d in result.diagnostics} == {"PL101"}
    for fmt in NAMES:
        get(fmt)([result]).encode("utf-8")
    for fmt in NAMES:
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


def test_digit_limit_in_a_bare_number_string_or_a_step_string_is_a_finding_not_a_traceback(tmp_path):
    # int() on a 5000-digit string raised ValueError in PL301's hint (a
    # bare number string in the list) and in PL102's (the list written as
    # one string): a traceback, exit code 0.
    long = "9" * 5000
    path = write_config(tmp_path, BASE + f'"rank": ["{long}"], "step": "1,2-{long}"}}')
    diagnostics = lint_file(str(path)).diagnostics
    assert [(d.code, d.pointer) for d in diagnostics] == [("PL301", "/rank/0"), ("PL102", "/step")]
    assert all(long not in (d.hint or "") for d in diagnostics)
    assert diagnostics[1].fix is None  # no list to write: the range is one msprobe refuses
    done = run_probe("lint", "--isolated", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    # a short bare number string keeps its exact hint
    short = write_config(tmp_path, BASE + '"rank": [" 3 "], "step": "1,2-4"}', "short.json")
    hints = {d.pointer: d.hint for d in lint_file(str(short)).diagnostics}
    assert hints["/rank/0"].startswith("write 3 ")
    assert hints["/step"] == 'write [1, "2-4"]'


def test_keys_with_pointer_special_characters_are_located_and_named(tmp_path):
    # json-source-map's pointers held the raw key text: keys with '/', '~'
    # or escapes were not found (the finding fell back to the enclosing
    # object, often 1:1), and a duplicate key 'a/b' was reported as 'b'.
    lines = ['{"task": "overflow_check", "dump_path": "/home/dump",',
             ' "a/b": 1,',
             ' "c~1": 2,',
             ' "q\\"k\\\\": 3,',
             ' "e\\u0041\\/": 4,',
             ' "overflow_check": {"x/~y": 1, "x/~y": 2},',
             ' "a/b": 5}']
    path = write_config(tmp_path, "\n".join(lines))
    found = {(d.code, d.pointer): (d.line, d.column) for d in lint_file(str(path)).diagnostics}
    assert found == {
        ("PL101", "/c~01"): (3, 2),
        ("PL101", '/q"k\\'): (4, 2),
        ("PL101", "/eA~1"): (5, 2),
        ("PL101", "/overflow_check/x~1~0y"): (6, 32),   # the last occurrence, whose value counts
        ("PL002", "/overflow_check/x~1~0y"): (6, 32),
        ("PL101", "/a~1b"): (7, 2),
        ("PL002", "/a~1b"): (7, 2),
    }
    messages = [d.message for d in lint_file(str(path)).diagnostics if d.code == "PL002"]
    assert sorted(messages) == ["duplicate key 'a/b' (first at line 2 col 2): json.load keeps only the last value",
                                "duplicate key 'x/~y' (first at line 6 col 21): json.load keeps only the last value"]


def test_duplicate_key_deep_in_a_deeply_nested_config_is_reported_at_its_place(tmp_path):
    # json-source-map recursed per level and hit RecursionError from about
    # 300 levels: the map came back empty, so PL002 was silently dropped
    # and every position fell back to 1:1.
    depth = 900
    text = BASE + '"overflow_check": {"overflow_nums": 1},\n "deep": ' + '{"a": ' * depth \
        + '{"k": 1, "k": 2}' + "}" * depth + "}"
    path = write_config(tmp_path, text)
    found = {(d.code, d.line) for d in lint_file(str(path)).diagnostics}
    assert ("PL002", 2) in found and ("PL101", 2) in found
    (dup,) = [d for d in lint_file(str(path)).diagnostics if d.code == "PL002"]
    assert dup.column == len(' "deep": ') + len('{"a": ') * depth + len('{"k": 1, ') + 1


def test_positions_in_a_large_config_are_fast_and_bounded(tmp_path, monkeypatch):
    # A 1.5 MB config with one unknown key took 31 s and 775 MB with
    # json-source-map (a 10 MiB one would take minutes and gigabytes). The
    # work is bounded, not timed (issue 34: a wall-clock bound failed on a
    # loaded machine; the figures are in benchmarks/large_config_bench.py):
    # one scan of the text, at most MAX_RECORDED positions per depth class
    # kept, and no count of the text's lines per finding.
    from msprobe_lint.lint import fixes, loader, positions

    scans, counts = [], []
    scan, count = positions.PositionMap._scan, positions.line_col

    def counting_scan(self, text):
        scans.append(len(text))
        scan(self, text)

    def counting_line_col(text, offset):
        counts.append(offset)
        return count(text, offset)

    monkeypatch.setattr(positions.PositionMap, "_scan", counting_scan)
    for module in (positions, loader, fixes.edits):
        monkeypatch.setattr(module, "line_col", counting_line_col, raising=False)
    items = ",".join(["[1, 2]"] * 300_000)
    text = BASE + '"dump_path": "rel",\n "xx": [' + items + '],\n "bad": 1}'
    path = write_config(tmp_path, text)
    result = lint_file(str(path))
    found = {(d.code, d.line, d.column) for d in result.diagnostics}
    assert len(scans) == 1 and counts == []
    doc = loader.load(str(path))
    assert len(doc.positions._values) <= 2 * positions.MAX_RECORDED
    column = len(BASE) + 1
    assert found == {("PL002", 1, column), ("PL401", 1, column + len('"dump_path": ')),  # the repeat counts
                     ("PL101", 2, 2), ("PL101", 3, 2)}


def test_text_report_shows_the_line_the_position_counts(tmp_path):
    # The text reporter split lines with str.splitlines (also at "\r",
    # "\u2028", "\x1c"...), while positions count "\n" only: a raw U+2028 in
    # a string or an old-Mac "\r" file showed the wrong source line, and a
    # terminal escape in a broken file went raw to the terminal.
    from msprobe_lint.lint.reporters.text import render

    separator = write_config(tmp_path, '{"task": "overflow_check", "dump_path": "/x\u2028y",\n "bad": 1}', "ls.json")
    carriage = write_config(tmp_path, '{"task": "overflow_check",\r"dump_path": "/x",\r"bad": 1}', "cr.json")
    escape = write_config(tmp_path, '{"task": "overflow_check", "dump_path": "/x", "bad": 1, \x1b[2J}', "esc.json")
    text = render([lint_file(str(p)) for p in (separator, carriage, escape)])
    assert '   2 |  "bad": 1}\n     |  ^^^^^\n' in text
    assert '   1 | {"task": "overflow_check", "dump_path": "/x", "bad": 1}\n' \
           '     |                                               ^^^^^\n' in text
    assert "\x1b" not in text and "?[2J}" in text


def test_long_rank_list_is_checked_for_overlaps_in_bounded_time(tmp_path, monkeypatch):
    # PL302 compared every entry with every earlier one: 20,000 ranks took
    # 9 s, a 10 MiB list (millions) would take days. The work is bounded,
    # not timed: a long list goes through the sorted-union path (bisect,
    # O(n log n)), never the pairwise loop, and searches only for the
    # entries that are not in ascending order.
    import bisect

    from msprobe_lint.lint.rules import ranks as ranks_module

    searches = []
    real = bisect.bisect_right
    monkeypatch.setattr(ranks_module.bisect, "bisect_right", lambda *a, **k: searches.append(1) or real(*a, **k))
    ranks = list(range(40_000)) + ["5-7", 39_999]
    path = write_config(tmp_path, {"task": "overflow_check", "dump_path": "/home/dump", "rank": ranks})
    found = [(d.code, d.pointer, d.message) for d in lint_file(str(path)).diagnostics]
    assert 1 <= len(searches) <= 4, len(searches)  # the entries out of order only (pairwise: none at all)
    assert [f[:2] for f in found] == [("PL302", "/rank/40000"), ("PL302", "/rank/40001")]
    assert "'5-7' overlaps" in found[0][2] and "39999 repeats 39999" in found[1][2]


def test_caret_under_wide_and_combining_characters(tmp_path):
    # Columns count characters; a terminal gives a CJK character or an
    # emoji two columns and a combining accent none: the caret was shifted.
    from msprobe_lint.lint.reporters.text import render

    wide = write_config(tmp_path, '{"dump_path": "/数据😀", "task": "overflow_check", "bad": 1}', "wide.json")
    def caret_of(path, code):
        lines = render([lint_file(str(path))]).splitlines()
        at = next(i for i, ln in enumerate(lines) if f": {code} " in ln)
        return lines[at + 2]

    # "bad" starts after 48 characters, 3 of them two columns wide: 51 columns
    assert caret_of(wide, "PL101") == "     | " + " " * 51 + "^" * 5
    # the dump_path value "/数据😀": 6 characters, 3 of them wide: 9 carets
    assert caret_of(wide, "PL402") == "     | " + " " * 14 + "^" * 9
    accent = write_config(tmp_path, '{"dump_path": "/cafe\u0301", "task": "overflow_check", "bad": 1}', "accent.json")
    # 50 characters before "bad", the combining accent takes no column
    assert caret_of(accent, "PL101") == "     | " + " " * 49 + "^" * 5


def _deep_list_config(where: str, depth: int) -> str:
    nested = "[" * depth + "0" + "]" * depth
    if where == "list":
        return '{"task": "statistics", "dump_path": "/tmp/d", "level": "L1", "statistics": {"list": ' + nested + "}}"
    return '{"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1", "' + where + '": ' + nested + "}"


@pytest.mark.parametrize("where", ["rank", "step", "list"])
def test_a_list_nested_about_as_deep_as_the_reader_reads_is_pl001_or_linted_never_a_crash(tmp_path, where):
    """A list nested ~981-985 deep in rank/step/list was read by json.loads
    but crashed jsonschema (RecursionError from repr of the value, a
    traceback and exit 1); deeper was PL001. Every depth must give PL001
    or be linted."""
    path = tmp_path / "config.json"
    for depth in range(800, 1101, 7):  # in this process (pytest's stack is deeper: the edge moves)
        path.write_text(_deep_list_config(where, depth), encoding="utf-8")
        found = lint_file(str(path)).diagnostics
        assert found, depth
        deep = [d for d in found if d.code == "PL001"]
        assert not deep or "levels deep" in deep[0].message, deep
    for depth in (975, 981, 983, 985, 990):  # the CLI, at the depths that crashed
        path.write_text(_deep_list_config(where, depth), encoding="utf-8")
        proc = run_probe("lint", "--isolated", str(path))
        assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr[-2000:]
        assert proc.returncode == 1 and proc.stdout.strip(), (depth, proc.stdout, proc.stderr[-500:])
        if "PL001" in proc.stdout:
            assert "levels deep" in proc.stdout


def _elif_chain(branches: int, mode: str = "ms.GRAPH_MODE", last: str = "ms.GRAPH_MODE") -> str:
    lines = ["import mindspore as ms", "v = 3", "if v == 0:", f"    ms.set_context(mode={mode})"]
    for i in range(1, branches):
        lines += [f"elif v == {i}:", f"    ms.set_context(mode={mode})"]
    lines += ["else:", f"    ms.set_context(mode={last})"]
    return "\n".join(lines) + "\n"


def test_a_long_elif_chain_is_analysed_not_a_recursion_error():
    """A valid script with 500 elifs (or a 1,000-term expression) crashed
    the script analysis with RecursionError (a traceback from `probe lint
    --script` and `probe run`)."""
    from msprobe_lint.lint.script import analyse_source
    from msprobe_lint.lint.script.model import UNKNOWN

    found = analyse_source(_elif_chain(1500), "train.py")
    assert found.facts["mode"].value == "graph"  # every branch agrees: the value stays known
    found = analyse_source(_elif_chain(1500, last="ms.PYNATIVE_MODE"), "train.py")
    assert "mode" not in found.facts or found.facts["mode"].value is UNKNOWN  # one branch differs
    source = "import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\nx = " + "+".join(["1"] * 1000) \
        + "\ny = a" + ".b" * 1000 + "\n"
    assert analyse_source(source, "train.py").facts["mode"].value == "graph"


def test_a_long_elif_chain_elif_main_guard_is_followed():
    """The elif chain, walked without recursion, keeps the branch rules:
    an ``elif __name__ == "__main__"`` runs its body, the other branches
    are joined."""
    from msprobe_lint.lint.script import analyse_source

    source = ("import mindspore as ms\nimport sys\nif sys.argv[1:] == ['a']:\n    ms.set_context(mode=ms.GRAPH_MODE)\n"
              "elif __name__ == '__main__':\n    ms.set_context(mode=ms.GRAPH_MODE)\nelse:\n"
              "    ms.set_context(mode=ms.PYNATIVE_MODE)\n")
    assert analyse_source(source, "train.py").facts["mode"].value == "graph"


def test_probe_lint_script_with_500_elifs_and_a_long_sum(tmp_path):
    config = write_config(tmp_path, {"task": "overflow_check", "dump_path": "/tmp/d", "level": "L1"})
    script = tmp_path / "train.py"
    chain = "v = 3\nif v == 0:\n    x = 0\n" + "".join(f"elif v == {i}:\n    x = {i}\n" for i in range(1, 501))
    for text in ("import mindspore as ms\n" + chain, "import mindspore as ms\nx = " + "+".join(["1"] * 1000) + "\n"):
        script.write_text(text, encoding="utf-8")
        proc = run_probe("lint", "--isolated", str(config), "--script", str(script))
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert proc.returncode == 0, (proc.stdout, proc.stderr[-500:])
