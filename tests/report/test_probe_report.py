"""`probe report`: msprobe_lint/report/ on the dumps in tests/data/report/
(``ours``: hand-written, probe_runtime's layout with overflow.json;
``msprobe``: hand-written, msprobe's layout without it; ``msprobe-l1`` and
``msprobe-l0``: written by msprobe 8.1.2 itself, see the README there), on
empty, missing, truncated and malformed dump paths."""
from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from msprobe_lint.report import main
from msprobe_lint.report.command import summarise
from probe_format.layout import direction_of

from conftest import as_nobody, run_probe

DATA = Path(__file__).parents[1] / "data" / "report"


def report(path, fmt="text", *flags):
    out, err = io.StringIO(), io.StringIO()
    status = main(str(path), fmt, out=out, err=err, show_all="--all" in flags)
    return status, out.getvalue(), err.getvalue()


def strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"non-strict JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def test_ours_in_execution_order_with_origin_first():
    status, out, err = report(DATA / "ours")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("step0/rank1")
    assert lines[1].split() == ["ORIGIN", "Functional.exp.3", "API", "forward", "/work/job/train.py:31"]
    assert "output[0]" in lines[2] and "Max=inf" in lines[2] and "Min=0.3679" in lines[2]
    assert lines[3].split()[:4] == ["carried", "Tensor.__sub__.7", "API", "forward"]
    assert any(line.split()[:4] == ["carried", "Functional.exp.3", "API", "backward"] for line in lines)
    assert "Max=nan" in out
    assert lines[-1] == ("4 records in 2 step/rank folders. Overflow started in step0/rank1: Functional.exp.3.forward "
                         "(API, forward) at /work/job/train.py:31.")
    # the later step is counted, not shown; --all shows it
    assert lines[-4:-2] == ["Later steps, counted (--all shows their records):",
                            "  step1: 1 record in 1 folder, rank 1"]
    assert "step1/rank1" not in out and "Min=-inf" not in out
    status, every, _ = report(DATA / "ours", "text", "--all")
    assert status == 0 and every.index("step0/rank1") < every.index("step1/rank1") and "Min=-inf" in every
    assert every.splitlines()[-1] == lines[-1] and "Later steps" not in every


def test_a_later_step_whose_overflow_started_there_says_so(tmp_path):
    """A hunt's finding: a loss scale that overflowed in every step gave
    "step1: 10 records in 1 folder" for each later step, which reads as
    carried inf/nan; each step had started a new overflow. The step's
    first origin is named in the text, the JSON and the HTML page."""
    dump = tmp_path / "ours"
    shutil.copytree(DATA / "ours", dump)
    marks = dump / "step1" / "rank1" / "overflow.json"
    status, out, _ = report(dump)
    assert status == 0 and "  step1: 1 record in 1 folder, rank 1" in out.splitlines()  # carried only: no name
    assert [s["origin"] for s in strict_json(report(dump, "json")[1])["steps"]] == ["Functional.exp.3.forward", None]
    marks.write_text(json.dumps([dict(json.loads(marks.read_text())[0], origin=True)]))
    status, out, _ = report(dump)
    assert status == 0 and ("  step1: 1 record in 1 folder, rank 1; an overflow started there too: "
                            "Mint.matmul.0.forward") in out.splitlines()
    assert [s["origin"] for s in strict_json(report(dump, "json")[1])["steps"]][1] == "Mint.matmul.0.forward"
    assert "<td class=\"left\">Mint.matmul.0.forward</td>" in report(dump, "html")[1]


def test_msprobe_layout_origin_unknown_where_from_stack():
    status, out, _ = report(DATA / "msprobe")
    assert status == 0
    assert "step0/rank " in out  # not distributed: `rank` with no number
    record = out.splitlines()[1].split()
    assert record == ["?", "Functional.exp.3", "API", "forward", "/work/train.py:57"]  # user frame, not site-packages
    assert "where it started is not known" in out.splitlines()[-1]


def test_a_stack_json_cut_short_is_said_and_hides_no_record(tmp_path):
    """A hunt's finding (last stop's notes): a stack.json cut short made
    every file:line unknown without a word. It is a warning now; the folder
    is not named as one whose records may be missing."""
    shutil.copytree(DATA / "msprobe", tmp_path / "m")
    stack = tmp_path / "m" / "step0" / "rank" / "stack.json"
    stack.write_bytes(stack.read_bytes()[:50])
    status, out, err = report(tmp_path / "m")
    assert status == 0
    assert err.startswith(f"probe: warning: {stack}: not read (not valid JSON") and "file:line are not known" in err
    assert out.splitlines()[1].split() == ["?", "Functional.exp.3", "API", "forward", "file:line", "unknown"]
    assert "Not read" not in out.splitlines()[-1]


def test_a_dump_file_that_is_a_directory_is_no_all_clear(tmp_path):
    """A hunt's finding (last stop's notes): rank0/dump.json as a folder,
    nothing else there, gave "no dump found ... nothing overflowed". It is
    a warning and exit 2 (nothing could be read); beside a readable rank the
    report goes on and says the folder was not read."""
    (tmp_path / "step0" / "rank0" / "dump.json").mkdir(parents=True)
    status, out, err = report(tmp_path)
    assert status == 2 and out == ""
    assert f"probe: warning: {tmp_path / 'step0' / 'rank0' / 'dump.json'}: a directory, not a dump file" in err
    assert "nothing overflowed" not in err
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "step0" / "rank1")
    status, out, err = report(tmp_path)
    assert status == 0 and "a directory, not a dump file" in err
    assert "Not read (see the warnings): step0/rank0" in out.splitlines()[-1], out
    # a review's finding: such a folder above the step folders hid every dump below it
    (tmp_path / "dump.json").mkdir()
    status, out, err = report(tmp_path)
    assert status == 0 and "Overflow started in step0/rank1" in out.splitlines()[-1], (out, err)
    assert f"{tmp_path / 'dump.json'}: a directory, not a dump file" in err


# -- dumps msprobe 8.1.2 itself wrote (tests/data/report/make-real-dumps.sh) ----------
MSPROBE_L1 = ["Functional.exp.0.forward", "Tensor.to.0.forward", "Tensor.__sub__.0.forward",
              "Functional.square.0.forward", "Functional.shape.0.forward", "Functional.square.0.backward",
              "Tensor.__sub__.0.backward", "Tensor.to.0.backward", "Functional.exp.0.backward"]
MSPROBE_L0 = ["Cell.block.act.Scale.forward.0", "Cell.block.Block.forward.0", "Cell.head.Dense.forward.0",
              "Cell.head.Dense.parameters_grad", "Cell.head.Dense.backward.0", "Cell.block.act.Scale.backward.0",
              "Cell.block.fc.Dense.parameters_grad", "Cell.block.Block.backward.0", "Cell.block.fc.Dense.backward.0"]


@pytest.mark.parametrize("folder, names", [("msprobe-l1", MSPROBE_L1), ("msprobe-l0", MSPROBE_L0)])
def test_dumps_written_by_msprobe_itself(folder, names):
    """msprobe's overflow_check dumps (no overflow.json): every dump.json entry
    in file order (msprobe's detection order), origin unknown, the user's
    file:line from msprobe's stack.json (its frames are not innermost-first and
    include msprobe's and MindSpore's own), the offending statistics."""
    status, out, err = report(DATA / folder)
    assert status == 0 and err == ""
    data = strict_json(report(DATA / folder, "json")[1])
    assert [r["name"] for r in data["records"]] == names
    assert all(r["origin"] is None and (r["step"], r["rank"]) == (0, None) for r in data["records"])
    first = data["records"][0]
    assert first["where"].endswith("tools/make_dumps.py:47" if folder == "msprobe-l1" else "tools/make_dumps.py:57")
    assert "site-packages" not in json.dumps([r["where"] for r in data["records"]])
    assert first["tensors"][0]["where"] == "output[0]" and first["tensors"][0]["Max"] == "inf"
    assert data["started"] is None
    lines = out.splitlines()
    assert lines[0].startswith("step0/rank ")
    assert lines[1].split()[:4] == ["?", names[0].replace(".forward", ""), "Cell" if "l0" in folder else "API",
                                    "forward"]
    assert f"First recorded overflow in step0/rank: {names[0]}" in lines[-1]
    assert "where it started is not known" in lines[-1]


def test_msprobe_l0_parameter_gradients():
    data = strict_json(report(DATA / "msprobe-l0", "json")[1])
    grads = {r["name"]: r for r in data["records"] if r["direction"] == "parameters_grad"}
    assert sorted(t["where"] for t in grads["Cell.block.fc.Dense.parameters_grad"]["tensors"]) == ["bias[0]",
                                                                                                  "weight[0]"]


def test_json_is_strict():
    status, out, _ = report(DATA / "ours", "json")
    assert status == 0
    data = strict_json(out)
    assert [r["name"] for r in data["records"]][:2] == ["Functional.exp.3.forward", "Tensor.__sub__.7.forward"]
    first = data["records"][0]
    assert (first["step"], first["rank"], first["origin"], first["direction"], first["kind"]) == (0, 1, True,
                                                                                               "forward", "API")
    assert first["tensors"] == [{"where": "output[0]", "dtype": "Float32", "shape": [2, 4], "Max": "inf",
                                 "Min": 0.3679, "Mean": "inf", "Norm": "inf", "nonfinite": ["Max", "Mean", "Norm"]}]
    assert data["started"]["name"] == "Functional.exp.3.forward"
    assert '"nan"' in out and "NaN" not in out and "Infinity" not in out
    out = report(DATA / "ours", "json", "--all")[1]
    assert "-inf" in strict_json(out)["records"][-1]["tensors"][0].values()
    assert "NaN" not in out and "Infinity" not in out


def test_started_is_lowest_rank_of_earliest_step(tmp_path):
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "step2" / "rank0")
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "step1" / "rank3")
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "step1" / "rank10")
    summary, status, _ = summarise(str(tmp_path))
    assert status == 0 and [s.step for s in summary.steps] == [1, 2]
    assert [list(g.ranks) for s in summary.steps for g in s.groups] == [[3, 10], [0]]
    assert (summary.start.record.step, summary.start.rank, summary.also) == (1, 3, [10])
    status, out, _ = report(tmp_path, "text", "--all")
    assert out.splitlines()[0].startswith("step1/ranks 3, 10  (2 ranks with the same records; statistics of rank 3")
    assert out.rstrip().endswith("It also started on its own on rank 10.")


