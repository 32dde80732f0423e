"""Write the hand-made multi-rank dumps of ``multirank/`` (probe_runtime's
layout, with the ``collective`` records of docs/report-format.md).

Each case below is a step of a small job, rank by rank, records in
detection order; ``python tests/data/report/make_multirank.py`` rewrites
the folders (the tests read the folders, not this script).

| case | what happened | where the overflow started |
|---|---|---|
| ``dp-allreduce`` | data parallel, 4 ranks: rank 1's ``exp`` overflows, the gradient AllReduce carries it to 0, 2, 3 | rank 1, ``Functional.exp.0.forward``; 0, 2, 3 received it from 1 |
| ``two-collectives`` | rank 2 overflows, AllReduce of group ``g12`` carries it to rank 1, whose AllReduce of ``g01`` carries it to rank 0 | rank 2; 1 from 2, 0 from 1 |
| ``reduction`` | tensor parallel float16: both ranks' partial sums are finite, their AllReduce overflows | the AllReduce itself, on ranks 0-1 |
| ``missing-rank`` | as ``dp-allreduce`` with 2 ranks, but only rank 0 is in the dump (``"rank": [0]``) | not known: best guess, rank 1 is missing |
| ``p2p`` | pipeline: rank 0's ``exp`` overflows, Send to rank 1; rank 1's Receive gets it; rank 1 then Sends back (a second call of the pair) | rank 0; 1 from 0 |
| ``allgather`` | AllGather: rank 3's ``exp`` overflows, every rank gathers it | rank 3; 0-2 from 3 |
| ``allgather-nosender`` | AllGather delivers inf/nan on both ranks but no rank recorded a non-finite input | best guess: AllGather only moves data |
| ``backward`` | the backward of the gradient AllReduce: rank 1's loss gradient overflows in ``exp``'s backward | rank 1, ``Functional.exp.0.backward``; 0 from 1 |
| ``stopped-at-limit`` | as ``dp-allreduce`` with 2 ranks and ``overflow_nums`` 1: rank 1 stopped checking after its ``exp`` record, so it has no record of the AllReduce rank 0 received | rank 1, ``Functional.exp.0.forward``; 0 probably from 1 (best guess) |
| ``broadcast`` | Broadcast from root 2: rank 2's ``exp`` overflows; rank 0's own buffer also held nan | rank 2; 0 and 1 from 2 (rank 0's buffer is not what it sent) |
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent / "multirank"
INF, NAN = float("inf"), float("nan")
WORLD = "hccl_world_group"


def tensor(top: float, bottom: float = 0.5) -> dict:
    finite = top == top and abs(top) != INF
    return {"type": "mindspore.Tensor", "dtype": "Float16", "shape": [4, 8], "Max": top, "Min": bottom,
            "Mean": 1.0 if finite else top, "Norm": 3.0 if finite else abs(top) if top == top else top,
            "data_name": None}


FINE, INFS, NANS = tensor(2.0), tensor(INF), tensor(NAN, NAN)


def record(name: str, line: int, *, origin: bool = False, ins=(FINE,), outs=(INFS,), collective=None,
           kind=None, message=None) -> tuple[dict, dict]:
    """(overflow.json item, dump.json entry)."""
    direction = "backward" if name.endswith(".backward") else "forward"
    item = {"name": name, "origin": origin, "where": f"/job/train.py:{line}", "kind": kind or direction}
    if collective is not None:
        item["collective"] = collective
    if message is not None:
        item["message"] = message
    entry = ({"input": list(ins), "output": list(outs)} if direction == "backward"
             else {"input_args": list(ins), "input_kwargs": {}, "output": list(outs)})
    return item, entry


def coll(api: str, index: int, finite: bool, group: str = WORLD, ranks=(0, 1), direction: str = "forward",
         **extra) -> dict:
    return {"api": api, "group": group, "ranks": None if ranks is None else list(ranks), "index": index,
            "direction": direction, "inputs_finite": finite, **extra}


def received(name: str, line: int, c: dict, outs=(INFS,)) -> tuple[dict, dict]:
    """A communication record: finite local inputs, inf/nan out."""
    members = "-".join(str(r) for r in (c["ranks"][0], c["ranks"][-1])) if c.get("ranks") else "?"
    message = (f"received inf/nan through {c['api']} (group {c['group']}, ranks {members}) from another rank, or "
               "the reduction itself overflowed: see `probe report` over all ranks")
    return record(name, line, collective=c, kind="communication", message=message, outs=outs)


def carried(name: str, line: int, c=None, outs=(INFS,)) -> tuple[dict, dict]:
    return record(name, line, ins=(INFS,), outs=outs, collective=c)


def exp_origin(line: int = 11, name: str = "Functional.exp.0.forward") -> tuple[dict, dict]:
    return record(name, line, origin=True)


FOUR = (0, 1, 2, 3)
CASES: dict[str, dict[int, list]] = {
    "dp-allreduce": {
        0: [received("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, True, ranks=FOUR)),
            carried("Tensor.__truediv__.0.forward", 18)],
        1: [exp_origin(), carried("Tensor.__sub__.0.forward", 12),
            carried("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, False, ranks=FOUR)),
            carried("Tensor.__truediv__.0.forward", 18)],
        2: [received("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, True, ranks=FOUR)),
            carried("Tensor.__truediv__.0.forward", 18)],
        3: [received("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, True, ranks=FOUR)),
            carried("Tensor.__truediv__.0.forward", 18)],
    },
    "two-collectives": {
        0: [received("Primitive.AllReduce.1.forward", 21, coll("AllReduce", 0, True, "g01", (0, 1)))],
        1: [received("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, True, "g12", (1, 2))),
            carried("Primitive.AllReduce.1.forward", 21, coll("AllReduce", 0, False, "g01", (0, 1)))],
        2: [exp_origin(), carried("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, False, "g12", (1, 2)))],
    },
    "reduction": {
        0: [received("Primitive.AllReduce.0.forward", 30, coll("AllReduce", 0, True, "tp", (0, 1))),
            carried("Tensor.__add__.0.forward", 31)],
        1: [received("Primitive.AllReduce.0.forward", 30, coll("AllReduce", 0, True, "tp", (0, 1))),
            carried("Tensor.__add__.0.forward", 31)],
    },
    "missing-rank": {
        0: [received("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, True)),
            carried("Tensor.__truediv__.0.forward", 18)],
    },
    "p2p": {
        0: [exp_origin(), carried("Primitive.Send.0.forward", 40, coll("Send", 0, False, "pp", (0, 1), peer=1)),
            received("Primitive.Receive.0.forward", 41, coll("Receive", 1, True, "pp", (0, 1), peer=1))],
        1: [received("Primitive.Receive.0.forward", 41, coll("Receive", 0, True, "pp", (0, 1), peer=0)),
            carried("Tensor.__mul__.0.forward", 42),
            carried("Primitive.Send.0.forward", 40, coll("Send", 1, False, "pp", (0, 1), peer=0))],
    },
    "allgather": {
        r: ([exp_origin()] if r == 3 else []) + [
            (carried if r == 3 else received)("Primitive.AllGather.0.forward", 50,
                                              coll("AllGather", 0, r != 3, ranks=FOUR))]
        for r in FOUR
    },
    "allgather-nosender": {
        r: [received("Primitive.AllGather.0.forward", 50, coll("AllGather", 0, True))] for r in (0, 1)
    },
    "backward": {
        0: [received("Primitive.AllReduce.0.backward", 17, coll("AllReduce", 0, True, direction="backward"))],
        1: [record("Functional.exp.0.backward", 11, origin=True, ins=(FINE,), outs=(INFS,)),
            carried("Primitive.AllReduce.0.backward", 17, coll("AllReduce", 0, False, direction="backward"))],
    },
    "stopped-at-limit": {
        0: [received("Primitive.AllReduce.0.forward", 17, coll("AllReduce", 0, True))],
        1: [exp_origin()],
    },
    "broadcast": {
        0: [carried("Primitive.Broadcast.0.forward", 60, coll("Broadcast", 0, False, ranks=(0, 1, 2), root=2))],
        1: [received("Primitive.Broadcast.0.forward", 60, coll("Broadcast", 0, True, ranks=(0, 1, 2), root=2))],
        2: [exp_origin(), carried("Primitive.Broadcast.0.forward", 60,
                                  coll("Broadcast", 0, False, ranks=(0, 1, 2), root=2))],
    },
}


def write(case: str, ranks: dict[int, list], step: int = 1) -> None:
    for rank, records in ranks.items():
        folder = HERE / case / f"step{step}" / f"rank{rank}"
        folder.mkdir(parents=True)
        items = [dict(item, step=step, rank=rank) for item, _ in records]
        data = {item["name"]: entry for item, entry in records}
        (folder / "overflow.json").write_text(json.dumps(items, indent=1) + "\n")
        (folder / "dump.json").write_text(json.dumps({"task": "overflow_check", "level": "L1",
                                                      "framework": "mindspore", "dump_data_dir": None,
                                                      "data": data}, indent=1) + "\n")


def main() -> None:
    if HERE.exists():
        shutil.rmtree(HERE)
    for case, ranks in CASES.items():
        write(case, ranks)


if __name__ == "__main__":
    main()
