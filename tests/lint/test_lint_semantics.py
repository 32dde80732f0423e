"""Behaviour of the engine and the semantic rules beyond one bad/good
pair: positions, one diagnostic per fault, unknown context, suggestions."""
from __future__ import annotations

import json
import os

import pytest
from conftest import codes, config


def test_reports_every_problem_at_once(lint):
    found = lint(config(levle="L1", rank=0, dump_path="./d", overflow_check={"overflow_number": 2}))
    assert sorted(codes(found)) == ["PL101", "PL101", "PL102", "PL401"]


def test_a_misspelt_task_does_not_hide_the_rules_of_the_task_it_means(lint):
    """A fresh user's finding: with "overflow-check" for overflow_check,
    only the task's PL103 came out; the level (PL201) and the section's
    options (PL204, PL206) showed up once the typo was fixed. A clear
    did-you-mean is judged as the task it means; a value near no task, or
    another release's task, is judged as before."""
    bad = config(task="overflow-check", level="L2", overflow_check={"check_mode": "aicore"}, statistics={})
    fixed = config(level="L2", overflow_check={"check_mode": "aicore"}, statistics={})
    found = lint(bad, mode="pynative", framework="mindspore")
    assert codes(found) == ["PL103", "PL201", "PL204", "PL206"]
    assert found[0].hint == "did you mean 'overflow_check'?"
    assert found[1:] == lint(fixed, mode="pynative", framework="mindspore")
    assert codes(lint(config(task="Overflow_Check", level="mix"))) == ["PL103", "PL201"]
    assert codes(lint(config(task="dump", level="mix"))) == ["PL103"]
    assert codes(lint(config(task="diff_check", level="mix"))) == ["PL103"]  # 26.x's task, not a typo


def test_typo_suggestions(lint):
    (top,) = lint(config(levle="L1", level=None))
    assert top.hint == "did you mean 'level'?"
    (inner,) = lint(config(overflow_check={"overflow_number": 3}))
    assert inner.hint == "did you mean 'overflow_nums'?"
    assert inner.pointer == "/overflow_check/overflow_number"


def test_a_misspelt_copy_of_a_key_that_is_set_says_to_remove_it(lint):
    """Before, "Task" beside "task" was told "did you mean 'task'?", which
    would make a duplicate key; no fix is offered either way."""
    (top,) = lint(config(Task="overflow_check"))
    assert top.code == "PL101" and top.fix is None
    assert top.hint == "did you mean 'task'? It is set already at the top level: remove this copy"
    (inner,) = lint(config(overflow_check={"overflow_nums": 1, "overflow_num": 3}))
    assert inner.hint.startswith("did you mean 'overflow_nums'? It is set already in the overflow_check")


def test_a_top_level_slip_of_a_section_key_names_that_key_and_section(lint):
    """"overflow_num" at the top level is misspelt and misplaced at once:
    the hint only listed the top-level keys."""
    (top,) = lint(config(overflow_num=3))
    assert top.code == "PL101"
    assert top.hint.startswith("did you mean 'overflow_nums' in the overflow_check section?")
    assert top.fix is not None and not top.fix.safe  # rename and move: test_fix_safety.py
    (stats,) = lint(config(task="statistics", summary_mod="md5"))
    assert stats.hint.startswith("did you mean 'summary_mode' in the statistics section?")
    # only the active task's section: with task statistics overflow_num is no slip of it
    (other,) = lint(config(task="statistics", overflow_num=3))
    assert other.hint.startswith("known keys here:")
    # a slip of a top-level key is still that key
    (level,) = lint(config(levle="L1"))  # beside the "level" it sets: a copy to remove
    assert level.hint == "did you mean 'level'? It is set already at the top level: remove this copy"


def test_enum_suggestion_is_case_insensitive_then_closest(lint):
    (lower,) = lint(config(level="l0"))
    assert lower.code == "PL103" and lower.hint == "did you mean 'L0'?"
    (close,) = lint(config(task="overflow_chek"))
    assert close.hint == "did you mean 'overflow_check'?"


