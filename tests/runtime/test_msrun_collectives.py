"""Collectives across real processes (issue 25): msrun jobs of 2 and 4 CPU
workers on loopback (MCCL), each running the scenarios of
tests/data/msrun/train_collectives.py with its own debugger and dump path;
the records each rank wrote and what `probe report` says over all ranks.

Three jobs, each shared by the tests of its scenarios (a job costs about
20-45 s here, mostly two or four MindSpore imports on two cores): L1 on 2
workers, L0 on 2 workers, and 4 workers with two tensor-parallel groups.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_lint.report import main as report_main

TRAIN = Path(__file__).resolve().parents[1] / "data" / "msrun" / "train_collectives.py"
SOURCE = TRAIN.read_text().splitlines()

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]


def line_of(text: str) -> int:
    """The line of train_collectives.py holding ``text`` (records name the user's file:line)."""
    (number,) = [i + 1 for i, line in enumerate(SOURCE) if text in line]
    return number


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Job:
    """One msrun job: its folder, and the dump of each scenario."""

    def __init__(self, folder: Path, logs: str) -> None:
        self.folder = folder
        self.logs = logs

    def dump(self, scenario: str) -> Path:
        return self.folder / "dump" / scenario

    def records(self, scenario: str, rank: int, step: int = 1) -> list[dict]:
        path = self.dump(scenario) / f"step{step}" / f"rank{rank}" / "overflow.json"
        return json.loads(path.read_text()) if path.exists() else []

    def folders(self, scenario: str) -> list[str]:
        return sorted(str(p.relative_to(self.dump(scenario))) for p in self.dump(scenario).glob("step*/rank*"))

    def report(self, scenario: str) -> tuple[str, dict]:
        """(the text report's last line, the JSON report)."""
        text, data = io.StringIO(), io.StringIO()
        assert report_main(str(self.dump(scenario)), "text", out=text, err=io.StringIO()) == 0
        assert report_main(str(self.dump(scenario)), "json", out=data, err=io.StringIO()) == 0
        return text.getvalue().splitlines()[-1], json.loads(data.getvalue())

    def where(self, text: str) -> str:
        return f"{self.folder / 'train.py'}:{line_of(text)}"


def launch(folder: Path, workers: int, scenarios: dict[str, dict], checks: str = "") -> Job:
    """Run train_collectives.py under msrun with ``workers`` CPU workers,
    one config per scenario (``level`` L1 and ``overflow_nums`` -1 unless
    the scenario's dict says otherwise), under the checks mode ``checks``
    (``PROBE_CHECKS``; empty: the default)."""
    msrun = Path(sys.executable).parent / "msrun"
    if not msrun.exists():
        pytest.skip(f"no msrun beside {sys.executable}")
    shutil.copy(TRAIN, folder / "train.py")
    for name, changes in scenarios.items():
        config = {"task": "overflow_check", "dump_path": str(folder / "dump" / name), "level": "L1",
                  "overflow_check": {"overflow_nums": changes.pop("nums", -1)}, **changes}
        (folder / f"cfg_{name}.json").write_text(json.dumps(config, indent=2))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE",
                                                              "MS_WORKER_NUM", "PROBE_CONFIG", "PROBE_CHECKS")}
    if checks:
        env["PROBE_CHECKS"] = checks
    env["PATH"] = f"{msrun.parent}{os.pathsep}{env.get('PATH', '')}"  # msrun starts a bare `python`
    proc = subprocess.run([str(msrun), f"--worker_num={workers}", f"--local_worker_num={workers}",
                           "--master_addr=127.0.0.1", f"--master_port={free_port()}", "--join=True",
                           "--log_dir=logs", "--cluster_time_out=120", "train.py", *scenarios],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=420)
    texts = {p.name: p.read_text(errors="replace") for p in sorted((folder / "logs").glob("worker_*.log"))}
    logs = "\n".join(f"== {name}\n{text}" for name, text in texts.items())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:] + "\n".join(
        f"== {name}\n{text[-4000:]}" for name, text in texts.items())
    for rank in range(workers):
        assert f"worker rank {rank} of {workers} done" in logs, logs
    assert not (folder / "rank_0").exists()
    return Job(folder, logs)


