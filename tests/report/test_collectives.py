"""`probe report` across ranks (issue 25): collective calls matched over
the ranks' dumps to the rank where the overflow started, on the hand-made
dumps of tests/data/report/multirank/ (make_multirank.py there says what
each one holds), and the record contract of probe_format/."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from msprobe_lint.report import main
from msprobe_lint.report.analysis.collectives import COLLECTIVE, ORIGIN
from msprobe_lint.report.command import summarise
from probe_format.collectives import received_message
from msprobe_lint.report.reader import RanksTable, read_collective

MULTI = Path(__file__).parents[1] / "data" / "report" / "multirank"


def run(path, fmt="text", *flags):
    out, err = io.StringIO(), io.StringIO()
    status = main(str(path), fmt, out=out, err=err, show_all="--all" in flags)
    return status, out.getvalue(), err.getvalue()


def payload(path, *flags) -> dict:
    status, out, err = run(path, "json", *flags)
    assert status == 0, err

    def refuse(token):
        raise AssertionError(f"non-strict JSON token {token}")
    return json.loads(out, parse_constant=refuse)


def received(data: dict) -> list[tuple]:
    return [(r["rank"], r["call"]["api"], r["call"]["group"], r["call"]["index"], r["call"]["direction"], r["from"])
            for r in data["received"]]


def test_data_parallel_the_origin_rank_not_the_lowest_receiver():
    """Rank 1 made the inf; ranks 0, 2, 3 received it through the AllReduce:
    the summary names rank 1, never rank 0, and says who received it."""
    data = payload(MULTI / "dp-allreduce")
    started = data["started"]
    assert (started["rank"], started["name"], started["how"], started["ranks"]) == (
        1, "Functional.exp.0.forward", ORIGIN, [1])
    assert started["best_guess"] is False and started["also"] == []
    assert received(data) == [(r, "AllReduce", "hccl_world_group", 0, "forward", 1) for r in (0, 2, 3)]
    assert data["summary"]["message"] == (
        "Overflow started in step1/rank1: Functional.exp.0.forward (API, forward) at /job/train.py:11. "
        "3 ranks received inf/nan through collective calls: ranks 0, 2-3.")
    status, out, _ = run(MULTI / "dp-allreduce")
    lines = out.splitlines()
    assert lines[0].startswith("step1/ranks 0, 2-3  (3 ranks with the same records; statistics of rank 0: ")
    assert lines[1].split() == ["received", "Primitive.AllReduce.0", "API", "forward", "/job/train.py:17"]
    assert lines[2].strip() == ("through AllReduce call 0 of group hccl_world_group (ranks 0-3, forward) "
                                "from rank 1")
    assert "step1/rank1  (" in out and "ORIGIN   Functional.exp.0" in out


def test_recursion_through_two_collectives():
    """Rank 2 -> AllReduce of g12 -> rank 1 -> AllReduce of g01 -> rank 0:
    the search follows both calls back to rank 2."""
    data = payload(MULTI / "two-collectives")
    assert (data["started"]["rank"], data["started"]["name"]) == (2, "Functional.exp.0.forward")
    assert received(data) == [(0, "AllReduce", "g01", 0, "forward", 1), (1, "AllReduce", "g12", 0, "forward", 2)]
    assert data["summary"]["message"].startswith("Overflow started in step1/rank2: Functional.exp.0.forward")


def test_all_inputs_finite_the_reduction_itself_overflowed_on_every_rank():
    data = payload(MULTI / "reduction")
    started = data["started"]
    assert (started["how"], started["rank"], started["ranks"], started["best_guess"]) == (COLLECTIVE, 0, [0, 1],
                                                                                         False)
    assert started["call"] == {"api": "AllReduce", "group": "tp", "index": 0, "direction": "forward",
                               "ranks": [0, 1], "pair": None}
    assert data["received"] == []  # nobody sent it: no rank "received it from" another
    assert data["summary"]["message"] == (
        "Overflow started in AllReduce call 0 of group tp (ranks 0-1, forward) in step1, on ranks 0-1: no rank's "
        "input held inf/nan, so the AllReduce itself overflowed (Primitive.AllReduce.0.forward at "
        "/job/train.py:30).")
    out = run(MULTI / "reduction")[1]
    assert "the AllReduce itself overflowed" in out.splitlines()[2]


def test_a_rank_missing_from_the_dump_is_a_best_guess_naming_it():
    data = payload(MULTI / "missing-rank")
    started = data["started"]
    assert (started["how"], started["rank"], started["best_guess"], started["missing_ranks"]) == (
        COLLECTIVE, 0, True, [1])
    message = data["summary"]["message"]
    assert message.startswith("Overflow came in through AllReduce call 0 of group hccl_world_group (ranks 0-1, "
                              "forward) in step1/rank0")
    assert "best guess: rank 1 of the group is not in the dump" in message and "cannot be known" in message
    assert "Overflow started" not in message


def test_a_rank_that_stopped_checking_is_the_likely_sender_not_a_reduction_overflow():
    """overflow_nums 1 (the default): rank 1 stopped after its exp record and
    has no record of the AllReduce rank 0 received. Its folder is there, so
    "every rank present, no input held inf/nan" must not be read as the
    AllReduce overflowing by itself: rank 1 is the likely sender."""
    data = payload(MULTI / "stopped-at-limit")
    started = data["started"]
    assert (started["how"], started["rank"], started["name"], started["best_guess"]) == (
        ORIGIN, 1, "Functional.exp.0.forward", False)
    assert received(data) == [(0, "AllReduce", "hccl_world_group", 0, "forward", 1)]
    assert data["summary"]["message"] == (
        "Overflow started in step1/rank1: Functional.exp.0.forward (API, forward) at /job/train.py:11. "
        "1 rank received inf/nan through collective calls: rank 0.")
    note = next(r["received"] for r in data["records"] if r["received"])
    assert (note["from"], note["likely"], note["missing_ranks"]) == ([], [1], [1])
    assert note["note"].startswith("through AllReduce call 0 of group hccl_world_group (ranks 0-1, forward), "
                                   "probably from rank 1 (best guess: rank 1 of the group recorded nothing of "
                                   "this call: checking had stopped there")
    assert "itself overflowed" not in run(MULTI / "stopped-at-limit")[1]


def test_send_receive_matched_by_the_pair_of_ranks():
    """Rank 0 Sends its inf to 1 (call 0 of the pair), rank 1 Sends back
    (call 1): rank 0's later Receive came from 1, but rank 0 started it."""
    data = payload(MULTI / "p2p")
    assert (data["started"]["rank"], data["started"]["name"]) == (0, "Functional.exp.0.forward")
    assert [(r["rank"], r["call"]["pair"], r["call"]["index"], r["from"]) for r in data["received"]] == [
        (1, [0, 1], 0, 0)]
    notes = {(r["rank"], r["name"]): r["received"] for r in data["records"] if r["received"]}
    assert notes[(0, "Primitive.Receive.0.forward")]["from"] == [1]
    assert notes[(1, "Primitive.Receive.0.forward")]["from"] == [0]