def test_accepts_a_step_or_rank_folder(tmp_path):
    assert report(DATA / "ours" / "step1")[1].splitlines()[0].startswith("step1/rank1")
    assert report(DATA / "ours" / "step0" / "rank1")[1].splitlines()[0].startswith("step0/rank1")
    # a hunt's finding: a step folder in the rank-first nesting (rank1/step0) was said to be of a job that
    # was not distributed ("step0/rank", JSON rank null)
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "rank1" / "step0")
    status, out, _ = report(tmp_path / "rank1" / "step0")
    assert status == 0 and out.splitlines()[0].startswith("step0/rank1"), out
    assert "Overflow started in step0/rank1: Functional.exp.3.forward" in out.splitlines()[-1]
    assert strict_json(report(tmp_path / "rank1" / "step0", "json")[1])["started"]["rank"] == 1


def test_a_second_folder_of_a_rank_answers_when_the_first_names_no_origin(tmp_path):
    """msprobe's graph/ and pynative/ split gives a step and rank two
    folders. A hunt's finding: only the first (graph/) counted, so its
    carried kernel record hid pynative/'s origin ("where it started is not
    known"). When both mark an origin the first still answers (their order
    is not recorded)."""
    shutil.copytree(DATA / "ours" / "step1" / "rank1", tmp_path / "graph" / "step1" / "rank1")  # carried only
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "pynative" / "step1" / "rank1")  # an origin
    status, out, _ = report(tmp_path)
    assert status == 0
    assert "Overflow started in step1/rank1: Functional.exp.3.forward" in out.splitlines()[-1], out
    summary, _, _ = summarise(str(tmp_path))
    assert summary.start.how == "origin" and summary.start.record.folder.endswith("pynative/step1/rank1")
    shutil.rmtree(tmp_path / "graph")
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "graph" / "step1" / "rank1")
    shutil.copytree(DATA / "ours" / "step1" / "rank1", tmp_path / "pynative" / "step1" / "rank1",
                    dirs_exist_ok=True)  # now graph/ has the origin, pynative/ only a carried record
    for name in ("overflow.json", "dump.json"):
        (tmp_path / "pynative" / "step1" / "rank1" / name).write_bytes(
            (DATA / "ours" / "step1" / "rank1" / name).read_bytes())
    summary, _, _ = summarise(str(tmp_path))
    assert summary.start.record.folder.endswith("graph/step1/rank1")


def test_empty_dump_path(tmp_path):
    status, out, err = report(tmp_path)
    assert status == 1 and out == "" and "no dump found" in err
    data = strict_json(report(tmp_path, "json")[1])
    assert data["records"] == [] and data["summary"]["status"] == 1


def test_a_dump_below_the_dump_path_is_named(tmp_path, monkeypatch):
    """A hunt's finding: `probe report parent` of parent/run1/step1/rank0
    said "no dump found ... nothing overflowed, or the job wrote
    elsewhere". It names the dumps below (exit 1 still: nothing reported)
    and the command to run; the search is bounded (depth, folders, count),
    skips hidden folders and never follows a link back up (a loop ends)."""
    from msprobe_lint.report import discover

    parent = tmp_path / "parent"
    shutil.copytree(DATA / "multirank" / "dp-allreduce" / "step1", parent / "run1" / "step1")
    status, out, err = report(parent)
    assert status == 1 and out == ""
    assert err == (f"probe: note: {parent}: no dump in this folder itself (no step*/rank*/dump.json or "
                   f"overflow.json); found a dump below it: {parent / 'run1'} (run `probe report "
                   f"{parent / 'run1'}`)\n"), err
    data = strict_json(report(parent, "json")[1])
    assert data["summary"]["status"] == 1 and data["summary"]["message"] == err[len("probe: note: "):-1]
    assert report(parent / "run1")[0] == 0  # what it says to run reports the dump
    # several, nearest first (graph/, rank-first, a bare rank folder), hidden folders not searched; a bound
    shutil.copytree(DATA / "ours" / "step0", parent / "a b" / "graph" / "step0")
    shutil.copytree(DATA / "msprobe" / "step0" / "rank", parent / "run2" / "x" / "rank")
    shutil.copytree(DATA / "ours" / "step1" / "rank1", parent / "run3" / "rank1" / "step1")
    shutil.copytree(DATA / "ours" / "step1", parent / ".hidden" / "step1")
    status, _, err = report(parent)
    assert status == 1 and err == (
        f"probe: note: {parent}: no dump in this folder itself (no step*/rank*/dump.json or overflow.json); "
        f"found dumps below it: {parent / 'run1'}, {parent / 'run2' / 'x'}, {parent / 'run3'}, {parent / 'a b'} "
        f"(run `probe report` on one of them, e.g. `probe report {parent / 'run1'}`)\n"), err  # nearest first
    monkeypatch.setattr(discover, "BELOW_FOUND", 1)
    assert report(parent)[2].endswith(f"below it: {parent / 'run1'}, and maybe more (the search below is "
                                      f"bounded) (run `probe report {parent / 'run1'}`)\n")
    shutil.copytree(parent / "a b", tmp_path / "quoted" / "a b")  # a name with a space is quoted to run
    assert report(tmp_path / "quoted")[2].endswith(f"(run `probe report '{tmp_path / 'quoted' / 'a b'}'`)\n")
    assert report(tmp_path / "quoted" / "a b")[0] == 0
    # too deep, or past the folders listed: not found; links back up (a loop) are not followed
    deep = tmp_path / "deep"
    shutil.copytree(DATA / "ours" / "step0", deep / "a" / "b" / "c" / "d" / "e" / "step0")  # rank1: 7 levels
    (deep / "a" / "up").symlink_to(deep, target_is_directory=True)
    (deep / "a" / "b" / "top").symlink_to(tmp_path, target_is_directory=True)
    status, _, err = report(deep)
    assert status == 1 and "no dump found" in err and "below it" not in err, err
    monkeypatch.setattr(discover, "BELOW_DEPTH", 7)
    assert f"found a dump below it: {deep / 'a' / 'b' / 'c' / 'd' / 'e'} (run" in report(deep)[2]
    monkeypatch.setattr(discover, "BELOW_FOLDERS", 5)
    assert "no dump found" in report(deep)[2]


def test_a_dump_path_probe_runtime_checked_and_left_empty_says_so(tmp_path):
    """A fresh user's finding: after a clean run the report said "no dump
    found ... or the job wrote elsewhere" though probe_runtime's marker shows
    it wrote right there. With a finished writer's marker it says the
    dump_path was checked and nothing overflowed (exit 1: no records)."""
    from msprobe_lint.live_writers import claim

    held = claim(str(tmp_path), "rank")
    assert held is not None
    held.release()  # the job ended: its marker stays, unlocked
    status, out, err = report(tmp_path)
    assert status == 1 and out == "", err
    assert "no overflow recorded: probe_runtime checked this dump_path (rank folder(s) rank, written by pid " in err
    assert "running:" not in err and ", ran: " in err  # a fresh user's finding: a finished job "running"
    assert "nothing overflowed in the steps it checked" in err and "no dump found" not in err


def test_the_runs_own_all_clear_is_quoted_when_the_dump_is_empty(tmp_path):
    """A hunt's finding: a run whose all-clear said an L0 Cell's -inf was
    taken for a mask (not recorded) left an empty dump, and the report
    said only "found nothing". The debugger keeps its all-clear in its
    marker (``Claim.note``); the report quotes it, per rank folder."""
    from msprobe_lint.live_writers import claim, read_writers

    held = [claim(str(tmp_path), rank) for rank in ("rank0", "rank1")]
    assert all(h is not None for h in held)
    said = "probe_runtime: no overflow found in 3 checked step(s); dump_path: x; 1 Cell(s) returned -inf only"
    held[0].note(said)
    held[1].note(said.replace("3 checked", "2 checked"))
    for h in held:
        h.release()
    h.note("after release: not written")
    assert [w.summary[:40] for w in read_writers(str(tmp_path))] == [said[:40], said[:40].replace("3", "2")]
    status, out, err = report(tmp_path)
    assert status == 1 and out == "", err
    assert f"its last word, per rank folder: rank0: {said} | rank1: " in err, err
    assert "2 checked step(s)" in err and "after release" not in err


def test_missing_and_not_a_folder(tmp_path):
    status, _, err = report(tmp_path / "nope")
    assert status == 2 and "no such file or directory" in err
    (tmp_path / "file").write_text("x")
    assert report(tmp_path / "file")[0] == 2
    # JSON on stdout says why, and so does stderr, as for text (a fresh user's finding: `-f json | jq` hid it)
    status, out, err = report(tmp_path / "nope", "json")
    assert status == 2 and strict_json(out)["summary"]["message"].endswith("nope: no such file or directory")
    assert err == f"probe: error: {tmp_path / 'nope'}: no such file or directory\n"
    assert report(tmp_path, "json")[2] == ""  # no dump found: a note, in the JSON only


def test_a_soft_link_loop_as_the_dump_path_is_said_to_be_one(tmp_path):
    """A hunt's finding: ``probe report`` on a soft link loop said "no such
    file or directory" (the link is there: the user looked for a typo)."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for path, where in ((tmp_path / "a", "is"), (tmp_path / "a" / "step0", "goes through")):
        for fmt in ("text", "json", "html"):
            status, out, err = report(path, fmt)
            said = f"{path}: {where} a soft link loop ("
            assert status == 2 and err.startswith(f"probe: error: {said}") and "no such file" not in err, err
            assert "give the dump_path folder" in err and "Traceback" not in err
            if fmt == "json":
                assert strict_json(out)["summary"]["message"].startswith(said)
    proc = run_probe("report", str(tmp_path / "a"))
    assert proc.returncode == 2 and "is a soft link loop" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("force", [False, True])
def test_output_onto_a_soft_link_loop_is_refused_not_a_traceback(tmp_path, force):
    """A hunt's finding: ``-o LOOP --force`` was a RuntimeError traceback
    (Path.resolve), and without --force it "already exists". Refused
    before the dump is read; the links are left as they were."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for output, where in ((tmp_path / "a", "is"), (tmp_path / "a" / "r.txt", "goes through")):
        out, err = io.StringIO(), io.StringIO()
        assert main(str(DATA / "ours"), "text", out=out, err=err, output=str(output), force=force) == 2
        assert err.getvalue().startswith(f"probe: error: cannot write {output}: it {where} a soft link loop ("), \
            err.getvalue()
        assert out.getvalue() == "" and "step0/rank1" not in err.getvalue()
    assert os.readlink(tmp_path / "a") == "b" and os.readlink(tmp_path / "b") == "a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    proc = run_probe("report", str(DATA / "ours"), "-o", str(tmp_path / "a"), *(["--force"] if force else []))
    assert proc.returncode == 2 and "is a soft link loop" in proc.stderr and "Traceback" not in proc.stderr


