"""``probe lint --fix``: every rule that attaches a fix, applied to a file
laid out unusually; the result no longer has the finding, and everything
else in the file is the same byte for byte (the expected text is the
original with only the fixed token replaced). Also: idempotence, CRLF and
no-final-newline files, files that do not parse, soft links, ``--diff``,
removal of members and items with their commas, the CLI output."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional

import pytest
from conftest import as_nobody, config, probe_command, run_probe

from msprobe_lint.lint.api import LintOptions, fix_paths
from msprobe_lint.lint.rules import load_all

BASE = ('{\n  "task":   "overflow_check",\n\t"dump_path" : "/home/data_dump",\n  "rank": [],  "step": [],\n'
        '  "level": "L1",\n  "overflow_check": {"overflow_nums": 1}\n}\n')

STATISTICS_BASE = BASE.replace('"overflow_check",', '"statistics",', 1).replace(
    '"overflow_check": {"overflow_nums": 1}', '"statistics": {"summary_mode": "statistics"}', 1)


def case(code: str, old: str, bad: str, fixed: str, *, unsafe: bool = False, base: str = BASE, **options):
    """A file that is BASE with ``old`` replaced by ``bad``; after the fix
    it must be BASE with ``old`` replaced by ``fixed``."""
    assert old in base, old
    return pytest.param(code, base.replace(old, bad, 1), base.replace(old, fixed, 1), unsafe, options,
                        id=f"{code}-{bad.strip()[:30]}")


def moved(bad: str, fixed: str, base: str = BASE):
    """A PL105 case: BASE with ``bad`` as replacements (old, new) before the
    fix and ``fixed`` after it."""
    before, after = base, base
    for old, new in bad:
        assert old in before
        before = before.replace(old, new, 1)
    for old, new in fixed:
        assert old in after
        after = after.replace(old, new, 1)
    return pytest.param("PL105", before, after, True, {}, id=f"PL105-{len(CASES)}")


HOME = os.path.expanduser("~")
CASES = [
    case("PL002", '  "level": "L1",\n', '  "level": "L0",\n  "level": "L1",\n', '  "level": "L1",\n', unsafe=True),
    case("PL101", '"overflow_nums": 1', '"overflow_numbr": 1', '"overflow_nums": 1'),
    case("PL101", '  "task":   "overflow_check",\n', '  "Task":   "overflow_check",\n',
         '  "task":   "overflow_check",\n'),
    case("PL101", '  "task":   "overflow_check",\n', '  "tansk":   "overflow_check",\n',
         '  "task":   "overflow_check",\n', unsafe=True),  # as close to rank: not a clear match
    case("PL102", '"rank": []', '"rank": 0', '"rank": [0]'),
    case("PL102", '"rank": []', '"rank": null', '"rank": []'),
    # a rank or step string is written as the list msprobe reads, never as ["0"] (PL301 again)
    case("PL102", '"rank": []', '"rank": "0"', '"rank": [0]'),
    case("PL102", '"step": []', '"step": "0, 2-3"', '"step": [0, "2-3"]'),
    case("PL102", '"overflow_nums": 1', '"overflow_nums": 3.0', '"overflow_nums": 3'),
    # a list of statistics is MindSpore's: PyTorch's msprobe refuses it; "statistics" is a guess
    case("PL102", '"summary_mode": "statistics"', '"summary_mode": ["max", "min"]', '"summary_mode": "statistics"',
         unsafe=True, framework="pytorch", base=STATISTICS_BASE),
    case("PL102", '"overflow_nums": 1', '"overflow_nums": "3"', '"overflow_nums": 3'),
    case("PL102", '  "level": "L1",\n', '  "level": "L1",\n  "async_dump": "false",\n',
         '  "level": "L1",\n  "async_dump": false,\n'),
    case("PL103", '"level": "L1"', '"level": "l1"', '"level": "L1"'),
    case("PL103", '"task":   "overflow_check"', '"task":   "overflow_chek"', '"task":   "overflow_check"',
         unsafe=True),
    case("PL106", '  "level": "L1",\n', '  "level": "L1",\n  "seed": 1234,\n', '  "level": "L1",\n'),
    # still honoured by 8.x PyTorch when true: removing it changes the job
    case("PL106", '  "level": "L1",\n', '  "level": "L1",\n  "enable_dataloader": true,\n', '  "level": "L1",\n',
         unsafe=True),
    case("PL008", '[],  "step"', '[]\uff0c  "step"', '[],  "step"'),
    case("PL008", '  "level": "L1",\n', '  \u201clevel\u201d\uff1a "L1",\n', '  "level": "L1",\n'),
    case("PL201", '"level": "L1"', '"level": "L1"', '"level": "L2"', unsafe=True, mode="graph", jit_level="O2"),
    case("PL201", '"level": "L1"', '"level": "L2"', '"level": "L1"', unsafe=True, mode="pynative"),
    case("PL204", '{"overflow_nums": 1}', '{"overflow_nums": 1, "check_mode": "all"}', '{"overflow_nums": 1}',
         unsafe=True, mode="pynative"),
    case("PL206", '  "overflow_check": {"overflow_nums": 1}\n',
         '  "overflow_check": {"overflow_nums": 1},\n  "statistics": {\n    "summary_mode": "md5"\n  }\n',
         '  "overflow_check": {"overflow_nums": 1}\n', unsafe=True),
    case("PL207", '  "level": "L1",\n', '  "async_dump": true,\n  "level": "L1",\n', '  "level": "L1",\n',
         unsafe=True),
    case("PL207", '  "level": "L1",\n', '  "precision": "high",\n  "level": "L1",\n', '  "level": "L1",\n',
         unsafe=True),
    case("PL301", '"step": []', '"step": ["5-2"]', '"step": ["2-5"]'),
    case("PL301", '"rank": []', '"rank": ["3"]', '"rank": [3]'),
    case("PL302", '"rank": []', '"rank": [1, 2, 1]', '"rank": [1, 2]'),
    case("PL302", '"rank": []', '"rank": ["0-3", 1]', '"rank": ["0-3"]', unsafe=True),
    case("PL304", '"rank": []', '"rank": [0]', '"rank": []', unsafe=True, world_size=1),
    case("PL402", '"/home/data_dump"', '"/home/data dump"', '"/home/data_dump"', unsafe=True),
    case("PL404", '"/home/data_dump"', '"/home/run/../data_dump"', '"/home/data_dump"', unsafe=True),
    case("PL405", '"/home/data_dump"', '"~/data_dump"', json.dumps(os.path.join(HOME, "data_dump")), unsafe=True),
]
CASES += [
    # into the section, after its last member, laid out as that member
    moved([('  "level": "L1",\n', '  "check_mode": "all",\n  "level": "L1",\n')],
          [('{"overflow_nums": 1}', '{"overflow_nums": 1, "check_mode": "all"}')]),
    moved([('{"overflow_nums": 1}', '{\n    "overflow_nums": 1\n  }'),
           ('  "level": "L1",\n', '  "level": "L1", "check_mode": "all",\n')],
          [('{"overflow_nums": 1}', '{\n    "overflow_nums": 1,\n    "check_mode": "all"\n  }')]),
    # no such section yet: the member becomes it, in place
    moved([('  "overflow_check": {"overflow_nums": 1}\n', '  "overflow_nums": 2\n')],
          [('  "overflow_check": {"overflow_nums": 1}\n', '  "overflow_check": {"overflow_nums": 2}\n')]),
    # out of a section, to the top level
    moved([('{"overflow_nums": 1}', '{"overflow_nums": 1, "async_dump": false}')],
          [('{"overflow_nums": 1}\n', '{"overflow_nums": 1},\n  "async_dump": false\n')]),
]


def fix(path: Path, *, unsafe: bool = False, write: bool = True, **options):
    options.setdefault("isolated", True)
    run, (outcome,) = fix_paths([str(path)], LintOptions(**options), unsafe=unsafe, write=write)
    return run, outcome


def test_every_rule_with_a_fix_has_a_case():
    declared = {code for code, info in load_all().items() if info.fix}
    tested = {p.values[0] for p in CASES} | {"PL004", "PL401", "PL406"}  # those three: tests of their own below
    assert declared == tested
    for code in declared:
        kinds = {p.values[3] for p in CASES if p.values[0] == code}
        if load_all()[code].fix == "safe/unsafe":
            assert kinds == {False, True}, code


@pytest.mark.parametrize("code, bad, fixed, unsafe, options", CASES)
def test_fix_resolves_the_finding_and_keeps_the_rest(tmp_path, code, bad, fixed, unsafe, options):
    options = {"select": (code,), **options}  # only this rule's fix: the expected text changes one place
    path = tmp_path / "config.json"
    path.write_bytes(bad.encode("utf-8"))
    run, outcome = fix(path, **options)
    if unsafe:  # --fix alone leaves an unsafe fix alone
        assert not any(d.code == code for d in outcome.applied)
        assert code in [d.code for d in run.results[0].diagnostics]
        run, outcome = fix(path, unsafe=True, **options)
    assert code in [d.code for d in outcome.applied]
    assert path.read_bytes() == fixed.encode("utf-8")
    assert code not in [d.code for d in run.results[0].diagnostics]
    json.loads(fixed)
    # Idempotent: nothing left for a second run to change.
    again_run, again = fix(path, unsafe=True, **options)
    assert again.applied == [] and path.read_bytes() == fixed.encode("utf-8")


def test_byte_order_mark_removed(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.replace('"L1"', '"l1"').encode())
    run, outcome = fix(path)
    assert sorted(d.code for d in outcome.applied) == ["PL004", "PL103"]
    assert path.read_bytes() == BASE.encode()
    assert run.status == 0


def test_byte_order_mark_of_a_file_that_does_not_parse_stays(tmp_path):
    """--fix removed the byte-order mark of a file with a syntax error
    (PL001) though the README says such a file is untouched but for
    PL008's replacements; the plain lint counted it fixable too."""
    path = tmp_path / "config.json"
    broken = b"\xef\xbb\xbf" + BASE.replace('"level": "L1"', '"level": "L1",}').encode()
    path.write_bytes(broken)
    proc = run_probe("lint", "--isolated", "--fix", "--unsafe-fixes", str(path))
    assert proc.returncode == 1 and "PL001" in proc.stdout
    assert "does not parse" in proc.stderr and "fixed 1" not in proc.stderr
    assert path.read_bytes() == broken
    run, outcome = fix(path, write=False)
    assert outcome.applied == [] and outcome.after == outcome.before
    proc = run_probe("lint", "--isolated", "--format", "json", str(path))
    found = {d["code"]: d for d in json.loads(proc.stdout)["diagnostics"]}
    assert sorted(found) == ["PL001", "PL004"] and found["PL004"]["fix"] is None
    assert json.loads(proc.stdout)["summary"]["fixable"] == 0