def test_allgather_carries_one_ranks_inf():
    data = payload(MULTI / "allgather")
    assert (data["started"]["rank"], data["started"]["name"]) == (3, "Functional.exp.0.forward")
    assert received(data) == [(r, "AllGather", "hccl_world_group", 0, "forward", 3) for r in (0, 1, 2)]


def test_allgather_without_a_sender_is_a_best_guess_not_an_overflow():
    """AllGather only moves data: finite inputs everywhere cannot make inf."""
    data = payload(MULTI / "allgather-nosender")
    assert data["started"]["best_guess"] is True and data["started"]["missing_ranks"] == []
    assert "AllGather only moves data" in data["summary"]["message"]


def test_backward_collectives_match_on_their_direction():
    data = payload(MULTI / "backward")
    assert (data["started"]["rank"], data["started"]["name"]) == (1, "Functional.exp.0.backward")
    assert received(data) == [(0, "AllReduce", "hccl_world_group", 0, "backward", 1)]


def test_broadcast_comes_from_its_root_whatever_the_buffer_held():
    data = payload(MULTI / "broadcast")
    assert (data["started"]["rank"], data["started"]["name"]) == (2, "Functional.exp.0.forward")
    assert [(r["rank"], r["from"]) for r in data["received"]] == [(0, 2), (1, 2)]


def test_a_received_rank_is_never_the_origin_even_when_it_is_the_lowest(tmp_path):
    """The issue's 2-rank run: today's reading would name rank 0's
    AllReduce. Also with ranks left out of order on disk (rank10 before rank2)."""
    for rank in (0, 1):
        shutil.copytree(MULTI / "dp-allreduce" / "step1" / f"rank{rank}", tmp_path / "step1" / f"rank{rank * 10}")
    summary, status, _ = summarise(str(tmp_path))
    assert status == 0 and summary.start.rank == 10 and summary.start.how == ORIGIN


def test_the_folder_rank_beside_numbered_ranks_is_named_rank_everywhere(tmp_path):
    """A hunt's finding: a step holding the folder ``rank`` (a job that was
    not distributed) beside ``rank0`` said "statistics of rank None" (text
    and HTML), and the summary counted 2 receiving ranks but listed only
    rank 0. The folder is ``rank`` everywhere, as the group headers and
    places name it; JSON keeps null, its documented value."""
    steps = MULTI / "dp-allreduce" / "step1"
    shutil.copytree(steps / "rank0", tmp_path / "step1" / "rank0")
    shutil.copytree(steps / "rank2", tmp_path / "step1" / "rank")
    shutil.copytree(steps / "rank1", tmp_path / "rank1" / "step1")
    status, out, err = run(tmp_path)
    assert status == 0 and err == "", err
    assert "None" not in out
    lines = out.splitlines()
    assert lines[0] == (f"step1/ranks rank, 0  (2 ranks with the same records; statistics of rank: "
                        f"{tmp_path / 'step1' / 'rank'})")
    assert lines[-1].endswith("Overflow started in step1/rank1: Functional.exp.0.forward (API, forward) at "
                              "/job/train.py:11. 2 ranks received inf/nan through collective calls: ranks rank, 0.")
    data = payload(tmp_path)
    assert data["summary"]["message"] == lines[-1].split(". ", 1)[1]
    assert [r["rank"] for r in data["received"]] == [None, 0] and data["records"][0]["ranks"] == [None, 0]
    status, page, _ = run(tmp_path, "html")
    assert status == 0 and "None" not in page
    assert f"2 ranks with the same records; statistics of rank: {tmp_path / 'step1' / 'rank'}</p>" in page