@pytest.mark.parametrize("value", [["L1"], 1, {"L1": 1}])
def test_a_value_of_the_wrong_type_is_one_diagnostic_not_also_not_allowed(lint, value):
    """"level": ["L1"] is one mistake: PL102, not PL102 and PL103."""
    (found,) = lint(config(level=value))
    assert found.code == "PL102" and found.pointer == "/level"


def test_integers_are_strict(lint):
    for value in (3.0, 1e2, True, "3"):
        (found,) = lint(config(overflow_check={"overflow_nums": value}))
        assert found.code == "PL102", value
    (text,) = lint('{"task": "overflow_check", "dump_path": "/d", "overflow_check": {"overflow_nums": 1e2}}')
    assert text.code == "PL102" and text.hint == "write 100"


def test_positions_point_at_key_or_value(lint):
    text = '{\n  "dump_path": "/d",\n  "task": "overflow_check",\n  "levle": "L1",\n  "rank": [0, "3-1"]\n}\n'
    found = {d.code: d for d in lint(text)}
    assert (found["PL101"].line, found["PL101"].column) == (4, 3)  # the key
    assert (found["PL301"].line, found["PL301"].column) == (5, 15)  # the item value


def test_nan_is_pl005_not_pl102(lint):
    found = lint('{"task": "overflow_check", "dump_path": "/d", "overflow_check": {"overflow_nums": NaN}, '
                 '"step": [-Infinity]}')
    assert codes(found) == ["PL005", "PL005"]


def test_duplicate_key_reported_at_each_repeat_and_last_value_wins(lint):
    text = '{\n"dump_path": "/d",\n"level": "L1",\n"level": "L0",\n"level": "mix",\n"task": "overflow_check"\n}'
    found = lint(text, mode="pynative")
    dups = [d for d in found if d.code == "PL002"]
    assert [d.line for d in dups] == [4, 5]
    assert "PL201" in codes(found)  # the last value, mix, is what the rules see


def test_bad_value_is_not_passed_to_semantic_rules(lint):
    # check_mode fails the enum: PL103 only, no PL204 on top
    found = lint(config(level="L2", overflow_check={"check_mode": "ai_core"}),
                 mode="graph", jit_level="O2", mindspore_version="2.6.0")
    assert codes(found) == ["PL103"]
    # an invalid rank item is PL301 once, not also PL302/PL303
    assert codes(lint(config(rank=[-1, -1]), world_size=2)) == ["PL301", "PL301"]


def test_unknown_context_only_pl202_pl203_warn(lint):
    found = lint(config(level="L2"))
    assert sorted(codes(found)) == ["PL202", "PL203"]
    assert all(d.severity.value == "warning" for d in found)
    assert lint(config(level="L1")) == []  # mode unknown: no PL201
    assert lint(config(overflow_check={"check_mode": "all"})) == []  # no PL204 without context
    assert lint(config(rank=[9])) == []  # no world size: no PL303


def test_mix_and_debug_never_valid_for_overflow_check(lint):
    assert codes(lint(config(level="mix"))) == ["PL201"]
    assert codes(lint(config(level="debug"))) == ["PL201"]
    assert lint(config(task="statistics", level="mix")) == []


def test_graph_mode_implies_mindspore_and_level_defaults_to_l1(lint):
    found = lint(config(level=None), mode="graph")
    assert codes(found) == ["PL201"] and "defaults to L1" in found[0].message


def test_context_provenance_in_messages(lint):
    (found,) = lint(config(level="L1"), mode="graph")
    assert "mode=graph from --mode" in found.message
    (rank,) = lint(config(rank=[5]), world_size=4)
    assert "world_size=4 from --world-size" in rank.message


def test_pl204_reasons(lint):
    (found,) = [d for d in lint(config(level="L2", overflow_check={"check_mode": "all", "overflow_nums": 1}),
                                mode="graph", jit_level="O2", mindspore_version="2.2.0") if d.code == "PL204"]
    assert found.pointer == "/overflow_check/overflow_nums"  # 2.2 honours check_mode; overflow_nums inert
    both = lint(config(overflow_check={"check_mode": "atomic"}), mode="pynative", mindspore_version="2.6.0")
    assert codes(both) == ["PL204"] and "static graph" in both[0].message and "2.3.0" in both[0].message