@pytest.fixture(scope="module")
def l1(tmp_path_factory):
    pytest.importorskip("mindspore")
    return launch(tmp_path_factory.mktemp("msrun-l1"), 2, {
        "dp": {}, "reducer": {}, "tp": {}, "allgather": {}, "inplace": {}, "backward": {},
        "dp-rank0": {"rank": [0]}, "dp-first": {"nums": 1}})


@pytest.fixture(scope="module")
def l0(tmp_path_factory):
    pytest.importorskip("mindspore")
    return launch(tmp_path_factory.mktemp("msrun-l0"), 2, {
        name: {"level": "L0"} for name in ("dp", "reducer", "tp", "backward")})


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    pytest.importorskip("mindspore")
    return launch(tmp_path_factory.mktemp("msrun-4"), 4, {"dp": {}, "tpgroups": {}, "tpgroups-L0": {"level": "L0"}})


@pytest.fixture(scope="module")
def auto(tmp_path_factory):
    pytest.importorskip("mindspore")
    return launch(tmp_path_factory.mktemp("msrun-auto"), 2, {"dp": {}, "reducer": {}}, checks="auto")


def kinds(records: list[dict]) -> list[tuple]:
    return [(r["name"], r["kind"], r["origin"]) for r in records]


def received(data: dict) -> list[tuple]:
    return [(r["rank"], r["name"], r["call"]["api"], r["call"]["index"], r["call"]["direction"], r["from"])
            for r in data["received"]]


def world(records: list[dict]) -> str:
    """The world group's name as the records have it (MCCL's on CPU)."""
    groups = {r["collective"]["group"] for r in records if r.get("collective")}
    assert groups == {"mccl_world_group"}, groups
    return "mccl_world_group"


# -- L1, 2 workers --------------------------------------------------------------------------
def test_data_parallel_allreduce_by_hand_l1(l1):
    """Rank 1's exp overflows; the gradient AllReduce carries it to rank 0,
    which says it received it: kind communication, never an origin."""
    zero, one = l1.records("dp", 0), l1.records("dp", 1)
    assert kinds(zero) == [("Primitive.AllReduce.0.forward", "communication", False),
                           ("Tensor.__truediv__.0.forward", "forward", False),
                           ("Primitive.AllReduce.1.forward", "communication", False),
                           ("Tensor.__truediv__.1.forward", "forward", False)]
    group = world(zero)
    assert zero[0]["collective"] == {"api": "AllReduce", "group": group, "ranks": [0, 1], "index": 0,
                                     "direction": "forward", "inputs_finite": True}
    assert zero[0]["message"].startswith(f"received inf/nan through AllReduce (group {group}, ranks 0-1) from "
                                         "another rank, or the reduction itself overflowed")
    assert one[0]["name"] == "Functional.exp.0.forward" and one[0]["origin"] is True
    reduces = [r for r in one if r.get("collective")]
    assert [(r["name"], r["collective"]["index"], r["collective"]["inputs_finite"]) for r in reduces] == [
        ("Primitive.AllReduce.0.forward", 0, False), ("Primitive.AllReduce.1.forward", 1, False)]
    assert l1.folders("dp") == ["step1/rank0", "step1/rank1"]
    last, data = l1.report("dp")
    assert last == (f"19 records in 2 step/rank folders. Overflow started in step1/rank1: Functional.exp.0.forward "
                    f"(API, forward) at {l1.where('return ops.exp(x)')}. 1 rank received inf/nan through "
                    "collective calls: rank 0.")
    assert (data["started"]["rank"], data["started"]["name"], data["started"]["how"]) == (
        1, "Functional.exp.0.forward", "origin")
    assert received(data) == [(0, "Primitive.AllReduce.0.forward", "AllReduce", 0, "forward", 1)]