def test_output_onto_a_dangling_soft_link_says_where_it_points(tmp_path):
    """``-o LINK`` whose target does not exist was said to "already
    exist"; it is refused, naming the target, and ``--force`` writes the
    report there (the link stays a link)."""
    (tmp_path / "away").mkdir()
    link = tmp_path / "report.txt"
    link.symlink_to(tmp_path / "away" / "r.txt")
    out, err = io.StringIO(), io.StringIO()
    assert main(str(DATA / "ours"), "text", out=out, err=err, output=str(link)) == 2
    assert err.getvalue().startswith(f"probe: error: {link} is a soft link to {tmp_path / 'away' / 'r.txt'}, which "
                                     "does not exist"), err.getvalue()
    assert not (tmp_path / "away" / "r.txt").exists() and link.is_symlink()
    assert main(str(DATA / "ours"), "text", out=io.StringIO(), err=io.StringIO(), output=str(link), force=True) == 0
    assert link.is_symlink() and "step0/rank" in (tmp_path / "away" / "r.txt").read_text()


def test_truncated_dump_and_overflow_json(tmp_path):
    """A job killed mid-run: both files cut off; what was written is shown."""
    rank = tmp_path / "step0" / "rank1"
    shutil.copytree(DATA / "ours" / "step0" / "rank1", rank)
    text = (rank / "dump.json").read_text()
    (rank / "dump.json").write_text(text[:text.index('"Tensor.__sub__.7.forward"') + 40])
    text = (rank / "overflow.json").read_text()
    (rank / "overflow.json").write_text(text[:text.index('"Tensor.__sub__.7.forward"') + 10])
    status, out, err = report(tmp_path)
    assert status == 0
    assert "ORIGIN   Functional.exp.3" in out and "Max=inf" in out
    assert "Tensor.__sub__" not in out
    assert "dump.json: truncated or malformed" in err and "overflow.json: truncated or malformed" in err
    assert "killed mid-run" in err


def test_an_overflow_json_cut_short_is_read_in_part_not_unread(tmp_path):
    """A fresh user cut a rank's overflow.json after its first record: the
    summary named that folder as the start and also as "Not read ... the
    overflow may have started there", which cannot both be true. Records
    lost from the start's own folder came after the start; a folder of
    another rank read in part may hide where the overflow started."""
    root = tmp_path / "dump"
    shutil.copytree(DATA / "ours" / "step0" / "rank1", root / "step0" / "rank1")
    records = root / "step0" / "rank1" / "overflow.json"
    text = records.read_text()
    records.write_text(text[:text.index('"Tensor.__sub__.7.forward"') + 10])
    status, out, err = report(root)
    assert status == 0, err
    summary = out.strip().splitlines()[-1]
    assert "Overflow started in step0/rank1: Functional.exp.3.forward" in summary
    assert "Its overflow.json was cut short after 1 record(s)" in summary
    assert "Not read" not in summary and "Read in part" not in summary
    assert "read the first 1 record(s)" in err
    # another rank's overflow.json cut short, its first record carried: it may hide an origin
    other = root / "step0" / "rank0"
    shutil.copytree(DATA / "ours" / "step0" / "rank1", other)
    (other / "overflow.json").write_text(text[:text.index('"Tensor.__sub__.7.forward"') + 10]
                                         .replace('"origin": true', '"origin": false'))
    records.write_text(text)
    summary = report(root)[1].strip().splitlines()[-1]
    assert "Overflow started in step0/rank1" in summary and "cut short after" not in summary
    assert "Read in part (a file cut short, see the warnings): step0/rank0; the overflow may have " \
           "started in the records lost there." in summary
    assert "Not read" not in summary
    # a review's finding: a start that is no marked origin can be moved by an origin among the lost records
    shutil.rmtree(other)
    records.write_text('[\n {"name": "Tensor.__sub__.7.forward", "origin": false, "where": "/work/job/train.py:32"},'
                       '\n {"name": "Functional.exp.3.forward", "origin": tr')
    summary = report(root)[1].strip().splitlines()[-1]
    assert "where it started is not known" in summary and "cut short after" not in summary, summary
    assert "Read in part (a file cut short, see the warnings): step0/rank1; the overflow may have started " \
           "in the records lost there." in summary


def test_a_dump_json_cut_short_is_read_in_part_too(tmp_path):
    """A hunt's finding: an msprobe dump (dump.json only) cut short after 4
    entries was warned "read the first 4 entries" and named "Not read" in
    the summary line after the 4 records shown."""
    root = tmp_path / "dump"
    shutil.copytree(DATA / "msprobe-l1", root)
    dump = root / "step0" / "rank" / "dump.json"
    dump.write_bytes(dump.read_bytes()[:3000])
    status, out, err = report(root)
    assert status == 0 and "read the first 4 entries" in err, err
    summary = out.strip().splitlines()[-1]
    assert "Not read" not in summary
    assert "Read in part (a file cut short, see the warnings): step0/rank;" in summary


def _tensors(folder: Path, *names: str) -> None:
    """``folder/dump_tensor_data`` with an (empty) ``.npy`` file per name:
    what the runtime's writer puts there first, before a record's dump.json
    and overflow.json."""
    data = folder / "dump_tensor_data"
    data.mkdir(parents=True, exist_ok=True)
    for name in names:
        (data / name).write_bytes(b"")


@pytest.mark.parametrize("tensors", [("Functional.exp.3.forward.output.0.npy", "Functional.exp.3.forward.input.0.npy"),
                                     ()])
@pytest.mark.parametrize("marker", [False, True])
def test_tensors_without_records_are_no_all_clear(tmp_path, tensors, marker):
    """A tester's finding: a full disk let the writer put a record's .npy
    files (or only their folder) and no dump.json or overflow.json; the
    report passed over the folder and said "found nothing: nothing
    overflowed", exit 1, "problems": []. It is a folder read in part: a
    warning, a problem in JSON, exit 2 and no all-clear, with or without
    the finished run's marker beside it."""
    dump = tmp_path / "dump"
    _tensors(dump / "step3" / "rank", *tensors)
    if marker:
        from msprobe_lint.live_writers import claim

        held = claim(str(dump), "rank")
        assert held is not None
        held.release()
    status, out, err = report(dump)
    assert status == 2 and out == "", err
    assert "nothing overflowed" not in err and "found nothing" not in err and "no dump found" not in err
    said = f"{dump / 'step3' / 'rank' / 'dump_tensor_data'}: " + (
        "2 tensor file(s) (Functional.exp.3.forward.input.0.npy, Functional.exp.3.forward.output.0.npy) and no "
        "dump.json or overflow.json beside it: not read whole; the records of these tensors were never written"
        if tensors else "empty, and no dump.json or overflow.json beside it: not read whole")
    assert f"probe: warning: {said}" in err, err
    assert "no overflow record could be read (see the warnings above). Records lost (tensors without their " \
           "records, see the warnings): step3/rank; the overflow may have started there." in err
    status, out, _ = report(dump, "json")
    result = strict_json(out)
    assert status == 2 and [p["path"] for p in result["problems"]] == [str(dump / "step3" / "rank" /
                                                                        "dump_tensor_data")]
    assert "Records lost" in result["summary"]["message"]
    # the rank folder itself, and the folder above the dump (the search below names it)
    assert report(dump / "step3" / "rank")[0] == 2
    status, _, err = report(tmp_path)
    assert status == 1 and f"found a dump below it: {dump} " in err, err


def test_a_stray_tensor_folder_does_not_hide_the_dump_below_it(tmp_path):
    """A review's finding: a folder holding dump_tensor_data became a rank
    folder and the walk stopped there, so a dump_tensor_data left in
    dump_path itself, beside the step folders, hid every record: "no
    overflow record could be read". The step folders are read; the stray
    tensors are still named."""
    dump = tmp_path / "dump"
    shutil.copytree(DATA / "ours", dump)
    _tensors(dump, "Functional.exp.3.forward.output.0.npy")
    status, out, err = report(dump)
    assert status == 0, err
    assert "Overflow started in step0/rank1: Functional.exp.3.forward" in out.strip().splitlines()[-1]
    assert f"{dump / 'dump_tensor_data'}: 1 tensor file(s)" in err, err


def test_an_earlier_step_with_tensors_only_is_named_beside_a_later_start(tmp_path):
    """A tester's finding: with step3's json files gone (its tensors kept)
    the report named step4 as where the overflow came in, with no word that
    step3 holds tensors it has no records for."""
    dump = tmp_path / "dump"
    shutil.copytree(DATA / "ours" / "step1", dump / "step4")
    _tensors(dump / "step3" / "rank1", "Functional.exp.3.forward.output.0.npy")
    _tensors(dump / "step5" / "rank1", "Functional.exp.9.forward.output.0.npy")  # after the start: not named
    status, out, err = report(dump)
    assert status == 0, err
    summary = out.strip().splitlines()[-1]
    assert "First recorded overflow in step4/rank1" in summary, summary
    assert summary.endswith("Records lost (tensors without their records, see the warnings): step3/rank1; the "
                            "overflow may have started there."), summary
    assert "Not read" not in summary and "step5" not in summary
    assert "step3/rank1/dump_tensor_data: 1 tensor file(s)" in err and "step5/rank1/dump_tensor_data" in err
    problems = strict_json(report(dump, "json")[1])["problems"]
    assert sorted(p["path"] for p in problems) == [str(dump / f"step{n}" / "rank1" / "dump_tensor_data")
                                                   for n in (3, 5)]