def test_l2_pynative_and_frameworks(lint):
    assert codes(lint(config(level="L2"), framework="pytorch")) == ["PL201"]
    assert codes(lint(config(level="L0"), framework="msadapter")) == []
    assert codes(lint(config(task="grad_probe"), framework="msadapter")) == ["PL205"]


def test_rank_rules(lint):
    assert codes(lint(config(rank=[0, "0-1"]), world_size=8)) == ["PL302"]
    assert codes(lint(config(rank=["6-9"]), world_size=8)) == ["PL303"]
    assert codes(lint(config(rank=[]), world_size=1)) == []
    assert codes(lint(config(rank="0"))) == ["PL102"]
    assert codes(lint(config(step=["a-b", "1-2-3", "2"]))) == ["PL301", "PL301", "PL301"]


def test_path_rules(lint):
    (tilde,) = lint(config(dump_path="~/dump"))
    assert tilde.code == "PL405"  # not PL401/PL402 as well
    # a '~' after the start is no shell expansion, only a rejected character
    assert codes(lint(config(dump_path="/data/~/dump"))) == ["PL402"]
    assert codes(lint(config(dump_path="/data/$RUN/dump"))) == ["PL405"]
    (space,) = lint(config(dump_path="/home/my data/dump"))
    assert space.hint.endswith("/home/my_data/dump")
    # a helper's finding: msprobe's re.match(...$) lets one final line break through, into the folder's name
    (newline,) = lint(config(dump_path="/data/dump\n"))
    assert newline.code == "PL402" and "ends with a line break" in newline.message
    assert newline.hint == "write /data/dump" and newline.fix is not None
    assert codes(lint(config(dump_path="/data/dump\n\n"))) == ["PL402"]
    assert codes(lint(config(dump_path="/" + "a/" * 2100))) == ["PL403"]
    # other path keys: PL401 is a warning; inactive sections are not judged
    found = lint(config(task="run_ut", run_ut={"error_data_path": "./err"}), framework="pytorch")
    assert [(d.code, d.severity.value) for d in found] == [("PL401", "warning")]
    assert codes(lint(config(run_ut={"error_data_path": "./err"}))) == ["PL206"]


def test_pl405_expands_a_user_name_to_that_users_home(lint):
    """'~name' is the home of user name, not this user's home with the
    name glued on ('/rootuser/x'); the fix says whose home it writes, and a
    user unknown here gets no fix and no made-up home."""
    import os
    import pwd

    user = pwd.getpwuid(os.getuid())
    (named,) = lint(config(dump_path=f"~{user.pw_name}/dump"))
    home = os.path.join(user.pw_dir, "dump")
    assert named.hint == f"write the full path, e.g. {home}"
    assert named.fix.description == f"expand '~{user.pw_name}' to the home folder of user {user.pw_name!r}: {home}"
    assert "this user's" not in named.fix.description
    (own,) = lint(config(dump_path="~/dump"))
    assert own.fix.description.startswith("expand '~' to this user's home folder: ")
    (unknown,) = lint(config(dump_path="~no_such_user_pl405/dump"))
    assert unknown.fix is None
    assert "no_such_user_pl405/dump" not in unknown.hint
    assert "home folder of user 'no_such_user_pl405'" in unknown.hint