def test_distributed_grad_reducer_l1(l1):
    """nn.DistributedGradReducer's AllReduces run in compiled code: before,
    rank 0 said "no overflow found" although its weights became NaN. Now
    the reducer's call is the collective, recorded in that step."""
    assert kinds(l1.records("reducer", 0)) == [("DistributedGradReducer.AllReduce.0.forward", "communication",
                                                False)]
    one = l1.records("reducer", 1)
    assert (one[0]["name"], one[0]["origin"]) == ("Tensor.__truediv__.0.forward", True)
    assert one[-1]["name"] == "DistributedGradReducer.AllReduce.0.forward"
    assert one[-1]["collective"]["inputs_finite"] is False
    last, data = l1.report("reducer")
    assert last == (f"11 records in 2 step/rank folders. Overflow started in step1/rank1: "
                    f"Tensor.__truediv__.0.forward (API, forward) at {l1.where('* scale / scale')}. 1 rank "
                    "received inf/nan through collective calls: rank 0.")
    assert received(data) == [(0, "DistributedGradReducer.AllReduce.0.forward", "AllReduce", 0, "forward", 1)]
    assert "no overflow found" not in "\n".join(
        line for line in l1.logs.splitlines() if "/reducer" in line)


def test_tensor_parallel_float16_reduction_overflows_in_the_allreduce(l1):
    """Each rank's partial sum is finite (40000 in float16); their sum is
    not. No rank made it: the AllReduce itself did, on both ranks."""
    for rank in (0, 1):
        records = l1.records("tp", rank)
        assert kinds(records)[0] == ("Primitive.AllReduce.0.forward", "communication", False)
        assert records[0]["collective"]["inputs_finite"] is True
    last, data = l1.report("tp")
    group = world(l1.records("tp", 0))
    assert last == (f"4 records in 2 step/rank folders. Overflow started in AllReduce call 0 of group {group} "
                    "(ranks 0-1, forward) in step1, on ranks 0-1: no rank's input held inf/nan, so the AllReduce "
                    f"itself overflowed (Primitive.AllReduce.0.forward at {l1.where('self.allreduce(x * self')}).")
    started = data["started"]
    assert (started["how"], started["ranks"], started["best_guess"]) == ("collective", [0, 1], False)
    assert data["received"] == []


def test_allgather_carries_one_ranks_inf(l1):
    assert kinds(l1.records("allgather", 0))[0] == ("Primitive.AllGather.0.forward", "communication", False)
    assert l1.records("allgather", 1)[1]["collective"]["inputs_finite"] is False
    last, data = l1.report("allgather")
    assert last == (f"5 records in 2 step/rank folders. Overflow started in step1/rank1: Functional.exp.0.forward "
                    f"(API, forward) at {l1.where('allgather: rank 1 overflows here')}. "
                    "1 rank received inf/nan through "
                    "collective calls: rank 0.")
    assert received(data) == [(0, "Primitive.AllGather.0.forward", "AllGather", 0, "forward", 1)]


def test_in_place_mint_distributed_all_reduce(l1):
    """mint.distributed.all_reduce(x) returns None and writes the sum into
    x: its record judges x before (input) and after (output)."""
    zero = l1.records("inplace", 0)
    assert kinds(zero)[0] == ("Primitive.DistCommAllReduce.0.forward", "communication", False)
    assert zero[0]["collective"]["api"] == "AllReduce"
    assert zero[0]["where"] == l1.where("result = mint.distributed.all_reduce(h)")
    last, data = l1.report("inplace")
    assert last.endswith("1 rank received inf/nan through collective calls: rank 0.")
    assert "Overflow started in step1/rank1: Functional.exp.0.forward" in last
    assert received(data) == [(0, "Primitive.DistCommAllReduce.0.forward", "AllReduce", 0, "forward", 1)]


def test_backward_of_an_allreduce(l1):
    """sqrt(y * 0) on rank 1 only: NaN gradient there; the AllReduce's
    backward (an AllReduce of the gradients) hands it to rank 0."""
    zero = l1.records("backward", 0)
    assert kinds(zero)[0] == ("Primitive.AllReduce.0.backward", "communication", False)
    assert zero[0]["collective"]["direction"] == "backward" and zero[0]["collective"]["inputs_finite"] is True
    one = l1.records("backward", 1)
    assert (one[0]["name"], one[0]["origin"]) == ("Functional.sqrt.0.backward", True)
    last, data = l1.report("backward")
    assert last == (f"7 records in 2 step/rank folders. Overflow started in step1/rank1: Functional.sqrt.0.backward "
                    f"(API, backward) at {l1.where('return ops.sqrt(')}. 1 rank received inf/nan through "
                    "collective calls: rank 0.")
    assert received(data) == [(0, "Primitive.AllReduce.0.backward", "AllReduce", 0, "backward", 1)]