def test_tensors_of_no_record_beside_records_are_read_in_part(tmp_path):
    """A tester's finding: a disk that filled after the first record kept
    it and the next record's tensors; the report named the origin with no
    word that the rest was lost. Tensor files of no record in overflow.json
    are named; in the start's own folder (a marked origin) the records lost
    came after it, in another rank's folder the overflow may have started
    there."""
    dump = tmp_path / "dump"
    start = dump / "step0" / "rank1"
    shutil.copytree(DATA / "ours" / "step0" / "rank1", start)
    _tensors(start, "Functional.exp.3.forward.output.0.npy", "Tensor.__sub__.7.forward.input.0.npy",
             "Functional.exp.3.backward.output.0.npy", "Cell.lost.Dense.parameters_grad.weight.npy")
    status, out, err = report(dump)
    assert status == 0, err
    summary = out.strip().splitlines()[-1]
    assert "Overflow started in step0/rank1: Functional.exp.3.forward" in summary
    assert "Its dump_tensor_data holds tensors of records never written (see the warnings): the records lost came " \
           "later in that step on that rank." in summary, summary
    assert "Records lost" not in summary
    assert "dump_tensor_data: 1 tensor file(s) of no record in overflow.json " \
           "(Cell.lost.Dense.parameters_grad.weight.npy; 3 read): read in part" in err, err
    # every tensor a record of its own: nothing said
    (start / "dump_tensor_data" / "Cell.lost.Dense.parameters_grad.weight.npy").unlink()
    status, out, err = report(dump)
    assert status == 0 and "never written" not in out + err, err
    # another rank of the step lost records: the overflow may have started there
    other = dump / "step0" / "rank0"
    shutil.copytree(DATA / "ours" / "step1" / "rank1", other)
    _tensors(other, "Mint.matmul.0.forward.output.0.npy", "Functional.exp.0.forward.output.0.npy")
    summary = report(dump)[1].strip().splitlines()[-1]
    assert "Overflow started in step0/rank1" in summary and "Its dump_tensor_data" not in summary
    assert summary.endswith("Records lost (tensors without their records, see the warnings): step0/rank0; the "
                            "overflow may have started there."), summary


def test_truncated_dump_json_without_overflow_json(tmp_path):
    rank = tmp_path / "step0" / "rank"
    shutil.copytree(DATA / "msprobe" / "step0" / "rank", rank)
    (rank / "dump.json").write_text((rank / "dump.json").read_text()[:300])
    status, out, err = report(tmp_path)
    assert status == 2 and out == "" and "truncated" in err and "read the first 0 entries" in err
    data = strict_json(report(tmp_path, "json")[1])
    assert data["records"] == [] and data["problems"]


def test_overflow_records_without_dump_json(tmp_path):
    rank = tmp_path / "step0" / "rank0"
    rank.mkdir(parents=True)
    (rank / "overflow.json").write_text('[{"name": "Mint.exp.0.forward", "origin": true, "where": "t.py:3"}]')
    status, out, err = report(tmp_path)
    assert status == 0 and "ORIGIN   Mint.exp.0" in out and "no statistics in dump.json" in out
    assert err == f"probe: warning: {rank / 'dump.json'}: missing: the records of overflow.json have no statistics\n"
    assert strict_json(report(tmp_path, "json")[1])["problems"] == [
        {"path": str(rank / "dump.json"), "message": "missing: the records of overflow.json have no statistics"}]
    (rank / "overflow.json").write_text("[]")  # no records: nothing lacks statistics
    assert report(tmp_path) == (1, "", f"probe: note: {tmp_path}: the dumps hold no overflow records\n")


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to switch to nobody")
def test_unreadable_step_and_rank_folders_are_warnings(open_tmp):
    """A folder the user cannot enter (000: its dump.json cannot even be
    looked for), list (311) or search (644) is named in a warning; the
    readable folders are still reported (as the user nobody: root reads
    everything)."""
    shutil.copytree(DATA / "ours" / "step0" / "rank1", open_tmp / "step0" / "rank1")
    for folder, mode in (("step1", 0o000), ("step4/rank", 0o000), ("step5", 0o311), ("step6", 0o644)):
        (open_tmp / folder).mkdir(parents=True)
        os.chmod(open_tmp / folder, mode)
    got = as_nobody(lambda: [report(open_tmp), report(open_tmp, "json")[1]])
    assert isinstance(got, list), got
    (status, out, err), payload = got
    assert status == 0 and "Traceback" not in err
    assert "ORIGIN   Functional.exp.3" in out
    for folder in ("step1", "step4/rank", "step5", "step6"):
        assert f"probe: warning: {open_tmp / folder}: Permission denied\n" in err
    assert len(err.splitlines()) == 4
    problems = strict_json(payload)["problems"]
    assert sorted(p["path"] for p in problems) == [str(open_tmp / f) for f in ("step1", "step4/rank", "step5",
                                                                               "step6")]
    # nothing readable at all: no dump could be read (exit 2), not "no dump found"
    shutil.rmtree(open_tmp / "step0")
    status, out, err = as_nobody(lambda: report(open_tmp))
    assert status == 2 and out == "" and "no dump could be read" in err and "Permission denied" in err



def test_text_report_shows_control_characters_as_probe_lint_does(tmp_path):
    """Names and paths from a dump reach the terminal with their control
    characters (escapes, newlines) shown as ``?``, as `probe lint` shows a
    config's line: no colour change, no fake line."""
    root = tmp_path / "d\x1b[2Jump"
    rank = root / "step0" / "rank"
    rank.mkdir(parents=True)
    name = "Functional.a\x1b[31mRED\nfake line.0.forward\u202e"  # (U+202E: the rest of a line reversed)
    (rank / "overflow.json").write_text(json.dumps([{"name": name, "origin": True, "where": "t.py\r:1\x07"}]))
    status, out, err = report(root)
    assert status == 0
    for text in (out, err):
        assert not any(c in text for c in "\x1b\x07\r\u202e") and "\nfake line" not in text
    assert out.splitlines()[1].split()[:2] == ["ORIGIN", "Functional.a?[31mRED?fake"]
    assert out.splitlines()[1].split()[-2:] == ["t.py", ":1?"]
    assert "Overflow started in step0/rank: Functional.a?[31mRED?fake line.0.forward?" in out
    assert err.startswith(f"probe: warning: {tmp_path}/d?[2Jump/step0/rank/dump.json: missing") and err.count("\n") == 1
    data = strict_json(report(root, "json")[1])  # JSON keeps the data as it is (escaped by JSON itself)
    assert data["records"][0]["name"] == name


@pytest.mark.parametrize("content", ["", "garbage", "[1, 2]", '{"data": [1]}', "\x00\xff"])
def test_malformed_dump_is_a_message_not_a_traceback(tmp_path, content):
    rank = tmp_path / "step0" / "rank0"
    rank.mkdir(parents=True)
    (rank / "dump.json").write_text(content)
    (rank / "overflow.json").write_text(content)
    status, out, err = report(tmp_path)
    assert status == 2 and "Traceback" not in err and "no dump could be read" in err
    strict_json(report(tmp_path, "json")[1])


def test_direction_of():
    assert direction_of("Functional.exp.3.forward") == "forward"
    assert direction_of("Cell.net.fc1.Dense.backward.0") == "backward"
    assert direction_of("Cell.net.fc1.Dense.parameters_grad") == "parameters_grad"
    assert direction_of("odd") is None