def test_pl405_hint_expands_variables_or_writes_a_placeholder(lint, monkeypatch):
    """A new user's finding: the hint put a literal "path" where the
    variable was ("$HOME/dump" -> "e.g. /path/dump", which looks like a
    real suggestion). A variable set here is expanded with its value; one
    unset (or empty) is an obvious <NAME> placeholder; no fix ever writes
    a placeholder, and '~' alone keeps its fix, the path the hint gives."""
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("PL405_RUN", "run3")
    monkeypatch.delenv("PL405_UNSET", raising=False)
    monkeypatch.setenv("PL405_EMPTY", "")
    (home,) = lint(config(dump_path="$HOME/dump"))
    assert home.hint == "write the full path, e.g. /home/alice/dump"
    (braced,) = lint(config(dump_path="/data/${PL405_RUN}/dump"))
    assert braced.hint == "write the full path, e.g. /data/run3/dump"
    (unset,) = lint(config(dump_path="~/dumps/$PL405_UNSET"))
    assert unset.hint == ("write the full path: /home/alice/dumps/<PL405_UNSET>, with <PL405_UNSET> written out "
                          "($PL405_UNSET is not set here)")
    assert unset.fix is None
    (two,) = lint(config(dump_path="/data/${PL405_UNSET}/$PL405_EMPTY/dump"))
    assert two.hint == ("write the full path: /data/<PL405_UNSET>/<PL405_EMPTY>/dump, with <PL405_UNSET> and "
                        "<PL405_EMPTY> written out ($PL405_UNSET is not set here, $PL405_EMPTY is empty here)")
    (odd,) = lint(config(dump_path="/data/${PL405_RUN:-x}/dump"))  # not a plain name: never expanded
    assert odd.hint == "write the full path: /data/<PL405_RUN:-x>/dump, with <PL405_RUN:-x> written out"
    for finding in (home, braced, unset, two, odd):
        assert "/path" not in finding.hint and finding.fix is None
    (tilde,) = lint(config(dump_path="~/dump"))
    assert tilde.hint == "write the full path, e.g. /home/alice/dump"
    assert tilde.fix.description == "expand '~' to this user's home folder: /home/alice/dump"


def test_pl401_example_and_fix_collapse_dotdot(lint, tmp_path):
    """PL401's hint for 'a/../b' was "e.g. /home/user/a/../b": the '..'
    kept in the absolute path it suggests. The example and the fix are
    both normalised; the fixed file re-lints with neither PL401 nor PL404."""
    (tmp_path / "run").mkdir()
    for value, tail in (("a/../b", "b"), ("./x/./y/../z", "x/z"), ("a/..", None)):
        found = lint(config(dump_path=value), cwd=str(tmp_path / "run"))
        (relative,) = [d for d in found if d.code == "PL401"]
        assert ".." not in relative.hint and "/./" not in relative.hint, relative.hint
        assert relative.hint == f"give an absolute path, e.g. /home/user/{tail or 'dump'}"
        (edit,) = relative.fix.edits
        fixed = json.loads(edit.text)
        assert fixed == os.path.normpath(str(tmp_path / "run" / value)) and ".." not in fixed
        assert {"PL401", "PL404"}.isdisjoint(codes(lint(config(dump_path=fixed))))


def test_pl404_never_offers_a_fix_that_changes_nothing(lint, tmp_path):
    """'../dump' collapses to itself: the hint and the fix wrote the same
    '../dump' back. A relative path is made absolute against --cwd (or
    here), as PL401's fix makes it; '~/../x' is not collapsed to 'x'."""
    (tmp_path / "run").mkdir()
    found = lint(config(dump_path="../dump"), cwd=str(tmp_path / "run"))
    (dotdot,) = [d for d in found if d.code == "PL404"]
    absolute = str(tmp_path / "dump")
    assert dotdot.hint == f"write it as {absolute}"
    assert dotdot.fix.description == f"collapse '..' and make dump_path absolute against --cwd: {absolute}"
    (edit,) = dotdot.fix.edits
    assert edit.text == f'"{absolute}"'
    (plain,) = lint(config(dump_path="/data/run/../dump"))
    assert plain.fix.description == "collapse '..' in the path: /data/dump"
    tilde = [d for d in lint(config(dump_path="~/../x")) if d.code == "PL404"]
    assert tilde and tilde[0].fix is None and "write it as x" not in tilde[0].hint


def test_pl105_vs_pl101(lint):
    assert codes(lint(config(overflow_check={"data_mode": ["all"]}))) == ["PL105"]
    assert codes(lint(config(statistics={"level": "L1"}, task="statistics"))) == ["PL105"]
    (ms_key,) = lint(config(iteration="all"))
    assert ms_key.code == "PL101" and "MindSpore's own dump" in ms_key.message