def test_rank_filter_leaving_the_origin_out_is_a_best_guess_naming_it(l1):
    assert l1.folders("dp-rank0") == ["step1/rank0"]
    last, data = l1.report("dp-rank0")
    group = world(l1.records("dp-rank0", 0))
    assert last == (f"4 records in 1 step/rank folder. Overflow came in through AllReduce call 0 of group {group} "
                    f"(ranks 0-1, forward) in step1/rank0: Primitive.AllReduce.0.forward (API, forward) at "
                    f"{l1.where('allreduce(g) / SIZE')}; best guess: rank 1 of the group is not in the dump (the "
                    "config's rank filter, or a worker that crashed), so whether it sent the inf/nan cannot be "
                    "known.")
    started = data["started"]
    assert (started["best_guess"], started["missing_ranks"], started["rank"]) == (True, [1], 0)


def test_overflow_nums_1_stops_the_origin_rank_before_the_collective(l1):
    """The default overflow_nums (1): rank 1 stops after its exp record and
    never records the AllReduce; the report must not take the AllReduce
    for a reduction that overflowed by itself."""
    assert kinds(l1.records("dp-first", 0)) == [("Primitive.AllReduce.0.forward", "communication", False)]
    assert kinds(l1.records("dp-first", 1)) == [("Functional.exp.0.forward", "forward", True)]
    last, data = l1.report("dp-first")
    assert last == (f"2 records in 2 step/rank folders. Overflow started in step1/rank1: Functional.exp.0.forward "
                    f"(API, forward) at {l1.where('return ops.exp(x)')}. 1 rank received inf/nan through "
                    "collective calls: rank 0.")
    assert received(data) == [(0, "Primitive.AllReduce.0.forward", "AllReduce", 0, "forward", 1)]


# -- auto checks, 2 workers ------------------------------------------------------------------
@pytest.mark.parametrize("scenario", ["dp", "reducer"])
def test_auto_checks_claim_no_origin_for_gradients_a_collective_brought(auto, scenario):
    """Auto checks (opt-in) in a job of several ranks: rank 1 overflows and
    the gradient AllReduce, which auto checks do not watch, brings the inf
    to rank 0's optimizer. A fresh user's finding: rank 0's record said an
    unscale or a clip made it. It now says the code between them made it or
    brought it from another rank, and the report names rank 1's origin."""
    (zero,) = auto.records(scenario, 0)
    assert (zero["kind"], zero["origin"]) == ("outside", False), zero
    assert "brought it from another rank" in zero["message"] and "(an unscale, a clip)" not in zero["message"]
    assert auto.records(scenario, 1)[0]["origin"] is True
    _, data = auto.report(scenario)
    assert (data["started"]["rank"], data["started"]["how"]) == (1, "origin"), data["started"]


# -- L0, 2 workers --------------------------------------------------------------------------
def test_data_parallel_l0(l0):
    assert kinds(l0.records("dp", 0)) == [("Primitive.AllReduce.0.forward", "communication", False),
                                          ("Primitive.AllReduce.1.forward", "communication", False)]
    assert kinds(l0.records("dp", 1))[0] == ("Cell.expo.Expo.forward.0", "forward", True)
    last, data = l0.report("dp")
    assert last == (f"8 records in 2 step/rank folders. Overflow started in step1/rank1: Cell.expo.Expo.forward.0 "
                    f"(Cell, forward) at {l0.where('return self.fc(self.expo(x))')}. 1 rank received inf/nan "
                    "through collective calls: rank 0.")
    assert received(data) == [(0, "Primitive.AllReduce.0.forward", "AllReduce", 0, "forward", 1)]


def test_distributed_grad_reducer_l0(l0):
    assert kinds(l0.records("reducer", 0)) == [("DistributedGradReducer.AllReduce.0.forward", "communication",
                                                False)]
    last, data = l0.report("reducer")
    # rank 1's loss, computed outside the Cells given to start(), is 0/0 in the forward pass: said first (issue 33)
    assert last.startswith("5 records in 2 step/rank folders. Overflow outside the checked calls in step1/rank1: "
                           "inf/nan in forward output 0 (the loss) of the gradient computation at ")
    assert last.endswith("1 rank received inf/nan through collective calls: rank 0.")
    assert received(data) == [(0, "DistributedGradReducer.AllReduce.0.forward", "AllReduce", 0, "forward", 1)]