def test_cli(tmp_path):
    proc = run_probe("report", str(DATA / "ours"), "--format", "json")
    assert proc.returncode == 0 and strict_json(proc.stdout)["summary"]["records"] == 4
    proc = run_probe("report", str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr



@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_output_file_only_for_a_report_that_did_not_fail(tmp_path, fmt):
    """--output: a missing or unreadable dump path (exit 2) writes no file in
    any format; an empty one (exit 1) writes what stdout would get (the JSON
    object or HTML page saying so; the text report has nothing)."""
    target = tmp_path / f"r.{fmt}"
    for bad in (tmp_path / "missing", DATA / "ours" / "step0" / "rank1" / "dump.json"):
        status = main(str(bad), fmt, out=io.StringIO(), err=(err := io.StringIO()), output=str(target))
        assert status == 2 and "probe: error:" in err.getvalue() and not target.exists()
    broken = tmp_path / "broken" / "step0" / "rank0"
    broken.mkdir(parents=True)
    (broken / "overflow.json").write_text("garbage")
    assert main(str(tmp_path / "broken"), fmt, out=io.StringIO(), err=io.StringIO(), output=str(target)) == 2
    assert not target.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    stdout = io.StringIO()
    assert main(str(empty), fmt, out=stdout, err=io.StringIO()) == 1
    assert main(str(empty), fmt, out=io.StringIO(), err=io.StringIO(), output=str(target)) == 1
    assert target.exists() == (fmt != "text")
    if target.exists():
        assert target.read_text(encoding="utf-8") == stdout.getvalue() and "no dump found" in stdout.getvalue()
    proc = run_probe("report", str(tmp_path / "missing"), "-f", fmt, "-o", str(tmp_path / "cli.out"))
    assert proc.returncode == 2 and not (tmp_path / "cli.out").exists() and "Traceback" not in proc.stderr


@pytest.mark.mindspore
def test_on_a_dump_written_by_the_runtime(tmp_path):
    """`probe run` a single-process job under probe_runtime, then report."""
    pytest.importorskip("mindspore")
    import json as _json
    (tmp_path / "train.py").write_text(
        "import mindspore as ms, numpy as np\n"
        "from mindspore import Tensor, ops\n"
        "from probe_runtime import PrecisionDebugger\n"
        "ms.set_context(mode=ms.PYNATIVE_MODE)\n"
        "debugger = PrecisionDebugger()\n"
        "for step in range(2):\n"
        "    debugger.start()\n"
        "    x = Tensor(np.array([1.0, 100.0 * step], np.float32))\n"
        "    y = ops.exp(x)\n"
        "    z = y * 0\n"
        "    debugger.stop()\n"
        "    debugger.step()\n")
    dump = tmp_path / "dump"
    (tmp_path / "config.json").write_text(_json.dumps({
        "task": "overflow_check", "dump_path": str(dump), "level": "L1", "overflow_check": {"overflow_nums": -1}}))
    proc = run_probe("run", "config.json", "--", "python", "train.py", cwd=tmp_path, env={"RANK_ID": "",
                                                                                        "PROBE_CONFIG": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, out, err = report(dump)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("step1/rank ")  # not distributed: `rank`; step 0 had no overflow
    assert lines[1].split() == ["ORIGIN", "Functional.exp.0", "API", "forward", f"{tmp_path / 'train.py'}:9"]
    assert "Max=inf" in lines[2] and "carried  Tensor.__mul__.0" in out
    assert lines[-1].endswith(f"Overflow started in step1/rank: Functional.exp.0.forward (API, forward) "
                              f"at {tmp_path / 'train.py'}:9.")
    data = strict_json(report(dump, "json")[1])
    assert data["started"]["step"] == 1 and data["started"]["rank"] is None


def test_entered_is_named_when_no_record_is_an_origin(tmp_path):
    """A step whose overflow came in (overflow.json ``entered``): the record
    line, the summary and the JSON name the entry point, not "where it
    started is not known"."""
    folder = tmp_path / "step2" / "rank"
    folder.mkdir(parents=True)
    stats = {"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2], "Max": float("inf"), "Min": 0.0,
             "Mean": float("inf"), "Norm": float("inf")}
    data = {"Primitive.Transpose.0.forward": {"input_args": [stats], "input_kwargs": {}, "output": [stats]}}
    (folder / "dump.json").write_text(json.dumps({"task": "overflow_check", "data": data}))
    message = ("non-finite input entered at the first checked call: input_args[0] of "
               "Primitive.Transpose.0.forward, made outside the checked window")
    entered = {"entry": "Primitive.Transpose.0.forward", "input": "input_args[0]", "source": "outside",
               "parameter": None, "at_start": False, "message": message}
    (folder / "overflow.json").write_text(json.dumps([
        {"name": "Primitive.Transpose.0.forward", "origin": False, "where": "train.py:3", "entered": entered}]))
    status, text, _ = report(tmp_path)
    assert f"           entered: {message}" in text
    assert f"Overflow entered in step2/rank: {message}." in text
    assert "not known" not in text
    payload = strict_json(report(tmp_path, "json")[1])
    assert payload["started"] is None
    assert payload["entered"]["entered"] == entered
    assert payload["records"][0]["entered"] == entered
    # a malformed entered object is ignored (no message): back to "not known"
    (folder / "overflow.json").write_text(json.dumps([
        {"name": "Primitive.Transpose.0.forward", "origin": False, "where": "train.py:3", "entered": {"x": 1}}]))
    assert "where it started is not known" in report(tmp_path)[1]


def test_summary_names_the_earliest_step_even_without_origin_or_entered(tmp_path):
    """A step with neither an origin nor ``entered`` before a step that has
    one: the summary names the earlier step (its first record), not the
    later step's entry point or origin."""
    stats = {"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2], "Max": float("inf"), "Min": 0.0,
             "Mean": float("inf"), "Norm": float("inf")}
    entered = {"entry": "Cell.fc.Dense.forward.0", "input": "input_args[0]", "source": "outside",
               "parameter": None, "at_start": False, "message": "non-finite input entered at the first checked Cell"}
    steps = {0: [{"name": "Cell.fc.Dense.parameters_grad", "origin": False, "where": "train.py:3"}],
             1: [{"name": "Cell.fc.Dense.forward.0", "origin": False, "where": "train.py:3", "entered": entered},
                 {"name": "Cell.fc.Dense.backward.0", "origin": True, "where": "train.py:3"}]}
    for step, items in steps.items():
        folder = tmp_path / f"step{step}" / "rank"
        folder.mkdir(parents=True)
        data = {item["name"]: {"input": [stats], "output": [stats]} for item in items}
        (folder / "dump.json").write_text(json.dumps({"task": "overflow_check", "data": data}))
        (folder / "overflow.json").write_text(json.dumps(items))
    payload = strict_json(report(tmp_path, "json")[1])
    line = payload["summary"]["message"]
    assert line.startswith("First recorded overflow in step0/rank: Cell.fc.Dense.parameters_grad"), line
    assert "where it started is not known" in line
    assert payload["started"] is None and payload["entered"] is None
    # the later step's origin is named when the earlier step has one too
    (tmp_path / "step0" / "rank" / "overflow.json").write_text(json.dumps(
        [{"name": "Cell.fc.Dense.parameters_grad", "origin": True, "where": "train.py:3"}]))
    line = strict_json(report(tmp_path, "json")[1])["summary"]["message"]
    assert line.startswith("Overflow started in step0/rank: Cell.fc.Dense.parameters_grad")


def test_a_sentinel_record_is_shown_with_what_held_inf_and_the_exact_step_after_it(tmp_path):
    """probe_runtime's sentinel checks write a record of kind ``sentinel``
    with no dump.json (no call named); the exact step after it has an
    origin. The report shows the sentinel's message, warns of no missing
    dump.json, and the summary names both."""
    message = ("inf/nan in gradient of fc.weight, returned by the gradient computation at train.py:9; sentinel "
               "checks name no call: exact L1 checks run from the next start() on")
    sentinel = tmp_path / "step3" / "rank"
    sentinel.mkdir(parents=True)
    (sentinel / "overflow.json").write_text(json.dumps([
        {"name": "sentinel", "origin": False, "where": "train.py:9", "kind": "sentinel", "step": 3, "rank": None,
         "nonfinite": ["gradient of fc.weight"], "message": message}]))
    exact = tmp_path / "step4" / "rank"
    exact.mkdir(parents=True)
    stats = {"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2], "Max": float("inf"), "Min": 0.0,
             "Mean": float("inf"), "Norm": float("inf")}
    finite = dict(stats, Max=1.0, Mean=0.5, Norm=1.0)
    data = {"Functional.exp.0.forward": {"input_args": [finite], "input_kwargs": {}, "output": [stats]}}
    (exact / "dump.json").write_text(json.dumps({"task": "overflow_check", "data": data}))
    (exact / "overflow.json").write_text(json.dumps(
        [{"name": "Functional.exp.0.forward", "origin": True, "where": "train.py:5"}]))
    status, out, err = report(tmp_path)
    assert status == 0 and err == ""                         # no "dump.json missing" for the sentinel's step
    assert f"  SENTINEL  train.py:9\n           {message}\n           held inf/nan: gradient of fc.weight\n" in out
    assert out.rstrip().endswith(f"Sentinel checks saw inf/nan in step3/rank: {message}. Then: Overflow started in "
                                 "step4/rank: Functional.exp.0.forward (API, forward) at train.py:5.")
    status, out, _ = report(tmp_path, "json")
    payload = strict_json(out)
    assert payload["records"][0]["sentinel"] == message and payload["records"][0]["kind"] == "sentinel"
    assert payload["records"][0]["nonfinite"] == ["gradient of fc.weight"]
    assert payload["records"][1]["sentinel"] is None
    assert payload["started"]["name"] == "Functional.exp.0.forward"  # the first step that names a call
    status, out, _ = report(tmp_path, "html")
    assert f"sentinel: {message}" in out


def test_records_that_name_no_call_outside_and_update(tmp_path):
    """probe_runtime's ``outside`` record (a gradient computation returned
    inf/nan that no checked Cell explains: the loss outside the model at
    L0) and ``update`` record (an optimizer step wrote inf/nan) have no
    dump.json entry; the report shows their message and the summary names
    them as where the overflow came from."""
    outside = ("inf/nan in forward output 0, returned by the gradient computation at train.py:20, and no checked "
               "Cell made it: the overflow lies outside the Cells given to start() (in the loss function, or other "
               "code outside the model): use level L1, or pass the loss Cell to start() too")
    folder = tmp_path / "step1" / "rank"
    folder.mkdir(parents=True)
    (folder / "overflow.json").write_text(json.dumps([
        {"name": "outside", "origin": False, "where": "train.py:20", "kind": "outside", "step": 1, "rank": None,
         "nonfinite": ["forward output 0"], "message": outside}]))
    status, out, err = report(tmp_path)
    assert status == 0 and err == ""                         # no "dump.json missing"
    assert f"  OUTSIDE  train.py:20\n           {outside}\n           held inf/nan: forward output 0\n" in out
    assert out.rstrip().endswith(f"Overflow outside the checked calls in step1/rank: {outside}.")
    payload = strict_json(report(tmp_path, "json")[1])
    assert payload["records"][0]["kind"] == "outside" and payload["records"][0]["message"] == outside
    assert payload["summary"]["message"].startswith("Overflow outside the checked calls in step1/rank")
    assert f"outside: {outside}" in report(tmp_path, "html")[1]

    update = ("Parameter fc.weight held inf/nan right after the optimizer step SGD at train.py:22, although the "
              "gradients it got were finite: the update made it")
    (folder / "overflow.json").write_text(json.dumps([
        {"name": "update", "origin": False, "where": "train.py:22", "kind": "update", "step": 1, "rank": None,
         "nonfinite": ["Parameter fc.weight"], "message": update}]))
    status, out, err = report(tmp_path)
    assert status == 0 and err == "" and f"  UPDATE  train.py:22\n           {update}\n" in out
    assert out.rstrip().endswith(f"Overflow made by an optimizer step in step1/rank: {update}.")


def test_a_record_found_by_a_replay_says_so(tmp_path):
    """Auto checks mark the records of a replayed gradient computation with
    ``replay`` (its file:line); the report shows it under the record."""
    folder = tmp_path / "step2" / "rank"
    folder.mkdir(parents=True)
    stats = {"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2], "Max": float("inf"), "Min": 0.0,
             "Mean": float("inf"), "Norm": float("inf")}
    finite = dict(stats, Max=1.0, Mean=0.5, Norm=1.0)
    (folder / "dump.json").write_text(json.dumps({"task": "overflow_check", "data": {
        "Functional.exp.0.forward": {"input_args": [finite], "input_kwargs": {}, "output": [stats]}}}))
    (folder / "overflow.json").write_text(json.dumps([
        {"name": "Functional.exp.0.forward", "origin": True, "where": "net.py:8", "kind": "forward", "step": 2,
         "rank": None, "replay": "train.py:31"}]))
    status, out, err = report(tmp_path)
    assert status == 0 and err == ""
    assert "  ORIGIN   Functional.exp.0  API  forward  net.py:8\n           found by running the gradient " \
           "computation at train.py:31 again (auto checks)\n" in out
    assert strict_json(report(tmp_path, "json")[1])["records"][0]["replay"] == "train.py:31"
    assert "found by running the gradient computation at train.py:31 again" in report(tmp_path, "html")[1]


@pytest.mark.parametrize("corrupt, said", [
    ("step0/rank1/overflow.json", True),  # the records of the start's own step: it may hide an earlier origin
    ("stepX", False),  # an empty folder that is no step folder: nothing unread
])
def test_an_unread_folder_up_to_the_start_is_named_in_the_summary(tmp_path, corrupt, said):
    """The summary names where the overflow started among what was read;
    a folder up to that step that could not be read may hold an earlier
    start, and the summary line says so (a later one cannot)."""
    shutil.copytree(DATA / "ours", tmp_path / "dump")
    root = tmp_path / "dump"
    target = root / corrupt
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("garbage") if target.suffix else target.mkdir()
    (root / "step9").mkdir()
    (root / "step9" / "rank1").mkdir()
    (root / "step9" / "rank1" / "overflow.json").write_text("garbage")  # after the start: never named
    status, out, err = report(root)
    last = out.splitlines()[-1]
    assert status == 0 and "step9" not in last
    # the overflow.json of the start's folder is not read; its dump.json entries are, without origin marks
    assert ("Without origin marks (overflow.json not read, see the warnings): step0/rank1; the overflow may have "
            "started there." in last) == said
    assert "Not read" not in last
    assert "step9/rank1/overflow.json" in err


@pytest.mark.parametrize("where", ["step0/rank1/overflow.json", "step0/rank1/new.json", "report.txt", "."])
def test_output_inside_the_dump_is_refused(tmp_path, where):
    """--output inside the dump being read is refused (exit 2), even with
    --force, and the dump's files stay as they were (as probe lint refuses
    an --output that is one of the files it lints)."""
    dump = tmp_path / "dump"
    shutil.copytree(DATA / "ours", dump)
    before = {p: p.read_bytes() for p in dump.rglob("*") if p.is_file()}
    target = dump / where
    proc = run_probe("report", str(dump), "-o", str(target), "--force")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is inside the dump being read" in proc.stderr
    assert {p: p.read_bytes() for p in dump.rglob("*") if p.is_file()} == before
    err = io.StringIO()
    assert main(str(dump), "json", out=io.StringIO(), err=err, output=str(target), force=True) == 2
    assert "inside the dump" in err.getvalue()
    # beside the dump is fine
    assert main(str(dump), "text", out=io.StringIO(), err=io.StringIO(), output=str(tmp_path / "r.txt")) == 0


HOLDER = """
import sys, time
from msprobe_lint.live_writers import claim
held = claim(sys.argv[1], sys.argv[2])
print("ready", flush=True)
time.sleep(120)
"""


def _hold(tmp_path, dump, rank_dir, **env):
    import subprocess
    import sys

    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MS_SCHED", "MASTER_", "SLURM", "PMIX",
                                                                         "TORCHELASTIC"))}
    environ.update(PYTHONPATH=str(Path(__file__).parents[2]), **env)
    proc = subprocess.Popen([sys.executable, str(script), str(dump), rank_dir], env=environ, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_report_says_a_dump_is_still_written_or_written_by_two_runs(tmp_path):
    """Markers of two runs in one dump_path (two jobs launched with one
    dump_path) and a rank folder still being written: warnings, the exit
    status stays the records'."""
    dump = tmp_path / "dump"
    shutil.copytree(DATA / "ours", dump)
    first = _hold(tmp_path, dump, "rank1", MS_SCHED_HOST="127.0.0.1", MS_SCHED_PORT="1")
    try:
        status, out, err = report(dump)
        assert status == 0 and "rank1 is still being written by pid" in err and "different runs" not in err
        # the marker is no folder left unread where the overflow may have started (a hunt's finding)
        last = out.strip().splitlines()[-1]
        assert ".probe-writer" not in last and "Still being written by a live run (see the warnings): rank1;" in last
        status, _, err = report(dump / "step0" / "rank1")
        assert status == 0 and "still being written" in err
    finally:
        first.kill()
        first.wait()
    second = _hold(tmp_path, dump, "rank0", MS_SCHED_HOST="127.0.0.1", MS_SCHED_PORT="2")
    second.kill()
    second.wait()
    status, out, err = report(dump)
    assert status == 0 and "still being written" not in err
    assert "written by 2 different runs (rank0 by pid" in err and "are mixed" in err
    status, out, _ = report(dump, "json")
    assert any("different runs" in p["message"] for p in json.loads(out)["problems"])


FULL = "cannot write the dump (OSError: [Errno 28] No space left on device)"


def _turned_off(dump: Path, rank_dir: str, step, reason: str = FULL) -> None:
    """A finished run's marker for ``rank_dir`` in ``dump`` saying its
    debugger turned detection off in ``step`` (what probe_runtime's
    ``Checker.turn_off`` keeps there)."""
    from msprobe_lint.live_writers import claim

    held = claim(str(dump), rank_dir)
    assert held is not None
    held.turned_off(reason, step)
    held.release()


def test_a_run_whose_detection_was_turned_off_is_no_all_clear(tmp_path):
    """A tester's finding: a full disk turned detection off (the runtime
    said so on stderr only) and the report said "probe_runtime checked this
    dump_path and found nothing: nothing overflowed", exit 1. The marker
    keeps the reason; with no record the report says so, exit 2."""
    dump = tmp_path / "dump"
    dump.mkdir()
    _turned_off(dump, "rank", 3)
    status, out, err = report(dump)
    assert status == 2 and out == "", err
    assert "nothing overflowed" not in err and "found nothing" not in err
    said = f"detection was turned off in rank (step 3): {FULL}"
    assert f"probe: warning: {dump / '.probe-writer-rank.lock'}: {said}; what it found from then on was not " \
           "written" in err, err
    assert f"probe: error: {dump}: no overflow record, and no all-clear: probe_runtime stopped checking. Detection " \
           f"was turned off in rank (step 3): {FULL}. What it found after that is not in this report; the overflow " \
           "may have started there." in err, err
    result = strict_json(report(dump, "json")[1])
    assert result["summary"]["status"] == 2 and result["summary"]["turned_off"] == [
        {"rank_dir": "rank", "step": 3, "reason": FULL}]
    assert [p["path"] for p in result["problems"]] == [str(dump / ".probe-writer-rank.lock")]
    # with the tensors the writer put first (what the tester's full disk left): both are said
    _tensors(dump / "step3" / "rank", "Primitive.MatMul.2.backward.output.1.npy")
    status, _, err = report(dump)
    assert status == 2 and "Records lost" in err and f"Detection was turned off in rank (step 3): {FULL}" in err


def test_detection_turned_off_is_said_beside_the_records(tmp_path):
    """A tester's finding: a disk that filled after the first record kept
    it, and the report named the origin with no word that the rest was
    never written. The summary says detection was turned off, and whether
    the overflow may have started in what was lost: not when the rank
    that stopped is the start's, in its step, after its marked origin."""
    dump = tmp_path / "dump"
    shutil.copytree(DATA / "ours", dump)
    _turned_off(dump, "rank1", 1)
    status, out, err = report(dump)
    assert status == 0, err
    summary = out.strip().splitlines()[-1]
    assert "records in 2 step/rank folders. Overflow started in step0/rank1: Functional.exp.3.forward" in summary
    assert summary.endswith(f"Detection was turned off in rank1 (step 1): {FULL}. What it found after that is not "
                            "in this report."), summary
    assert "Still being written" not in summary and "Not read" not in summary
    assert f"rank1.lock: detection was turned off in rank1 (step 1): {FULL}" in err
    # in the start's own step, after its marked origin: the records lost came later
    _turned_off(dump, "rank1", 0)
    assert report(dump)[1].strip().endswith("What it found after that is not in this report.")
    # another rank stopped in that step: its overflow may have started before the start named
    _turned_off(dump, "rank0", 0, "3 errors inside the tool")
    summary = report(dump)[1].strip().splitlines()[-1]
    assert summary.endswith(f"Detection was turned off in rank0 (step 0): 3 errors inside the tool; in rank1 (step "
                            f"0): {FULL}. What it found after that is not in this report; the overflow may have "
                            "started there."), summary


def _marker(dump: Path, rank_dir: str, started: str, job: str, **more) -> None:
    """A finished run's marker for ``rank_dir``, written as probe_runtime
    writes it (``started`` in UTC ISO 8601, ``job`` a launcher's id)."""
    (dump / f".probe-writer-{rank_dir}.lock").write_text(json.dumps(
        {"pid": 4242, "host": "node1", "started": started, "command": "python train.py", "rank_dir": rank_dir,
         "job": job, "job_source": "MS_SCHED_HOST/MS_SCHED_PORT", **more}))


def test_an_earlier_runs_turned_off_marker_is_not_the_dumps(tmp_path):
    """A review's finding: a run that turned detection off (a full disk)
    left its marker; the space freed and its step folders removed, a later
    run of another job wrote into the same dump_path under another rank
    folder, checked every step and found nothing. The report said "no
    all-clear: probe_runtime stopped checking", exit 2, of the earlier
    run's marker. It is warned about as an earlier run's; the summary and
    the exit status are the later run's. One run's ranks, started apart,
    are one run: its turned-off rank stays in the summary."""
    dump = tmp_path / "dump"
    dump.mkdir()
    off = {"turned_off": {"reason": FULL, "step": 3}}
    _marker(dump, "rank0", "2026-01-01T10:00:00Z", "msrun 10.0.0.1:8118", **off)
    _marker(dump, "rank", "2026-01-02T09:00:00Z", "msrun 10.0.0.1:8119",
            summary="probe_runtime: no overflow found in 5 checked step(s); dump_path: /d")
    status, out, err = report(dump)
    assert status == 1 and out == "", err
    assert "found nothing; its last word, per rank folder: rank: probe_runtime: no overflow found in 5" in err, err
    assert "no all-clear" not in err and "Detection was turned off" not in err
    assert f"rank0.lock: detection was turned off in rank0 (step 3): {FULL}; what it found from then on was not " \
           "written; an earlier run's marker (pid 4242 on host node1, started 2026-01-01T10:00:00Z, ran: python " \
           "train.py): another run wrote into this dump_path after it ended, and the summary is not about it" in err
    assert "written by 2 different runs" in err
    result = strict_json(report(dump, "json")[1])
    assert result["summary"]["turned_off"] == [] and result["summary"]["status"] == 1
    # with records: no word of it in the summary
    shutil.copytree(DATA / "ours", dump, dirs_exist_ok=True)
    status, out, err = report(dump)
    assert status == 0 and "Detection was turned off" not in out and "an earlier run's marker" in err, out
    # the same job's ranks started an hour apart: one run, its turned-off rank is the dump's
    _marker(dump, "rank", "2026-01-01T11:00:00Z", "msrun 10.0.0.1:8118")
    status, out, err = report(dump)
    assert status == 0 and "an earlier run" not in err, err
    assert out.strip().endswith(f"Detection was turned off in rank0 (step 3): {FULL}. What it found after that is "
                                "not in this report."), out


def test_a_live_run_that_turned_detection_off_is_not_still_writing(tmp_path):
    """A review's finding: a job whose debugger turned detection off goes
    on training, its marker held; the report warned that its rank folder
    "is still being written" and the summary said "Still being written by
    a live run ...: what it has not written yet is not in this report", as
    if the rest would come. It writes nothing more: only that detection
    was turned off is said, naming the process still running."""
    from msprobe_lint.live_writers import claim

    dump = tmp_path / "dump"
    shutil.copytree(DATA / "ours", dump)
    held = claim(str(dump), "rank1")
    assert held is not None
    try:
        held.turned_off(FULL, 2)
        status, out, err = report(dump)
        assert status == 0, err
        assert "still being written" not in err and "Still being written" not in out, out + err
        assert f"rank1.lock: detection was turned off in rank1 (step 2): {FULL}; what it found from then on was " \
               f"not written (its process still runs, unchecked: pid {os.getpid()} on host" in err, err
        assert out.strip().endswith(f"Detection was turned off in rank1 (step 2): {FULL}. What it found after that "
                                    "is not in this report."), out
        # with no record: no all-clear, and no "still being written" either
        empty = tmp_path / "empty"
        empty.mkdir()
        other = claim(str(empty), "rank")
        assert other is not None
        other.turned_off(FULL, 0)
        status, _, err = report(empty)
        assert status == 2 and "still being written" not in err and "no all-clear" in err, err
        other.release()
    finally:
        held.release()


@pytest.mark.parametrize("content", ["garbage", "[1, 2]", '{"name": "x"}', '["a"]', "[]"])
def test_an_unreadable_overflow_json_is_one_warning_and_dump_json_is_read(tmp_path, content):
    """One policy for an overflow.json that is not JSON, not a list, or a
    list with no record in it, beside a dump.json: said once as not read,
    the folder falls back to dump.json's entries, exit 0 with the warning
    (not 'no overflow.json' and 'not read' both, nor exit 2 for some)."""
    folder = tmp_path / "dump" / "step0" / "rank"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "msprobe" / "step0" / "rank" / "dump.json", folder)
    (folder / "overflow.json").write_text(content)
    status, out, err = report(tmp_path / "dump")
    assert status == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("probe: warning:")]
    assert len(warnings) == 1 and "overflow.json: not read (" in warnings[0]
    assert warnings[0].endswith("the records are dump.json's entries, without origin marks")
    assert "Functional.exp.3" in out and "Not read" not in out and "no overflow.json:" not in out
    status, out, _ = report(tmp_path / "dump", "json")
    assert status == 0 and len(json.loads(out)["problems"]) == 1