def test_byte_order_mark_goes_once_pl008_made_the_file_parse(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.replace('[],  "step"', '[]\uff0c  "step"').encode())
    run, outcome = fix(path)
    assert [d.code for d in outcome.applied] == ["PL008", "PL004"]
    assert path.read_bytes() == BASE.encode() and run.status == 0


@pytest.mark.parametrize("bad, fixed", [
    # every quote a Chinese input method typed: the fullwidth comma in the path is the path's own
    ('{\u201ctask\u201d\uff1a\u201coverflow_check\u201d\uff0c\u201cdump_path\u201d\uff1a\u201c/tmp/a\uff0cb\u201d'
     '\uff0c\u201clevel\u201d\uff1a\u201cL1\u201d}\n',
     '{"task":"overflow_check","dump_path":"/tmp/a\uff0cb","level":"L1"}\n'),
    # an apostrophe, an ideographic space and a colon inside a curly-quoted string stay too
    ('{\u201ctask\u201d\uff1a "overflow_check"\uff0c '
     '\u201cdump_path\u201d\uff1a \u201c/tmp/it\u2019s\u3000a\uff1ab\u201d}',
     '{"task": "overflow_check", "dump_path": "/tmp/it\u2019s\u3000a\uff1ab"}'),
    # in an ASCII-quoted string as ever; a curly quote closing before a bracket or a comma
    ('{"dump_path"\uff1a "/tmp/\u201ca\u201d\uff0cb"\uff0c "rank"\uff1a[\u201c0-1\u201d\uff0c 2]}',
     '{"dump_path": "/tmp/\u201ca\u201d\uff0cb", "rank":["0-1", 2]}'),
], ids=["curly-quoted", "apostrophe-inside", "ascii-quoted"])
def test_pl008_fix_never_changes_what_is_inside_a_string(tmp_path, bad, fixed):
    """PL008's fix, documented as acting outside strings, turned the
    fullwidth comma inside `\u201c/tmp/a\uff0cb\u201d` into ',' (a string whose quotes
    were curly was not taken for a string). The quotes that open and close
    a string are structure and are fixed; what stands between them stays."""
    path = tmp_path / "config.json"
    path.write_text(bad, encoding="utf-8")
    _, outcome = fix(path, unsafe=False)
    assert [d.code for d in outcome.applied] == ["PL008"]
    assert path.read_text(encoding="utf-8") == fixed