def test_tensor_parallel_l0_cell_entered_through_its_allreduce(l0):
    """The row-parallel Cell's inputs were finite and its output is not, but
    it did not start the overflow: its record says it came in through the
    AllReduce inside it."""
    for rank in (0, 1):
        records = l0.records("tp", rank)
        assert kinds(records) == [("Primitive.AllReduce.0.forward", "communication", False),
                                  ("Cell.row.RowParallel.forward.0", "forward", False)]
        assert (records[1]["entered"]["source"], records[1]["entered"]["entry"]) == (
            "collective", "Primitive.AllReduce.0.forward")
    construct = json.loads((l0.dump("tp") / "step1" / "rank0" / "construct.json").read_text())
    assert construct["Primitive.AllReduce.0.forward"] == "Cell.row.RowParallel.forward.0"
    last, data = l0.report("tp")
    assert "so the AllReduce itself overflowed" in last and "on ranks 0-1" in last
    assert data["started"]["how"] == "collective" and data["received"] == []


def test_backward_of_an_allreduce_l0(l0):
    zero = l0.records("backward", 0)
    assert kinds(zero) == [("Primitive.AllReduce.0.backward", "communication", False),
                           ("Cell.row.RowParallel.backward.0", "backward", False)]
    assert zero[1]["entered"]["entry"] == "Primitive.AllReduce.0.backward"
    last, data = l0.report("backward")
    assert received(data) == [(0, "Primitive.AllReduce.0.backward", "AllReduce", 0, "backward", 1)]
    assert last.startswith("4 records in 2 step/rank folders. Overflow entered in step1/rank1: non-finite input "
                           "entered at the first checked call: input[0] of Primitive.AllReduce.0.backward, made "
                           "outside the checked Cells. ")  # sqrt(y * 0) is the loss code, not a Cell


# -- 4 workers --------------------------------------------------------------------------------
def test_data_parallel_four_ranks(four):
    for rank in (0, 1, 3):
        assert kinds(four.records("dp", rank))[0] == ("Primitive.AllReduce.0.forward", "communication", False)
    assert four.records("dp", 2)[0]["name"] == "Functional.exp.0.forward"
    last, data = four.report("dp")
    assert last == (f"27 records in 4 step/rank folders. Overflow started in step1/rank2: Functional.exp.0.forward "
                    f"(API, forward) at {four.where('return ops.exp(x)')}. 3 ranks received inf/nan through "
                    "collective calls: ranks 0-1, 3.")
    assert [(r[0], r[-1]) for r in received(data)] == [(0, 2), (1, 2), (3, 2)]


@pytest.mark.parametrize("scenario", ["tpgroups", "tpgroups-L0"])
def test_two_tensor_parallel_groups_then_a_world_allreduce(four, scenario):
    """Group tp1 (ranks 2-3) overflows in its float16 AllReduce; the world
    AllReduce carries it to ranks 0-1. Each group counts its own calls."""
    skipped = [line.split(" skipped: ", 1)[1] for line in four.logs.splitlines() if f": {scenario} skipped: " in line]
    if skipped:
        pytest.skip(f"no AllReduce on a sub-group on this CPU build ({skipped[0]})")
    for rank in (2, 3):
        first = four.records(scenario, rank)[0]
        assert first["collective"] == {"api": "AllReduce", "group": "tp1", "ranks": [2, 3], "index": 0,
                                       "direction": "forward", "inputs_finite": True}
    for rank in (0, 1):
        (only,) = four.records(scenario, rank)
        assert only["name"] == "Primitive.AllReduce.1.forward"  # tp0's AllReduce (finite) was call 0 of the API
        assert only["collective"]["index"] == 0 and only["collective"]["ranks"] == [0, 1, 2, 3]
    last, data = four.report(scenario)
    assert ("Overflow started in AllReduce call 0 of group tp1 (ranks 2-3, forward) in step1, on ranks 2-3: no "
            "rank's input held inf/nan, so the AllReduce itself overflowed") in last
    assert last.endswith("2 ranks received inf/nan through collective calls: ranks 0-1.")
    assert [(r[0], r[1], r[3]) for r in received(data)] == [(0, "Primitive.AllReduce.1.forward", 0),
                                                            (1, "Primitive.AllReduce.1.forward", 0)]