def test_a_scope_neither_empty_nor_two_names_is_pl107_in_every_section(lint):
    """SPEC 3.1: "a `scope` that is neither empty nor two names" is PL107.
    It was PL305, the code for two names that are not full dump names;
    that one stays PL305."""
    for scope in (["a"], ["Functional.relu.0.forward"], ["a", "b", "c"]):
        for task in ("statistics", "tensor", "overflow_check"):
            found = lint(config(task=task, step=[0], **{task if task != "overflow_check" else "statistics":
                                                        {"scope": scope}}))
            ours = [d for d in found if d.pointer.endswith("/scope")]
            assert [d.code for d in ours] == ["PL107"], (task, scope, found)
            assert f"holds {len(scope)} name(s)" in ours[0].message
            assert 'put their names in "list"' in ours[0].hint
    assert codes(lint(config(task="statistics", statistics={"scope": ["a", "b"]}))) == ["PL305"]
    assert codes(lint(config(task="free_benchmark", free_benchmark={"scope": ["a"]}))) == []  # a plain list


def test_schema_ranges(lint):
    assert codes(lint(config(task="statistics", statistics={"scope": ["a"]}))) == ["PL107"]  # one name: length
    assert codes(lint(config(task="statistics", statistics={"scope": ["a", "b"]}))) == ["PL305"]  # not dump names
    assert codes(lint(config(task="statistics", statistics={"scope": ["Tensor.add.0.forward",
                                                                     "Functional.relu.2.backward"]}))) == []
    assert codes(lint(config(task="statistics", statistics={"data_mode": ["all", "forward"]}))) == ["PL107"]
    # 8.1 reads the online run_ut port (8.3 no longer does: PL106 beside it)
    assert codes(lint(config(task="tensor", step=[0], tensor={"port": 70000}), msprobe_version="8.1")) == ["PL107"]
    assert codes(lint(config(task="statistics", statistics={"summary_mode": ["max", "l3"]}))) == ["PL103"]
    assert codes(lint(config(task="statistics", statistics={"summary_mode": 3}))) == ["PL102"]


def test_mindspore_dump_config_stops_everything(lint):
    found = lint({"common_dump_settings": {"dump_mode": 0, "path": "rel path"}, "e2e_dump_settings": {}})
    assert codes(found) == ["PL007"]


def test_root_and_syntax_stop_everything(lint):
    assert codes(lint('"just a string"')) == ["PL003"]
    (empty,) = lint("")
    assert empty.code == "PL001" and "empty" in empty.message
    (comment,) = lint('{"dump_path": "/d" // where\n}')
    assert comment.code == "PL001" and comment.hint == "JSON has no comments; remove them"
    (utf,) = lint(b'{"dump_path": "/d\xff"}')
    assert utf.code == "PL004" and (utf.line, utf.column) == (1, 18)


@pytest.mark.parametrize("text, message, hint", [
    # a final '}' forgotten (the decoder said "Expecting ',' delimiter" past the last line)
    ('{\n "task": "overflow_check",\n "dump_path": "/data/dump"\n',
     "unexpected end of file: '}' missing (the object opened at 1:1 is not closed)", "add '}' at the end of the file"),
    ('{"task": "overflow_check",\n "overflow_check": {"overflow_nums": 1',
     "unexpected end of file: 2 closing brackets missing, innermost first: '}' for the object opened at 2:20, "
     "'}' for the object opened at 1:1", "add '}}' at the end of the file"),
    # more than brackets missing: no closing hint, no claim that only they are missing
    ('{"task": "overflow_check", "step": [1,\n',
     "unexpected end of file: 2 objects or lists are not closed, innermost first: the list opened at 1:36, "
     "the object opened at 1:1", None),
    ('{"task": "overflow_check", "x"', "unexpected end of file: the object opened at 1:1 is not closed", None),
    # the file ends inside a string
    ('{"task": "overflow_check",\n "dump_path": "/data/du',
     "a string starts here and the file ends before its closing '\"'", None),
    # a string missing its closing quote, or closed by a fullwidth one, runs on to the line's end
    ('{"task": "overflow_check", "dump_path": "/data/dump}\n',
     "a string runs on past the end of its line: its closing '\"' is missing, or a line break inside it must be "
     "written \\n", None),
    ('{"task": "overflow_check", "dump_path": "/data/dump\u201d}\n',
     "a string runs on past the end of its line: its closing '\"' is missing, or a line break inside it must be "
     "written \\n", "this line holds a right double quotation mark '\u201d' (U+201D): JSON needs '\"' there"),
    # a review's finding: the closing quote may be there, on the next line
    ('{"task": "overflow_check",\n "dump_path": "/data/\ndump"}',
     "a string runs on past the end of its line: its closing '\"' is missing, or a line break inside it must be "
     "written \\n", None),
    # a Windows path: its backslashes are escapes, the last one swallows the closing quote
    ('{"task": "overflow_check", "dump_path": "D:\\dump\\"}', "Invalid \\escape",
     "a backslash in a JSON string starts an escape (\\n, \\t, \\\"): write a backslash itself as \\\\, or '/' "
     "in a Linux path"),
])
def test_pl001_says_what_is_missing_where_the_decoder_stops(lint, text, message, hint):
    """A new user's config missing its final '}' got "Expecting ','
    delimiter" on a line past the last. The message names what is not
    closed; the position stays the decoder's (SPEC); the closing hint is
    given only when the closers make valid JSON."""
    (found,) = lint(text)
    assert found.code == "PL001"
    assert found.message == f"not valid JSON: {message}"
    assert found.hint == hint
    with pytest.raises(json.JSONDecodeError) as err:
        json.loads(text)
    assert (found.line, found.column) == (err.value.lineno, err.value.colno)
    if hint and hint.startswith("add "):
        json.loads(text.rstrip() + hint.split("'")[1])