def test_byte_order_mark_has_a_range_in_json_output(tmp_path):
    """PL004's range was the empty range 1:1-1:1 in every output: the
    finding is shown as one character at line 1, column 1 in JSON, SARIF and
    GitHub output. Its edit removes offsets 0-1 (the offsets count the
    mark); edits' lines and columns are those of the diagnostics, which do
    not count it (a point at 1:1 for the mark itself), so a finding and its
    edit on line 1 name the same columns. Not-UTF-8 PL004 spans the bad
    byte's column."""
    (tmp_path / "config.json").write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    proc = run_probe("lint", "--isolated", "--format", "json", "config.json", cwd=tmp_path)
    (bom,) = json.loads(proc.stdout)["diagnostics"]
    assert bom["code"] == "PL004"
    assert (bom["line"], bom["column"], bom["end_line"], bom["end_column"]) == (1, 1, 1, 2)
    (edit,) = bom["fix"]["edits"]
    assert (edit["start"], edit["end"], edit["line"], edit["column"], edit["end_line"], edit["end_column"]) == \
        (0, 1, 1, 1, 1, 1)
    proc = run_probe("lint", "--isolated", "--format", "sarif", "config.json", cwd=tmp_path)
    (result,) = json.loads(proc.stdout)["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 2}
    (replacement,) = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["deletedRegion"] == {"charOffset": 0, "charLength": 1}
    proc = run_probe("lint", "--isolated", "--format", "github", "config.json", cwd=tmp_path)
    assert "line=1,col=1,endLine=1,endColumn=2," in proc.stdout
    # a one-line file: an edit's columns on line 1 are its finding's (the mark not counted), its offsets count it
    text = '{"task": "statistics", "dump_path": "/tmp/x", "level": "l1"}'
    (tmp_path / "config.json").write_bytes(b"\xef\xbb\xbf" + text.encode())
    proc = run_probe("lint", "--isolated", "--format", "json", "config.json", cwd=tmp_path)
    found = {d["code"]: d for d in json.loads(proc.stdout)["diagnostics"]}
    (edit,) = found["PL103"]["fix"]["edits"]
    raw = "\ufeff" + text
    assert raw[edit["start"]:edit["end"]] == '"l1"'
    assert text[edit["column"] - 1:edit["end_column"] - 1] == '"l1"'
    assert (edit["column"], edit["end_column"]) == (found["PL103"]["column"], found["PL103"]["end_column"])
    (tmp_path / "config.json").write_bytes(b'{\n  "task": "\xc3x"}')
    proc = run_probe("lint", "--isolated", "--format", "json", "config.json", cwd=tmp_path)
    (bad,) = json.loads(proc.stdout)["diagnostics"]
    assert bad["code"] == "PL004" and "byte 0xc3" in bad["message"]
    assert (bad["line"], bad["column"], bad["end_line"], bad["end_column"]) == (2, 12, 2, 13)


def test_relative_dump_path_made_absolute_against_cwd(tmp_path):
    path = tmp_path / "config.json"
    relative = BASE.replace('"/home/data_dump"', '"./dump"')
    path.write_text(relative)
    fix(path, cwd=str(tmp_path))
    assert path.read_text() == relative  # --fix alone: unsafe, untouched
    run, outcome = fix(path, unsafe=True, cwd=str(tmp_path))
    assert [d.code for d in outcome.applied] == ["PL401"]
    assert path.read_text() == BASE.replace('"/home/data_dump"', json.dumps(str(tmp_path / "dump")))


def test_soft_link_in_dump_path_replaced_by_the_real_path(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    path = tmp_path / "config.json"
    path.write_text(BASE.replace('"/home/data_dump"', json.dumps(str(tmp_path / "link" / "dump"))))
    run, outcome = fix(path, unsafe=True, check_fs=True)
    assert "PL406" in [d.code for d in outcome.applied]
    assert json.loads(path.read_text())["dump_path"] == str((tmp_path / "real").resolve() / "dump")
    assert "PL406" not in [d.code for d in run.results[0].diagnostics]


MESSY = BASE.replace('"rank": []', '"rank": 0').replace('"L1"', '"l1"').replace(
    '"overflow_nums"', '"overflow_number"')
FIXED = BASE.replace('"rank": []', '"rank": [0]')


@pytest.mark.parametrize("ending", ["\r\n", "\n"])
@pytest.mark.parametrize("final", [True, False])
def test_line_endings_and_final_newline_kept(tmp_path, ending, final):
    def shaped(text: str) -> bytes:
        text = text.rstrip("\n").replace("\n", ending) + (ending if final else "")
        return text.encode()

    path = tmp_path / "config.json"
    path.write_bytes(shaped(MESSY))
    run, outcome = fix(path)
    assert len(outcome.applied) == 3 and run.status == 0
    assert path.read_bytes() == shaped(FIXED)


def test_file_that_does_not_parse_is_left_untouched(tmp_path):
    path = tmp_path / "config.json"
    broken = MESSY.replace('"level": "l1"', '"level": "l1",}')
    path.write_text(broken)
    before = path.stat()
    proc = run_probe("lint", "--isolated", "--fix", "--unsafe-fixes", str(path))
    assert proc.returncode == 1
    assert "PL001" in proc.stdout
    assert "does not parse" in proc.stderr
    assert path.read_text() == broken and path.stat().st_mtime_ns == before.st_mtime_ns


def test_soft_linked_config_is_not_written_through(tmp_path):
    target = tmp_path / "real.json"
    target.write_text(MESSY)
    link = tmp_path / "config.json"
    link.symlink_to(target)
    proc = run_probe("lint", "--isolated", "--fix", str(link))
    assert proc.returncode == 2  # fixes due and not written, as for a read-only file (README)
    assert "soft link" in proc.stderr
    assert link.is_symlink() and target.read_text() == MESSY
    assert "PL103" in proc.stdout  # still reported
    assert "fixable with --fix" not in proc.stdout and "= fix:" not in proc.stdout  # --fix cannot fix it here
    target.write_text(json.dumps(config(level="mix")))  # a finding without a fix: nothing was due
    proc = run_probe("lint", "--isolated", "--fix", str(link))
    assert proc.returncode == 1 and "PL201" in proc.stdout


def test_diff_writes_nothing(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MESSY)
    proc = run_probe("lint", "--isolated", "--diff", "config.json", cwd=tmp_path)
    assert proc.returncode == 1
    assert path.read_text() == MESSY
    assert proc.stdout.startswith("--- config.json\n+++ config.json (fixed)\n")
    assert '\n-  "rank": 0,  "step": [],\n' in proc.stdout and '\n+  "rank": [0],  "step": [],\n' in proc.stdout
    assert "Would fix 3 findings in 1 file." in proc.stderr
    clean = tmp_path / "clean.json"
    clean.write_text(BASE)
    proc = run_probe("lint", "--isolated", "--diff", str(clean))
    assert (proc.returncode, proc.stdout) == (0, "")


def test_fix_cli_reports_what_was_fixed_and_what_is_left(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MESSY.replace('"/home/data_dump"', '"dump"'))
    os.chmod(path, 0o640)
    proc = run_probe("lint", "--isolated", "--fix", "config.json", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert proc.returncode == 1  # PL401 is left: its fix is unsafe
    assert proc.stderr.startswith("config.json: fixed 3: PL102 write rank as [0], ")
    assert "PL401 error" in proc.stdout and "PL103" not in proc.stdout
    assert "= unsafe fix: make dump_path absolute against this folder" in proc.stdout
    assert proc.stdout.endswith("Found 1 error in 1 file.\n1 fixable with --fix --unsafe-fixes "
                                "(review those: they may not be what you meant).\n")
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)
    assert not [p for p in tmp_path.iterdir() if p.name != "config.json"]  # no temporary left
    proc = run_probe("lint", "--isolated", "--fix", "--unsafe-fixes", "config.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(path.read_text())["dump_path"] == str(tmp_path.resolve() / "dump")


def test_a_rank_string_that_is_no_id_list_gets_a_hint_and_no_fix(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(BASE.replace('"rank": []', '"rank": "all"'))
    out = json.loads(run_probe("lint", "--isolated", "-f", "json", str(path)).stdout)
    (rank,) = [d for d in out["diagnostics"] if d["code"] == "PL102"]
    assert rank["fix"] is None and 'e.g. [0, "2-3"]' in rank["hint"]


@pytest.mark.parametrize("dump_path, named", [("/home/模型/dump", "'模型'"), ("/home/my 模型/run:1", "'my 模型'"),
                                              ("/home/café/dump", "'café'")])
def test_a_path_named_in_another_script_gets_a_hint_to_rename_and_no_fix(tmp_path, dump_path, named):
    """A fresh user's finding: PL402's fix wrote '_' for each run of
    non-ASCII letters, so /home/模型/dump became /home/_/dump: the name
    lost, and 数据 would have become the same folder. A name is the
    user's to rename; only separators (a space, ':', a fullwidth space)
    are still replaced, as an unsafe fix."""
    path = tmp_path / "config.json"
    text = BASE.replace("/home/data_dump", dump_path)
    path.write_text(text, encoding="utf-8")
    out = json.loads(run_probe("lint", "--isolated", "-f", "json", str(path)).stdout)
    (found,) = out["diagnostics"]
    assert found["code"] == "PL402" and found["fix"] is None
    assert found["hint"].startswith(f"rename {named} with only ASCII letters") and "/home/_" not in found["hint"]
    proc = run_probe("lint", "--isolated", "--fix", "--unsafe-fixes", str(path))
    assert proc.returncode == 1 and path.read_text(encoding="utf-8") == text
    separator = BASE.replace("/home/data_dump", "/home/data\u3000dump")
    path.write_text(separator, encoding="utf-8")
    (spaced,) = json.loads(run_probe("lint", "--isolated", "-f", "json", str(path)).stdout)["diagnostics"]
    assert spaced["fix"]["applicability"] == "unsafe" and "/home/data_dump" in spaced["fix"]["description"]


def test_a_relative_path_named_in_another_script_keeps_the_name_in_pl401s_example(tmp_path):
    """PL401's example was the path with '_' for its letters
    (/home/user/_/dump for 模型/dump), the replacement PL402 no longer
    proposes."""
    path = tmp_path / "config.json"
    path.write_text(BASE.replace("/home/data_dump", "模型/dump"), encoding="utf-8")
    out = json.loads(run_probe("lint", "--isolated", "-f", "json", str(path)).stdout)
    (relative,) = [d for d in out["diagnostics"] if d["code"] == "PL401"]
    assert relative["hint"] == "give an absolute path, e.g. /home/user/模型/dump"
    assert {d["code"] for d in out["diagnostics"]} == {"PL401", "PL402"}
    path.write_text(BASE.replace("/home/data_dump", "./my dump/模型:1"), encoding="utf-8")
    out = json.loads(run_probe("lint", "--isolated", "-f", "json", str(path)).stdout)
    (relative,) = [d for d in out["diagnostics"] if d["code"] == "PL401"]
    assert relative["hint"] == "give an absolute path, e.g. /home/user/my_dump/模型_1"  # separators replaced


def test_unsafe_fixes_needs_fix_or_diff(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MESSY)
    proc = run_probe("lint", "--isolated", "--unsafe-fixes", str(path))
    assert proc.returncode == 2 and "--unsafe-fixes goes with --fix or --diff" in proc.stderr
    assert path.read_text() == MESSY


def test_json_output_carries_the_edits(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MESSY)
    out = json.loads(run_probe("lint", "--isolated", "-f", "json", str(path)).stdout)
    assert out["summary"]["fixable"] == 3 and out["summary"]["unsafe_fixable"] == 0
    (rank,) = [d for d in out["diagnostics"] if d["code"] == "PL102"]
    start = MESSY.index('"rank": 0') + len('"rank": ')
    assert rank["fix"] == {"description": "write rank as [0]", "applicability": "safe", "edits": [
        {"pointer": "/rank", "start": start, "end": start + 1, "line": 4, "column": 11, "end_line": 4,
         "end_column": 12, "text": "[0]"}]}


def _remove(text: str, ptr: str) -> Optional[str]:
    from msprobe_lint.lint.diagnostic import FixSpec
    from msprobe_lint.lint.fixes.edits import resolve
    from msprobe_lint.lint.loader import load

    doc = load("x.json", text.encode())
    found = resolve(FixSpec("remove", (("remove", ptr),)), doc)
    if found is None:
        return None
    (edit,) = found.edits
    return text[:edit.start] + edit.text + text[edit.end:]


@pytest.mark.parametrize("text, ptr, expected", [
    ('{"a": 1, "b": 2, "c": 3}', "/a", '{"b": 2, "c": 3}'),
    ('{"a": 1, "b": 2, "c": 3}', "/b", '{"a": 1, "c": 3}'),
    ('{"a": 1, "b": 2, "c": 3}', "/c", '{"a": 1, "b": 2}'),
    ('{"a": 1}', "/a", "{}"),
    ('{\n    "a": 1,\n    "b": {"x": [1]},\n    "c": 3\n}', "/b", '{\n    "a": 1,\n    "c": 3\n}'),
    ('{\r\n  "a": 1,\r\n  "b": 2\r\n}', "/b", '{\r\n  "a": 1\r\n}'),
    ('{\n  "a": 1\n}\n', "/a", "{\n}\n"),
    ('{"r": [1 , 2 ,3]}', "/r/1", '{"r": [1 ,3]}'),
    ('{\n  "a": 1, "b": 2,\n  "c": 3\n}', "/b", '{\n  "a": 1,\n  "c": 3\n}'),
    ('{"r": [1, 2, 3]}', "/r/2", '{"r": [1, 2]}'),
    ('{"r": [ 7 ]}', "/r/0", '{"r": [ ]}'),
    ('{"s": {"k": "a,b}"}, "t": 1}', "/s/k", '{"s": {}, "t": 1}'),
])
def test_removal_takes_its_comma_and_leaves_valid_json(text, ptr, expected):
    assert _remove(text, ptr) == expected
    json.loads(expected)


def test_fixes_of_one_list_overlap_and_take_two_rounds(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(BASE.replace('"rank": []', '"rank": [1, 1, 1]'))
    run, outcome = fix(path)
    assert [d.code for d in outcome.applied] == ["PL302", "PL302"]
    assert path.read_text() == BASE.replace('"rank": []', '"rank": [1]')
    assert run.status == 0


def test_override_values_get_no_fix(tmp_path):
    """A value given in code (probe_runtime's keyword arguments) is not in
    the file: no edit of the file could fix it."""
    from msprobe_lint import Context, lint_file

    path = tmp_path / "config.json"
    path.write_text(BASE)
    (level,) = [d for d in lint_file(str(path), Context(), overrides={"level": "l1"}).diagnostics
                if d.code == "PL103"]
    assert level.fix is None


def test_file_changed_meanwhile_is_not_overwritten(tmp_path, monkeypatch):
    """Someone saves the config between the read and the write: theirs
    is kept, nothing is fixed, and the findings are of the file as read."""
    import msprobe_lint.lint.fixes.edits as fixes_module

    path = tmp_path / "config.json"
    path.write_text(MESSY)
    real = fixes_module.fix_text

    def saved_meanwhile(*args, **kwargs):
        out = real(*args, **kwargs)
        path.write_text(BASE)
        return out

    monkeypatch.setattr(fixes_module, "fix_text", saved_meanwhile)
    run, outcome = fix(path)
    assert path.read_text() == BASE
    assert outcome.applied == [] and "changed while it was being fixed" in (outcome.skipped or "")
    assert "PL103" in [d.code for d in run.results[0].diagnostics]


def test_diff_applies_with_patch_even_without_a_final_newline(tmp_path):
    import shutil
    import subprocess

    if shutil.which("patch") is None:
        pytest.skip("no patch program")
    messy = MESSY.rstrip("\n").replace("\n", "\r\n")
    path = tmp_path / "config.json"
    path.write_bytes(messy.encode())
    diff = subprocess.run(probe_command() + ["lint", "--isolated", "--diff", "config.json"], cwd=tmp_path,
                          capture_output=True).stdout  # bytes: the \r\n of the lines kept
    assert diff.endswith(b"}\n\\ No newline at end of file\n")
    subprocess.run(["patch", "-s", "config.json"], input=diff, cwd=tmp_path, check=True)
    assert path.read_bytes() == FIXED.rstrip("\n").replace("\n", "\r\n").encode()


def test_fix_on_standard_input_prints_the_fixed_text_and_reports_on_stderr(tmp_path):
    """`probe lint --fix -` is a filter: the fixed config on stdout, what is
    left on stderr; no file (not even one named by --stdin-filename) is written."""
    named = tmp_path / "config.json"
    named.write_text("untouched")
    proc = run_probe("lint", "--isolated", "--fix", "-", "--stdin-filename", "config.json", input=MESSY,
                     cwd=tmp_path, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    fixed = json.loads(proc.stdout)
    assert fixed["rank"] == [0]
    assert proc.stderr.startswith("config.json: fixed 3: PL102 write rank as [0], ")
    assert named.read_text() == "untouched" and sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]
    again = run_probe("lint", "--isolated", "-", input=proc.stdout)
    assert again.returncode == 0, again.stdout


@pytest.mark.parametrize("data", ['{"task": "overflow_check",', "\xff{}"])
def test_fix_on_standard_input_passes_what_it_cannot_fix_through(data):
    proc = subprocess.run(probe_command() + ["lint", "--isolated", "--fix", "-"], capture_output=True,
                          input=data.encode("latin-1"), timeout=120)
    assert proc.returncode == 1 and proc.stdout == data.encode("latin-1")
    assert b"PL00" in proc.stderr and b"Traceback" not in proc.stderr


def test_fix_walks_a_folder_as_lint_does(tmp_path):
    """--fix over a folder fixes the msprobe configs the walk finds and
    leaves every other JSON file, and the ignored ones, as they were."""
    (tmp_path / ".gitignore").write_text("ignored/\n")
    for sub in ("a", "ignored"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "config.json").write_text(MESSY)
    other = '{"name": "pkg", "rank": 0}\n'
    (tmp_path / "a" / "package.json").write_text(other)
    proc = run_probe("lint", "--isolated", "--fix", ".", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "a" / "config.json").read_text())["rank"] == [0]
    assert (tmp_path / "ignored" / "config.json").read_text() == MESSY
    assert (tmp_path / "a" / "package.json").read_text() == other


TOP = '{\n    "task": "overflow_check",\n    "dump_path": "/tmp/d",\n    "level": "L1",\n%s\n}\n'


@pytest.mark.parametrize("members, section", [
    # two members moved into a section that is not there: the first creates it, the second joins it
    ('    "overflow_nums": 7,\n    "check_mode": "all"', {"overflow_nums": 7, "check_mode": "all"}),
    # a move and a rename to the same key: only one of them can be applied; no value is dropped
    ('    "overflow_nums": 7,\n    "overflow_check": {"overflow_number": 3}', None),
    # two misspellings of one key: one rename, the other left for the user
    ('    "overflow_check": {"overflow_number": 3, "Overflow_Nums": 5}', None),
])
def test_fixes_of_one_round_never_make_a_duplicate_key(tmp_path, members, section):
    path = tmp_path / "config.json"
    path.write_text(TOP % members)
    before = json.loads(path.read_text())
    numbers = sorted(v for v in (before.get("overflow_nums"), *(before.get("overflow_check") or {}).values())
                     if isinstance(v, int))
    run, outcome = fix(path, unsafe=True)
    assert outcome.applied
    assert "PL002" not in [d.code for d in run.results[0].diagnostics]
    pairs = json.loads(path.read_text(), object_pairs_hook=lambda p: p)  # every member, duplicates too
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys))
    after = json.loads(path.read_text())
    kept = sorted(v for v in (after.get("overflow_nums"), *after["overflow_check"].values()) if isinstance(v, int))
    assert kept == numbers  # nothing the user wrote is lost
    if section is not None:
        assert after["overflow_check"] == section and run.status == 0


@pytest.mark.parametrize("members, unsafe", [
    # three slips of one key: one can become it, the others are left for the user
    ('    "overflow_check": {"overflow_num0": 1, "overflow_num1": 2, "overflow_num2": 3}', False),
    ('    "overflow_check": {"overflow_num0": 1, "overflow_num1": 2, "overflow_num2": 3}', True),
    # a move and a rename to the same key
    ('    "overflow_nums": 7,\n    "overflow_check": {"overflow_number": 3}', False),
    ('    "overflow_nums": 7,\n    "overflow_check": {"overflow_number": 3}', True),
])
def test_the_fixable_count_is_what_fix_fixes(tmp_path, members, unsafe):
    """Three slips of `overflow_nums` in one section: the report said
    "[*] 3 fixable with --fix", and --fix fixed 1 and left 2 errors (no two
    keys can both become `overflow_nums`). Only the fix --fix applies is
    offered, and counted; the others' hint says which fix makes the key."""
    from msprobe_lint.lint.api import lint_paths
    from msprobe_lint.lint.fixes.edits import counts

    path = tmp_path / "config.json"
    path.write_text(TOP % members)
    found = lint_paths([str(path)], LintOptions(isolated=True)).results[0].diagnostics
    safe, more = counts(found)
    run, outcome = fix(path, unsafe=unsafe)
    assert len(outcome.applied) == (safe + more if unsafe else safe) == 1, (found, outcome.applied)
    assert not [d for d in run.results[0].diagnostics if d.fix is not None and (unsafe or d.fix.safe)]
    left = [d for d in found if d.fix is None and d.code in ("PL101", "PL105")]
    assert left and all("--fix makes it at" in d.hint for d in left), left


def test_fix_names_a_long_list_of_fixes_in_one_readable_line(tmp_path):
    """A list of 200 equal steps: --fix printed "fixed 199: " and the 199
    fixes, one very long line. Repeated fixes are counted, and after a few
    different ones the rest is "and N more"."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config(step=[1] * 200)))
    proc = run_probe("lint", "--isolated", "--fix", "config.json", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == "config.json: fixed 199: PL302 remove the entry repeating 1 (199 times)\n"
    path.write_text(json.dumps(config(step=list(range(100)) * 2)))
    proc = run_probe("lint", "--isolated", "--fix", "config.json", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert proc.returncode == 0 and json.loads(path.read_text())["step"] == list(range(100))
    assert proc.stderr == ("config.json: fixed 100: " + ", ".join(f"PL302 remove the entry repeating {n}"
                                                                  for n in range(4)) + ", and 96 more\n")


def test_fix_refuses_files_a_rename_would_not_edit_as_a_write_does(tmp_path):
    """A read-only file and a file with another hard link are reported,
    not replaced; the owner and group of a rewritten file are kept."""
    read_only = tmp_path / "ro.json"
    read_only.write_text(MESSY)
    read_only.chmod(0o444)
    linked = tmp_path / "linked.json"
    linked.write_text(MESSY)
    os.link(linked, tmp_path / "other-name.json")
    proc = run_probe("lint", "--isolated", "--fix", "ro.json", "linked.json", cwd=tmp_path)
    assert proc.returncode == 2  # fixes were due and could not be written: not "findings remain" (1)
    assert "probe: ro.json: not rewritten: it is read-only" in proc.stderr
    assert "probe: linked.json: not rewritten: it has 1 other hard link(s)" in proc.stderr
    assert read_only.read_text() == MESSY and linked.read_text() == MESSY
    assert (tmp_path / "other-name.json").read_text() == MESSY and linked.stat().st_nlink == 2


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to switch to nobody")
def test_fix_in_a_folder_that_cannot_be_written_says_so_and_exits_2(open_tmp):
    folder = open_tmp / "locked"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(MESSY)
    path.chmod(0o666)
    folder.chmod(0o555)  # the file is writable, its folder is not: no new file can replace it

    def fix_as_nobody():
        run, (outcome,) = fix_paths([str(path)], LintOptions(isolated=True))
        return {"status": run.status, "skipped": outcome.skipped, "failed": outcome.failed}

    got = as_nobody(fix_as_nobody)
    assert got["status"] == 2 and got["failed"], got
    assert got["skipped"].startswith("not rewritten: Permission denied (the file and its folder must be writable")
    assert path.read_text() == MESSY


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_fix_keeps_the_owner_and_group(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MESSY)
    os.chown(path, 65534, 65534)
    run_probe("lint", "--isolated", "--fix", str(path))
    info = path.stat()
    assert (info.st_uid, info.st_gid) == (65534, 65534) and json.loads(path.read_text())["rank"] == [0]


def xattr_file(folder: Path, text: str = MESSY, name: str = "config.json") -> Path:
    """A file in ``folder`` carrying the user.* attribute ``user.note``;
    the test is skipped where the platform or file system has none."""
    path = folder / name
    path.write_text(text)
    if not hasattr(os, "setxattr"):
        pytest.skip("no extended attributes on this platform (os.setxattr)")
    try:
        os.setxattr(path, "user.note", b"keep")
    except OSError as err:
        pytest.skip(f"the file system of {folder} has no user.* extended attributes ({err.strerror})")
    return path


def acl(*entries: tuple) -> bytes:
    """A POSIX ACL as the kernel stores it in system.posix_acl_access
    (version 2; each entry: tag, permissions, id)."""
    import struct

    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in entries)


ANY = 0xFFFFFFFF
#: owner rw, user nobody rw, group r, mask rw, others r
NOBODY_MAY_WRITE = acl((1, 6, ANY), (2, 6, 65534), (4, 4, ANY), (0x10, 6, ANY), (0x20, 4, ANY))


def set_acl(path: Path, name: str = "system.posix_acl_access") -> None:
    try:
        os.setxattr(path, name, NOBODY_MAY_WRITE)
    except OSError as err:
        pytest.skip(f"the file system of {path.parent} has no POSIX ACLs ({err.strerror})")


def test_fix_keeps_the_extended_attributes(tmp_path):
    """The rewrite (a new file renamed over the old) kept only the mode,
    owner and group: a user.* attribute was lost."""
    path = xattr_file(tmp_path)
    names = sorted(os.listxattr(path))  # user.note, and a security label where the system gives one
    proc = run_probe("lint", "--isolated", "--fix", "config.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(path.read_text())["rank"] == [0]
    assert sorted(os.listxattr(path)) == names and os.getxattr(path, "user.note") == b"keep"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="an ACL naming another user: root")
def test_fix_keeps_the_posix_acl(tmp_path):
    path = xattr_file(tmp_path)
    set_acl(path)
    mode = path.stat().st_mode
    proc = run_probe("lint", "--isolated", "--fix", "config.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(path.read_text())["rank"] == [0] and path.stat().st_mode == mode
    assert {"system.posix_acl_access", "user.note"} <= set(os.listxattr(path))
    assert os.getxattr(path, "system.posix_acl_access") == NOBODY_MAY_WRITE


def test_fix_gives_no_acl_the_file_did_not_have(tmp_path):
    """The new file inherits the folder's default ACL: the rewrite gave a
    file that had none the access of the default's users."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = xattr_file(folder)
    set_acl(folder, "system.posix_acl_default")
    mode = path.stat().st_mode
    proc = run_probe("lint", "--isolated", "--fix", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(path.read_text())["rank"] == [0] and path.stat().st_mode == mode
    assert "system.posix_acl_access" not in os.listxattr(path) and os.getxattr(path, "user.note") == b"keep"


def test_fix_refuses_a_file_whose_attribute_cannot_be_kept(tmp_path, monkeypatch):
    """As for another hard link: the file is left as it was, said, exit 2."""
    path = xattr_file(tmp_path)
    before = path.stat()
    real = os.setxattr

    def refuse(target, name, *args, **kwargs):
        if name == "user.note":
            raise OSError(95, "Operation not supported")
        return real(target, name, *args, **kwargs)

    monkeypatch.setattr(os, "setxattr", refuse)
    run, (outcome,) = fix_paths([str(path)], LintOptions(isolated=True))
    monkeypatch.undo()
    assert run.status == 2 and outcome.failed and not outcome.written
    assert outcome.skipped == ("not rewritten: its extended attribute 'user.note' could not be kept "
                               "(Operation not supported)")
    assert path.read_text() == MESSY and path.stat().st_ino == before.st_ino
    assert os.getxattr(path, "user.note") == b"keep" and [p.name for p in tmp_path.iterdir()] == ["config.json"]


def test_an_attribute_the_new_file_already_has_is_not_set_again(tmp_path, monkeypatch):
    """A SELinux label the folder gives the new file is the old one's;
    setting it again may need privileges the user lacks."""
    from msprobe_lint.lint.loader import copy_xattrs

    path = xattr_file(tmp_path)
    given = xattr_file(tmp_path, name="new.json")

    def refuse(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "setxattr", refuse)
    copy_xattrs(str(path), str(given))
    assert os.getxattr(given, "user.note") == b"keep"


def test_fix_without_extended_attributes_on_the_platform(tmp_path, monkeypatch):
    """macOS and Windows have no os.listxattr: the fix writes as before."""
    from msprobe_lint.lint.loader import write_atomic

    path = tmp_path / "config.json"
    path.write_text(MESSY)
    monkeypatch.delattr(os, "listxattr", raising=False)
    write_atomic(str(path), FIXED)
    assert path.read_text() == FIXED


def test_migrate_write_keeps_the_extended_attributes(tmp_path):
    """probe migrate --write shares the writer."""
    path = xattr_file(tmp_path, json.dumps({"task": "run_ut", "dump_path": "/home/d", "run_ut": {}}, indent=2))
    proc = run_probe("migrate", "config.json", "--to", "26.0", "--framework", "pytorch", "--write", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"acc_check"' in path.read_text() and os.getxattr(path, "user.note") == b"keep"


def test_fix_of_a_folder_reports_a_soft_link_as_its_target_now_reads(tmp_path):
    (tmp_path / "a.json").write_text(MESSY)
    (tmp_path / "b.json").symlink_to("a.json")
    proc = run_probe("lint", "--isolated", "--fix", ".", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr  # b.json: the target is fixed, nothing is left
    assert "b.json: not rewritten" not in proc.stderr and json.loads((tmp_path / "a.json").read_text())["rank"] == [0]


def test_fix_report_quotes_the_fixed_text(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MESSY.replace('"/home/data_dump"', '"dump"'))
    proc = run_probe("lint", "--isolated", "--fix", "-", "--stdin-filename", "config.json", cwd=tmp_path,
                     input=path.read_text(), env={"NO_COLOR": "1"})
    assert '"dump_path" : "dump",' in proc.stderr and "PL401" in proc.stderr  # the snippet, from the input


def test_diff_with_nothing_to_show_says_what_is_left(tmp_path):
    path = tmp_path / "config.json"  # L2 on MindSpore 2.5.0: a finding no fix can answer
    path.write_text('{"task": "overflow_check", "dump_path": "/tmp/d", "level": "L2", "rank": [], "step": []}\n')
    proc = run_probe("lint", "--isolated", "--diff", "--mindspore-version", "2.5.0", "--jit-level", "O2", str(path))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "No fix to show; 1 finding left (run probe lint without --diff to see them)." in proc.stderr
    path.write_text(BASE.replace('"/home/data_dump"', '"dump"'))  # a relative dump_path: its fix is unsafe
    proc = run_probe("lint", "--isolated", "--diff", str(path))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "No safe fix to show; 1 finding has an unsafe fix (add --unsafe-fixes to see it)." in proc.stderr
    proc = run_probe("lint", "--isolated", "--diff", "-f", "json", str(path))
    assert proc.returncode == 2 and "--format json does not apply" in proc.stderr


def test_diff_with_only_unsafe_fixes_says_how_to_see_them(tmp_path):
    path = tmp_path / "config.json"  # task tensor with its keys at the top level: PL105 moves them (unsafe)
    path.write_text('{"task": "tensor", "dump_path": "/home/d", "level": "L1", "step": [0], "list": [], '
                    '"data_mode": ["all"]}\n')
    proc = run_probe("lint", "--isolated", "--diff", str(path))
    assert proc.stdout == ""
    assert "No safe fix to show; 2 findings have an unsafe fix (add --unsafe-fixes to see them)." in proc.stderr
    proc = run_probe("lint", "--isolated", "--diff", "--unsafe-fixes", str(path))
    assert '"tensor": {"list":[], "data_mode":["all"]}' in proc.stdout.replace(": [", ":[")


def test_output_dash_is_stdout_and_a_config_is_never_the_output(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(MESSY)
    other = tmp_path / "other.json"
    other.write_text(BASE)
    proc = run_probe("lint", "--isolated", "config.json", "--output", "-", cwd=tmp_path)
    assert "PL102" in proc.stdout and not (tmp_path / "-").exists()
    proc = run_probe("lint", "--isolated", "config.json", "--output", "other.json", cwd=tmp_path)
    assert proc.returncode == 2 and "holds an msprobe config" in proc.stderr and other.read_text() == BASE
    for fmt in ("json", "text"):  # a report from an earlier run is replaced
        report = tmp_path / f"report.{fmt}"
        for _ in range(2):
            proc = run_probe("lint", "--isolated", "config.json", "-f", fmt, "--output", str(report), cwd=tmp_path)
            assert proc.returncode == 1, proc.stderr


@pytest.mark.parametrize("diff", [False, True])
def test_a_lone_surrogate_escape_is_kept_by_the_path_fix_and_later_files_are_fixed(tmp_path, diff):
    """Issue 34: PL401's fix of ``"\\ud800x"`` crashed (UnicodeEncodeError)
    and the files after it were never processed."""
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text('{"task": "overflow_check",\n "dump_path": "\\ud800x", "level": "L1"}\n')
    args = ["lint", "--isolated", "--select", "PL401", "--unsafe-fixes", "--diff" if diff else "--fix",
            "a.json", "b.json"]
    proc = run_probe(*args, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    expected = '{"task": "overflow_check",\n "dump_path": "' + str(tmp_path) + '/\\ud800x", "level": "L1"}\n'
    for name in ("a.json", "b.json"):
        if diff:
            assert f'+ "dump_path": "{tmp_path}/\\ud800x", "level": "L1"}}' in proc.stdout
        else:
            assert (tmp_path / name).read_text() == expected
            assert json.loads((tmp_path / name).read_text())["dump_path"] == f"{tmp_path}/\ud800x"


def test_unsafe_fixes_run_to_a_fixed_point(tmp_path):
    """Issue 34: the safe fix of ``"async_dump": "true"`` (written true)
    unlocked PL207's unsafe removal, which --fix --unsafe-fixes then left,
    saying "1 fixable with --fix --unsafe-fixes" (the command just run)."""
    path = tmp_path / "config.json"
    path.write_text('{"task": "statistics", "dump_path": "/data/d", "level": "L2", "async_dump": "true"}\n')
    proc = run_probe("lint", "--isolated", "--fix", "--unsafe-fixes", "config.json", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "All checks passed (1 file).\n"), proc.stdout
    assert json.loads(path.read_text()) == {"task": "statistics", "dump_path": "/data/d", "level": "L2"}


def test_the_summary_names_the_working_command_for_unsafe_fixes(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"task": "statistics", "dump_path": "data/d", "level": "l1"}\n')
    proc = run_probe("lint", "--isolated", "config.json", cwd=tmp_path)
    assert proc.stdout.endswith("[*] 1 fixable with --fix; 1 more with --fix --unsafe-fixes.\n"), proc.stdout


# ---------------------------------------------------------------------------
# Defect 6: a move into a section whose only key is removed

MOVE_INTO_EMPTIED = ('{\n    "task": "overflow_check",\n    "dump_path": "/tmp/d",\n    "level": "L1",\n'
                     '    "overflow_nums": 4,\n    "overflow_check": {"backward_input": []}\n}\n')


@pytest.mark.parametrize("layout", ["compact", "indented"])
def test_a_move_into_a_section_whose_only_key_is_removed_applies_both(tmp_path, layout):
    """PL105 moved overflow_nums into the section while PL106 removed the
    section's only member, in one round: the text did not parse, and the
    whole round (even the safe PL106 removal) was silently dropped."""
    text = MOVE_INTO_EMPTIED
    if layout == "indented":
        text = text.replace('{"backward_input": []}', '{\n        "backward_input": []\n    }')
    path = tmp_path / "config.json"
    path.write_text(text)
    run, outcome = fix(path, unsafe=True)
    assert sorted(d.code for d in outcome.applied) == ["PL105", "PL106"]
    assert json.loads(path.read_text())["overflow_check"] == {"overflow_nums": 4}
    assert "overflow_nums" not in json.loads(path.read_text())
    assert [d.code for d in run.results[0].diagnostics] == [] and run.status == 0
    path.write_text(text)  # the safe fix alone, as before
    run, outcome = fix(path)
    assert [d.code for d in outcome.applied] == ["PL106"]
    assert [d.code for d in run.results[0].diagnostics] == ["PL105"]


def test_diff_with_unsafe_fixes_shows_a_move_into_a_section_emptied_by_another_fix(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(MOVE_INTO_EMPTIED)
    proc = run_probe("lint", "--isolated", "--diff", "--unsafe-fixes", str(path))
    assert proc.returncode == 1, proc.stderr
    assert '+    "overflow_check": {"overflow_nums": 4}' in proc.stdout
    assert "add --unsafe-fixes" not in proc.stderr and "Would fix 2 findings in 1 file." in proc.stderr
    assert path.read_text() == MOVE_INTO_EMPTIED


def test_a_fix_that_cannot_be_applied_is_said_not_left_counted_as_fixable(tmp_path, monkeypatch):
    """A fix whose result would not parse (a bug in a fix) is left out, the
    others are applied, and the run says which was not (not "[*] fixable")."""
    import msprobe_lint.lint.fixes.edits as edits
    from msprobe_lint.lint.diagnostic import Edit

    real = edits.apply_fixes

    def breaking(text, diagnostics, unsafe=False, protected=()):
        spoilt = []
        for d in diagnostics:
            if d.code == "PL103" and d.fix is not None:  # the level fix writes a broken token
                d = d._replace(fix=d.fix._replace(edits=tuple(Edit(e.start, e.end, "{", e.line, e.column,
                                                                   e.end_line, e.end_column, e.pointer)
                                                              for e in d.fix.edits)))
            spoilt.append(d)
        return real(text, spoilt, unsafe, protected)

    monkeypatch.setattr(edits, "apply_fixes", breaking)
    path = tmp_path / "config.json"
    path.write_text(MESSY)
    run, outcome = fix(path)
    assert sorted(d.code for d in outcome.applied) == ["PL101", "PL102"]
    assert "PL103" in (outcome.skipped or "") and "could not be applied" in outcome.skipped
    (left,) = run.results[0].diagnostics
    assert left.code == "PL103" and left.fix is None
    assert json.loads(path.read_text())["level"] == "l1"


@pytest.mark.parametrize("task_key", ['"tsak"', '"Task"', None])
def test_a_section_is_never_removed_when_the_config_names_no_task(tmp_path, task_key):
    """A fresh user's finding: with the "task" key misspelt, msprobe's default
    task (statistics) made the overflow_check section inactive, and one
    ``--fix --unsafe-fixes`` run renamed the key *and* removed the section,
    losing overflow_nums. With no "task" of its own the section is still
    named (PL206), with no fix."""
    text = BASE.replace('"overflow_check": {"overflow_nums": 1}', '"overflow_check": {"overflow_nums": 5}')
    text = text.replace('  "task":   "overflow_check",\n',
                        f'  {task_key}:   "overflow_check",\n' if task_key else "")
    path = tmp_path / "config.json"
    path.write_text(text)
    run, outcome = fix(path, unsafe=True)
    after = json.loads(path.read_text())
    assert after["overflow_check"] == {"overflow_nums": 5}, path.read_text()
    assert "PL206" not in [d.code for d in outcome.applied]
    if task_key:  # the key is renamed: the section is the active one
        assert after["task"] == "overflow_check" and "PL206" not in [d.code for d in run.results[0].diagnostics]
    else:
        (left,) = [d for d in run.results[0].diagnostics if d.code == "PL206"]
        assert "the config sets no \"task\"" in left.message and left.fix is None