def test_a_truncated_overflow_json_with_no_record_beside_dump_json_is_one_warning(tmp_path):
    """overflow.json cut off before its first record (`[ {"name": "Primi`)
    beside an intact dump.json gave two warnings, one false ("not read (an
    empty list)"), and a summary naming the folder both "Without origin
    marks" and "Not read". The doc: one warning, "Without origin marks"."""
    root = tmp_path / "dump"
    shutil.copytree(DATA / "ours", root)
    (root / "step0" / "rank1" / "overflow.json").write_text('[\n {\n  "name": "Primi')
    status, out, err = report(root)
    assert status == 0, err
    warnings = [line for line in err.splitlines() if "step0/rank1/overflow.json" in line]
    assert len(warnings) == 1, err
    assert "not read (" in warnings[0] and "truncated" in warnings[0] and "empty list" not in warnings[0]
    assert warnings[0].endswith("the records are dump.json's entries, without origin marks")
    last = out.splitlines()[-1]
    assert "Without origin marks (overflow.json not read, see the warnings): step0/rank1" in last
    assert "Not read" not in last
    status, out, _ = report(root, "json")
    assert status == 0 and len([p for p in json.loads(out)["problems"] if "step0/rank1/overflow" in p["path"]]) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("name", ["overflow.json", "dump.json"])