def test_runtime_context_refuses_what_probe_runtime_cannot_run():
    from msprobe_lint.lint.config_view import ConfigView
    from msprobe_lint.lint.context import Context, Fact
    from msprobe_lint.lint.rules.levels import task_not_available

    runtime = Context(facts={"device": Fact("CPU", "get_context")}, runtime=True)
    assert [f.code for f in task_not_available(ConfigView(config(task="statistics")), runtime)] == ["PL205"]
    assert list(task_not_available(ConfigView(config()), runtime)) == []
    # issue 35: probe_runtime runs L2 on the CPU backend (and Ascend), not on GPU
    assert list(task_not_available(ConfigView(config(level="L2")), runtime)) == []
    unknown = Context(facts={}, runtime=True)  # probe run, before the job starts: the process decides
    assert list(task_not_available(ConfigView(config(level="L2")), unknown)) == []
    gpu = Context(facts={"device": Fact("GPU", "get_context")}, runtime=True)
    (found,) = task_not_available(ConfigView(config(level="L2")), gpu)
    assert found.code == "PL205" and "CPU backend and on Ascend, not on GPU" in found.message


def test_runtime_context_sends_a_graph_mode_config_to_l2():
    """Issue 34 kept PL201's fix/hint from sending a graph-mode script to L2
    under probe run, which PL205 refused there; since issue 35 probe_runtime
    runs L2 on the CPU backend, so the fix is L2 again, and PL202 (jit_level
    O2, msprobe's L2 on Ascend) does not apply to it there."""
    from msprobe_lint.lint.config_view import ConfigView
    from msprobe_lint.lint.context import Context, Fact
    from msprobe_lint.lint.rules.levels import l2_needs_o2, level_not_allowed

    facts = {"device": Fact("CPU", "get_context"), "mode": Fact("graph", "get_context"),
             "jit_level": Fact("O0", "get_context")}
    for level in ("L1", "L0", "mix"):
        (found,) = level_not_allowed(ConfigView(config(level=level)), Context(facts=facts, runtime=True))
        assert found.fix is not None and found.fix.ops[0][2] == "\"L2\"", found
        assert "probe_runtime checks static graph at L2" in found.hint
    (outside,) = level_not_allowed(ConfigView(config(level="L1")), Context(facts=facts))
    assert outside.fix is not None and '"L2"' in outside.hint  # msprobe itself: L2 in static graph
    assert list(l2_needs_o2(ConfigView(config(level="L2")), Context(facts=facts, runtime=True))) == []
    (o2,) = l2_needs_o2(ConfigView(config(level="L2")), Context(facts=facts))
    assert o2.code == "PL202" and "Ascend" in o2.hint
    ascend = dict(facts, device=Fact("Ascend", "get_context"))
    assert [f.code for f in l2_needs_o2(ConfigView(config(level="L2")), Context(facts=ascend, runtime=True))] \
        == ["PL202"]