@pytest.mark.parametrize("ranks, text", [
    ([0], "rank 0"), ([None], "rank"), ([None, 0], "ranks rank, 0"), ([3, None, 1, 2], "ranks rank, 1-3"),
    ([0, 2, 4], "ranks 0, 2 and 1 more spans")])
def test_rank_lists_name_the_folder_rank(ranks, text):
    from msprobe_lint.report.analysis.first import ranks_text

    assert ranks_text(ranks, limit=2) == text


def test_records_without_collective_are_read_as_before(tmp_path):
    """An older dump (no collective key): each rank's first origin, lowest
    rank of the earliest step, as before issue 25."""
    for rank in (0, 1):
        folder = tmp_path / "step1" / f"rank{rank}"
        folder.mkdir(parents=True)
        (folder / "overflow.json").write_text(json.dumps([
            {"name": "Primitive.AllReduce.0.forward", "origin": True, "where": "t.py:17"}]))
        (folder / "dump.json").write_text(json.dumps({"data": {}}))
    data = payload(tmp_path)
    assert (data["started"]["rank"], data["started"]["how"], data["started"]["also"]) == (0, ORIGIN, [1])
    assert data["received"] == []


def test_malformed_collective_is_a_warning_and_a_plain_record(tmp_path):
    folder = tmp_path / "step0" / "rank0"
    folder.mkdir(parents=True)
    (folder / "overflow.json").write_text(json.dumps([
        {"name": "Primitive.AllReduce.0.forward", "origin": False, "where": "t.py:1", "kind": "communication",
         "collective": {"api": "AllReduce", "group": "g", "ranks": [0, "x"], "index": 0, "direction": "forward",
                        "inputs_finite": True}}]))
    (folder / "dump.json").write_text(json.dumps({"data": {}}))
    status, out, err = run(tmp_path)
    assert status == 0 and "carried  Primitive.AllReduce.0" in out
    assert 'record 0 (Primitive.AllReduce.0.forward): malformed "collective" object; read as a plain record' in err


def test_the_record_contract():
    """The contract's example message, and every key read back."""
    assert received_message("AllReduce", "hccl_world_group", [0, 1]) == (
        "received inf/nan through AllReduce (group hccl_world_group, ranks 0-1) from another rank, or the "
        "reduction itself overflowed: see `probe report` over all ranks")
    assert "or the reduction" not in received_message("AllGather", "g", None)
    c = read_collective({"api": "Send", "group": "pp", "ranks": None, "index": 2, "direction": "backward",
                         "inputs_finite": False, "peer": 5})
    assert (c.api, c.group, c.ranks, c.index, c.direction, c.inputs_finite, c.peer, c.root) == (
        "Send", "pp", None, 2, "backward", False, 5, None)
    for broken in ({"api": "AllReduce"}, {"api": "AllReduce", "group": "g", "ranks": [0], "index": True,
                                          "direction": "forward", "inputs_finite": True},
                   {"api": "AllReduce", "group": "g", "ranks": [0], "index": 0, "direction": "sideways",
                    "inputs_finite": True}):
        assert read_collective(broken) is None


@pytest.mark.parametrize("text, expected", [
    (b'{"ranks": [0, 1]}', (0, 1)),
    (b'{"ranks": [\n  0,\n  1\n ]}', (0, 1)),
    (b'{"ranks": []}', ()),
    (b'{"ranks": null}', None),
    (b'{"ranks": ["a"]}', ["a"]),
    (b'{"ranks": [-1, 2]}', [-1, 2]),
    (b'{"ranks" : [7]}', (7,)),
    (b'{"name": "a \\"ranks\\": [1]", "ranks": [3]}', (3,)),
])
def test_ranks_lists_are_read_once_and_shared(text, expected):
    table = RanksTable()
    first = table.lookup(json.loads(table.compact(text))["ranks"])
    again = table.lookup(json.loads(table.compact(text))["ranks"])
    assert first == expected and again == expected
    if isinstance(expected, tuple):
        assert first is again  # one tuple for every record that lists the group
    long = b'{"ranks": [' + b", ".join(b"%d" % i for i in range(300)) + b"]}"
    assert table.lookup(json.loads(table.compact(long))["ranks"]) == tuple(range(300))