def test_a_fifo_in_the_dump_is_a_warning_not_a_hang(tmp_path, name):
    """`probe report` hung forever on a FIFO named overflow.json (open
    blocks until a writer comes): it is not a regular file, said as any
    file that cannot be read."""
    folder = tmp_path / "dump" / "step0" / "rank0"
    folder.mkdir(parents=True)
    os.mkfifo(folder / name)
    proc = run_probe("report", str(tmp_path / "dump"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"{name}: not a regular file" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_empty_dump_path_is_refused_not_the_current_folder(tmp_path, fmt):
    """`probe report ""` (`probe report "$UNSET"`) reported the current
    folder; it is a usage error, as `probe lint ""` is."""
    shutil.copytree(DATA / "ours", tmp_path, dirs_exist_ok=True)  # a dump right here: it must not be read
    proc = run_probe("report", "", "--format", fmt, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "ORIGIN" not in proc.stdout and "Functional.exp" not in proc.stdout
    said = proc.stderr if fmt == "text" else json.loads(proc.stdout)["summary"]["message"]
    assert "empty DUMP_PATH" in said, (proc.stdout, proc.stderr)
    status, out, err = report("", fmt)
    assert status == 2 and "Functional.exp" not in out


def test_soft_linked_step_folders_are_followed_and_read_once(tmp_path):
    """A fresh user's finding: a step folder kept elsewhere and linked into
    the dump path was skipped in silence, and the report named a later step
    as where the overflow started. Links to folders are followed; a second
    way to a folder already read, and a link to nothing, are warnings."""
    elsewhere = tmp_path / "disk2" / "step0"
    shutil.copytree(DATA / "ours" / "step0", elsewhere)
    root = tmp_path / "dump"
    shutil.copytree(DATA / "ours" / "step1", root / "step1")
    (root / "step0").symlink_to(elsewhere, target_is_directory=True)
    status, out, err = report(root)
    assert status == 0 and err == "", err
    assert out.splitlines()[0].startswith("step0/rank1")
    assert "Overflow started in step0/rank1: Functional.exp.3.forward" in out.splitlines()[-1]
    # a second way to step0, a loop back to the dump path, a link to nothing
    (root / "step7").symlink_to(root / "step0", target_is_directory=True)
    (root / "step1" / "rank3").symlink_to(root, target_is_directory=True)
    (root / "step9").symlink_to(tmp_path / "gone", target_is_directory=True)
    status, out, err = report(root, "text", "--all")
    assert status == 0 and "Overflow started in step0/rank1" in out.splitlines()[-1]
    headers = [line.split()[0] for line in out.splitlines() if line.startswith("step")]
    assert headers == ["step0/rank1", "step1/rank1"], out
    assert sorted(err.splitlines()) == [
        f"probe: warning: {root / 'step1' / 'rank3'}: the same folder as {root} (a soft link): not read twice",
        f"probe: warning: {root / 'step7'}: the same folder as {root / 'step0'} (a soft link): not read twice",
        f"probe: warning: {root / 'step9'}: a soft link to {tmp_path / 'gone'} that cannot be followed "
        "(No such file or directory): not read"], err
    problems = strict_json(report(root, "json")[1])["problems"]
    assert sorted(p["path"] for p in problems) == [str(root / "step1" / "rank3"), str(root / "step7"),
                                                   str(root / "step9")]


def test_a_folder_almost_named_as_a_step_or_rank_that_holds_a_dump_is_named(tmp_path):
    """A fresh user's finding: stepX/rank0/dump.json and step1/rank-1/dump.json
    were skipped in silence and the report said "no dump found ... nothing
    overflowed". They are warnings now (exit 2: nothing could be read); a
    folder of that kind without a dump (MindSpore's rank_0 of a failed
    compile) says nothing."""
    for folder in ("stepX/rank0", "step1/rank-1"):
        shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / folder)
    (tmp_path / "rank_0" / "graph").mkdir(parents=True)
    status, out, err = report(tmp_path)
    assert status == 2 and out == "" and "no dump found" not in err
    assert sorted(line.split(": ")[2] for line in err.splitlines() if line.startswith("probe: warning")) == [
        str(tmp_path / "step1" / "rank-1"), str(tmp_path / "stepX")], err
    assert "holds a dump but is not named step{N} or rank{R}" in err and "rank_0" not in err
    shutil.copytree(DATA / "ours" / "step0", tmp_path / "step0")  # a readable step beside them: reported, warned
    status, out, err = report(tmp_path)
    assert status == 0 and out.startswith("step0/rank1") and err.count("probe: warning:") == 2


def test_folders_named_unlike_msprobe_are_not_read_as_steps(tmp_path):
    """A hunt's finding: step001 was read as step1 (two folders of one step
    and rank, one of them silently dropped), and a fullwidth step０ or a
    name ending in a line break as a step. msprobe writes ``step{N}`` with
    ASCII digits and no leading zeros; the others are named in a warning."""
    for folder in ("step001/rank0", "step\uff10/rank0", "step3\n/rank0", "step1/rank01"):
        shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / folder)
    shutil.copytree(DATA / "ours" / "step1" / "rank1", tmp_path / "step1" / "rank0")
    status, out, err = report(tmp_path)
    assert status == 0 and out.startswith("step1/rank0"), out
    assert "Not read (see the warnings): " in out.splitlines()[-1] and "step001" in out.splitlines()[-1], out
    warned = sorted(line.split(": ")[2] for line in err.splitlines() if line.startswith("probe: warning"))
    # (a line break in a name is shown as "?")
    assert warned == sorted(str(tmp_path / f) for f in ("step001", "step\uff10", "step3?", "step1/rank01")), err


def test_one_step_and_rank_in_both_nestings_is_read_once_step_first(tmp_path):
    """A hunt's finding: step1/rank1 and rank1/step1 both on disk were read
    twice in silence, as two groups titled step1/rank1, and the summary
    followed one of them. msprobe writes step{N}/rank{R}: that one is read,
    the other is a warning naming both, and the summary says it was not
    read (its records may differ), whichever copy holds the origin."""
    multi = DATA / "multirank" / "dp-allreduce" / "step1"
    for origin_first, (step_first, rank_first) in ((True, ("rank1", "rank0")), (False, ("rank0", "rank1"))):
        root = tmp_path / str(origin_first)
        shutil.copytree(multi / step_first, root / "step1" / "rank1")
        shutil.copytree(multi / rank_first, root / "rank1" / "step1")
        status, out, err = report(root)
        assert status == 0
        headers = [line for line in out.splitlines() if line.startswith("step")]
        assert headers == [f"step1/rank1  ({root / 'step1' / 'rank1'})"], out
        assert err == (f"probe: warning: {root / 'rank1' / 'step1'}: the same step and rank (step1/rank1) as "
                       f"{root / 'step1' / 'rank1'}, nested the other way round: not read "
                       f"({root / 'step1' / 'rank1'}, msprobe's step-first nesting, is read; move or remove one "
                       "of the two)\n"), err
        last = out.splitlines()[-1]
        assert last.startswith("4 records in 1 step/rank folder. " if origin_first else
                                "2 records in 1 step/rank folder. "), last
        assert ("Overflow started in step1/rank1: Functional.exp.0.forward" in last) == origin_first, last
        assert last.endswith("Not read (see the warnings): rank1/step1; the overflow may have started there."), last
        problems = strict_json(report(root, "json")[1])["problems"]
        assert [p["path"] for p in problems] == [str(root / "rank1" / "step1")]
    # the same nesting twice (a step folder inside its own step): the first by name is read
    root = tmp_path / "nested"
    shutil.copytree(multi / "rank1", root / "step1" / "rank1")
    shutil.copytree(multi / "rank0", root / "step1" / "step1" / "rank1")
    status, out, err = report(root)
    assert status == 0 and [line for line in out.splitlines() if line.startswith("step")] == [
        f"step1/rank1  ({root / 'step1' / 'rank1'})"], out
    assert err == (f"probe: warning: {root / 'step1' / 'step1' / 'rank1'}: the same step and rank (step1/rank1) "
                   f"as {root / 'step1' / 'rank1'}: not read ({root / 'step1' / 'rank1'}, the first by name, is "
                   "read; move or remove one of the two)\n"), err
    # msprobe's graph/ and pynative/ folders of one step and rank are two folders, both read, as before
    for mode in ("graph", "pynative"):
        shutil.copytree(multi / "rank1", tmp_path / "modes" / mode / "step1" / "rank1")
    status, out, err = report(tmp_path / "modes")
    assert status == 0 and err == "" and out.count("step1/rank1  (") == 2, out


def test_output_into_a_soft_linked_step_folder_is_refused(tmp_path):
    """A hunt's finding: ``--output`` into a step folder the dump reaches
    through a soft link (kept on another disk) was written, and with
    ``--force`` replaced that step's overflow.json. It is refused, by the
    path through the link or by its own, and nothing changes."""
    elsewhere = tmp_path / "disk2" / "step1"
    shutil.copytree(DATA / "ours" / "step1", elsewhere)
    root = tmp_path / "dump"
    shutil.copytree(DATA / "ours" / "step0", root / "step0")
    (root / "step1").symlink_to(elsewhere, target_is_directory=True)
    before = (elsewhere / "rank1" / "overflow.json").read_bytes()
    for target in (root / "step1" / "rank1" / "overflow.json", elsewhere / "rank1" / "overflow.json",
                   elsewhere / "report.txt"):
        err = io.StringIO()
        assert main(str(root), "text", out=io.StringIO(), err=err, output=str(target), force=True) == 2
        assert "a folder of the dump being read" in err.getvalue(), err.getvalue()
    assert (elsewhere / "rank1" / "overflow.json").read_bytes() == before
    assert not (elsewhere / "report.txt").exists()
    assert main(str(root), "text", out=io.StringIO(), err=io.StringIO(), output=str(tmp_path / "r.txt")) == 0


def test_output_onto_a_fifo_or_a_link_is_written_through_never_replaced(tmp_path):
    """A hunt's finding: ``-o /dev/stdout`` was refused as existing, and
    with ``--force`` a device, a FIFO or a soft link became a regular file
    (as root, ``-o /dev/null --force`` would replace the system's). A
    device or FIFO is written into; ``--force`` replaces a link's target."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    assert main(str(DATA / "ours"), "text", out=io.StringIO(), err=io.StringIO(), output=str(fifo)) == 0
    reader.join(timeout=60)
    assert got and got[0].startswith("step0/rank1") and fifo.is_fifo()
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old")
    link.symlink_to(real)
    assert main(str(DATA / "ours"), "text", out=io.StringIO(), err=io.StringIO(), output=str(link), force=True) == 0
    assert link.is_symlink() and real.read_text().startswith("step0/rank1")


def test_force_without_output_is_a_usage_error(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert main(str(DATA / "ours"), "text", out=out, err=err, force=True) == 2
    assert out.getvalue() == "" and "--force replaces an existing --output file" in err.getvalue()
    proc = run_probe("report", str(DATA / "ours"), "--force")
    assert proc.returncode == 2 and "goes with --output" in proc.stderr


def test_a_record_without_a_string_name_is_said_to_be_so(tmp_path):
    """A fresh user's finding: ``[{"name": 5}]`` was said to hold "none an
    object with a "name"", though it has one (not a string)."""
    rank = tmp_path / "step0" / "rank"
    rank.mkdir(parents=True)
    (rank / "overflow.json").write_text(json.dumps([{"name": 5}]))
    status, _, err = report(tmp_path)
    assert status == 2 and "none an object with a string \"name\"" in err, err
    (rank / "overflow.json").write_text(json.dumps([{"name": 5}, [], {"where": "x"},
                                                    {"name": "Functional.exp.0.forward", "origin": True}]))
    status, out, err = report(tmp_path)
    assert "record 0 has a \"name\" that is not a string (5); skipped" in err, err
    assert "record 1 is not an object; skipped" in err and "record 2 has no \"name\"; skipped" in err, err
    assert "Functional.exp.0.forward" in out


def test_a_likely_sender_whose_only_record_is_a_sentinel_finding(tmp_path):
    """A hunt's finding: rank 0 received inf/nan through an AllReduce and
    rank 1, silent for that call, had only a sentinel record (auto checks
    that could not name the call); following rank 1 as the likely sender
    hit an assertion (a traceback, exit 1) in every format."""
    for fmt in ("text", "json", "html"):
        status, out, err = report(DATA / "sentinel-sender", fmt)
        assert status == 0 and "Traceback" not in err, err
    status, out, _ = report(DATA / "sentinel-sender")
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("2 records in 2 step/rank folders. Overflow came in through AllReduce call 0"), summary
    assert "probably from rank 1" in out and "SENTINEL" in out


@pytest.mark.parametrize("fmt", ["text", "html", "json"])
def test_output_file_with_a_path_that_is_not_utf8(tmp_path, fmt):
    """A hunt's finding: a dump path with a byte that is not UTF-8 gave a
    traceback (UnicodeEncodeError) with --output in text and html, and no
    file; stdout already wrote it escaped."""
    root = os.path.join(os.fsencode(tmp_path), b"dump\xff")
    shutil.copytree(DATA / "ours", os.fsdecode(root))
    out = tmp_path / f"report.{fmt}"
    done = run_probe("report", os.fsdecode(root), "--format", fmt, "--output", str(out))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    text = out.read_text(encoding="utf-8")  # valid UTF-8, the odd byte escaped as on stdout
    assert "Overflow started in step0/rank1" in text or fmt == "json"
    assert "dump\\udcff" in text or "dump\\\\udcff" in text, text[:3000]


def test_a_damaged_folder_of_a_later_step_is_not_named_in_other_layouts(tmp_path):
    """A hunt's finding: with ranks first (rank0/step5) or msprobe's split
    by execution mode (graph/step7/rank1), a folder that could not be read
    in a step after the start's was named as a place the overflow may have
    started, and by its file. Only a step up to the start's is named, and
    as a folder."""
    for layout in ("rank0/step{}", "graph/step{}/rank0"):
        root = tmp_path / layout.split("/")[0] / "dump"
        first, later, earlier = (root / layout.format(n) for n in (1, 5, 0))
        shutil.copytree(DATA / "ours" / "step0" / "rank1", first)
        later.mkdir(parents=True)
        (later / "overflow.json").write_text("garbage")
        summary = report(root)[1].strip().splitlines()[-1]
        assert "Overflow started in step1/rank0" in summary and "Not read" not in summary, summary
        earlier.mkdir(parents=True)
        (earlier / "overflow.json").write_text("garbage")
        summary = report(root)[1].strip().splitlines()[-1]
        named = os.path.relpath(earlier, root)
        assert f"Not read (see the warnings): {named}; the overflow may have started there." in summary, summary


def test_a_dump_path_given_as_dot_or_dotdot_is_named_by_its_folders(tmp_path, monkeypatch):
    """A hunt's finding: `probe report .` inside step0/rank1 said
    "step?/rank" (a job that was not distributed) and `../rank1`
    "step?/rank1": the names came from the path as typed."""
    shutil.copytree(DATA / "ours", tmp_path / "dump")
    monkeypatch.chdir(tmp_path / "dump" / "step0" / "rank1")
    for given in (".", "../rank1", "./"):
        summary = report(given)[1].strip().splitlines()[-1]
        assert "Overflow started in step0/rank1:" in summary, (given, summary)
    monkeypatch.chdir(tmp_path / "dump" / "step0")
    assert "Overflow started in step0/rank1:" in report(".")[1]


def test_both_files_unreadable_is_not_called_a_fallback_to_dump_json(tmp_path):
    """A hunt's finding: with overflow.json and dump.json both unreadable,
    the warning said "the records are dump.json's entries, without origin
    marks" (none were read) and the summary named the folder both
    "Without origin marks" and "Not read"."""
    root = tmp_path / "dump"
    shutil.copytree(DATA / "ours", root)
    (root / "step0" / "rank1" / "overflow.json").write_text("garbage")
    (root / "step0" / "rank1" / "dump.json").write_text("garbage")
    status, out, err = report(root)
    assert status == 0, err
    assert "dump.json's entries" not in err and "step0/rank1/overflow.json: not read (not a JSON list" in err, err
    summary = out.strip().splitlines()[-1]
    assert "Without origin marks" not in summary
    assert "Not read (see the warnings): step0/rank1; the overflow may have started there." in summary
    # dump.json readable: the fallback stands
    shutil.copy(DATA / "ours" / "step0" / "rank1" / "dump.json", root / "step0" / "rank1" / "dump.json")
    status, out, err = report(root)
    assert "the records are dump.json's entries, without origin marks" in err


def test_an_empty_ranks_list_of_a_collective_is_members_unknown():
    """A hunt's finding: a communication record whose group "ranks" was []
    made the report certain that "the AllReduce itself overflowed"; with
    null it rightly said the members were not recorded. A group has at
    least its own rank, so [] is read as not recorded."""
    status, out, _ = report(DATA / "empty-group")
    summary = out.strip().splitlines()[-1]
    assert status == 0 and "itself overflowed" not in summary, summary
    assert "best guess: the group's ranks were not recorded" in summary