def test_json_nested_deeper_than_the_linter_reads_is_no_syntax_error(lint):
    """Issue 34: JSON nested ~990 deep, valid for json.loads, was reported
    "not valid JSON"; it is a limit of the reader, and the message names it."""
    import json
    import sys

    depth = sys.getrecursionlimit() + 10
    text = '{"task": "overflow_check", "x": ' + "[" * depth + "]" * depth + "}"
    (found,) = lint(text)
    assert found.code == "PL001" and "not valid JSON" not in found.message
    assert found.message.startswith(f"nested {depth + 1} levels deep, deeper than probe lint reads (about ")
    assert "this is not a syntax error" in found.message
    assert text[found.column - 1] == "["
    shallow = '{"x": ' + "[" * 50 + "]" * 50 + "}"
    json.loads(shallow)
    assert [d.code for d in lint(shallow)] != ["PL001"]


@pytest.mark.parametrize("codec, name", [
    ("utf-16", "UTF-16 (little-endian, with a byte-order mark)"), ("utf-16-le", "UTF-16 (little-endian)"),
    ("utf-16-be", "UTF-16 (big-endian)"), ("utf-32", "UTF-32 (little-endian, with a byte-order mark)"),
    ("utf-32-be", "UTF-32 (big-endian)"), ("utf-32-le", "UTF-32 (little-endian)"),
])
def test_a_utf16_or_utf32_file_is_named_as_such(lint, codec, name):
    """Issue 34: Notepad's "Unicode" (UTF-16) got "not valid UTF-8: byte
    0xff" or "Expecting property name"."""
    (found,) = lint('{"task": "overflow_check", "dump_path": "/d", "level": "L1"}'.encode(codec))
    assert found.code == "PL004" and found.message == f"the file is {name}, not UTF-8 as an msprobe config must be"
    assert found.hint.startswith("save it as UTF-8") and f"iconv -f {name.split()[0]} -t UTF-8" in found.hint


def test_the_text_report_quotes_no_utf16_noise(tmp_path):
    from conftest import run_probe

    (tmp_path / "config.json").write_bytes('{"task": "overflow_check"}'.encode("utf-16"))
    proc = run_probe("lint", "--isolated", "config.json", cwd=tmp_path)
    assert proc.stdout.splitlines()[1].startswith("     = help: save it as UTF-8"), proc.stdout


def test_a_duplicate_key_is_underlined_whole_and_its_first_place_named(lint):
    """Issue 34: PL002 underlined one character and did not say where the
    first occurrence is."""
    text = '{"task": "overflow_check",\n "dump_path": "/d", "level": "L1",\n "dump_path": "/e", "dump_path": "/f"}'
    second, third = [d for d in lint(text) if d.code == "PL002"]
    assert (second.line, second.column, second.end_line, second.end_column) == (3, 2, 3, 13)
    assert (third.line, third.column, third.end_column) == (3, 21, 32)
    for found in (second, third):
        assert found.message == ("duplicate key 'dump_path' (first at line 2 col 2): json.load keeps only the "
                                 "last value")


def test_json_nested_too_deep_and_never_closed_is_a_syntax_error(lint):
    """A file of 100000 '[' never closed is too deep for the reader and
    also not valid JSON: the message must not say it is no syntax error."""
    text = "[" * 100000
    (found,) = lint(text)
    assert found.code == "PL001" and "this is not a syntax error" not in found.message
    assert found.message.startswith("not valid JSON: the file ends with 100000 array(s) or object(s) never closed")
    assert "nested 100000 levels deep" in found.message
    assert (found.line, found.column) == (1, 100001)
    for text, said in (("[" * 100000 + "]" * 100001, "']' closes nothing"),
                       ("[" * 100000 + "}" * 100000, "'}' closes an array it does not match")):
        (found,) = lint(text)
        assert found.message.startswith(f"not valid JSON: {said}; it is also nested"), found.message
    (found,) = lint("[" * 100000 + "]" * 100000)  # balanced: too deep for the reader, and valid
    assert found.message.endswith("this is not a syntax error")
