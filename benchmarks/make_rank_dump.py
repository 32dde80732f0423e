"""Write a synthetic overflow dump of a data-parallel job, in probe_runtime's
layout, for ``probe report``'s speed and memory (``report_bench.py``).

``DUMP/step{S}/rank{R}/`` for every step and rank, each with the files
probe_runtime's writer puts there (``dump.json``, ``stack.json``,
``construct.json`` (``{}``: level L1) and ``overflow.json``, written as the
writer writes them: ``json.dumps(indent=1)``, inf/nan as bare tokens). No
``dump_tensor_data/*.npy`` files (``probe report`` reads none: it only lists their names) and
``data_name`` is null.

The story, as the runtime records it (docs/report-format.md has the record
contract):

* the first step: rank ``--origin-rank`` (default: the middle rank) makes
  the overflow (``Functional.exp.0.forward``, an ORIGIN), carries it into
  ``Primitive.AllReduce.0.forward`` (a record with ``collective``,
  ``inputs_finite`` false); every other rank's first record is that
  AllReduce, of kind ``communication`` (its inputs were finite, its output
  not: it received the inf/nan); then each rank carries it on (backward
  records, the gradient AllReduce ``Primitive.AllReduce.1.forward`` with
  non-finite inputs on every rank);
* every later step: the weights are nan on every rank, so each rank's
  first record is a carried ``Primitive.MatMul.0.forward`` whose ``entered``
  names the Parameter, followed by the same carried records on every rank.

``--records K`` records a folder (9 as in issue 25's figures), or
``--records 1-3``: a seeded random count per folder (the origin rank's
folder of the first step keeps at least its ORIGIN and its AllReduce).

Usage::

    python benchmarks/make_rank_dump.py DUMP --ranks 1024 --steps 20 [--records 9] [--origin-rank R] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

INF, NAN = float("inf"), float("nan")
GROUP = "hccl_world_group"
SCRIPT = "/work/job/train.py"


def stats(dtype: str, shape: list, top: float, bottom: float = 0.5, mean: float = 1.0) -> dict:
    """One dump.json tensor entry (msprobe's keys)."""
    norm = top if top != top or top in (INF, -INF) else abs(top) * 2
    return {"type": "mindspore.Tensor", "dtype": dtype, "shape": shape, "Max": top, "Min": bottom,
            "Mean": mean if top == top and abs(top) != INF else top, "Norm": norm, "data_name": None}


FINITE = stats("Float32", [32, 64], 4.5, -3.2, 0.1)
INFS = stats("Float32", [32, 64], INF, 0.37, INF)
NANS = stats("Float32", [32, 64], NAN, NAN, NAN)


def forward(inputs: list, outputs: list) -> dict:
    return {"input_args": inputs, "input_kwargs": {}, "output": outputs}


def backward(inputs: list, outputs: list) -> dict:
    return {"input": inputs, "output": outputs}


def collective(index: int, ranks: list, inputs_finite: bool) -> dict:
    """The ``collective`` object of an AllReduce record (the contract in
    probe_format/)."""
    return {"api": "AllReduce", "group": GROUP, "ranks": ranks, "index": index, "direction": "forward",
            "inputs_finite": inputs_finite}


def spans(ranks: list) -> str:
    return f"{ranks[0]}-{ranks[-1]}" if len(ranks) > 1 else str(ranks[0])


def received_message(ranks: list) -> str:
    return (f"received inf/nan through AllReduce (group {GROUP}, ranks {spans(ranks)}) from another rank, or the "
            "reduction itself overflowed: see `probe report` over all ranks")


def first_step_records(is_origin: bool, ranks: list) -> list[tuple[dict, dict]]:
    """(overflow.json item without step/rank, dump.json entry) in detection
    order for the first step."""
    out: list[tuple[dict, dict]] = []
    if is_origin:
        out.append(({"name": "Functional.exp.0.forward", "origin": True, "where": f"{SCRIPT}:11", "kind": "forward"},
                    forward([FINITE], [INFS])))
        out.append(({"name": "Tensor.__sub__.0.forward", "origin": False, "where": f"{SCRIPT}:12", "kind": "forward"},
                    forward([INFS, INFS], [NANS])))
        out.append(({"name": "Primitive.AllReduce.0.forward", "origin": False, "where": f"{SCRIPT}:17",
                     "kind": "forward", "collective": collective(0, ranks, False)}, forward([NANS], [NANS])))
    else:
        out.append(({"name": "Primitive.AllReduce.0.forward", "origin": False, "where": f"{SCRIPT}:17",
                     "kind": "communication", "collective": collective(0, ranks, True),
                     "message": received_message(ranks)}, forward([FINITE], [NANS])))
    out.append(({"name": "Tensor.__truediv__.0.forward", "origin": False, "where": f"{SCRIPT}:18", "kind": "forward"},
                forward([NANS], [NANS])))
    for name in ("Tensor.__truediv__.0", "Functional.square.0", "Tensor.__sub__.0", "Functional.exp.0",
                 "Primitive.MatMul.0"):
        out.append(({"name": f"{name}.backward", "origin": False, "where": f"{SCRIPT}:19", "kind": "backward"},
                    backward([NANS], [NANS])))
    out.append(({"name": "Primitive.AllReduce.1.forward", "origin": False, "where": f"{SCRIPT}:21", "kind": "forward",
                 "collective": collective(1, ranks, False)}, forward([NANS], [NANS])))
    return out


def later_step_records(ranks: list) -> list[tuple[dict, dict]]:
    entered = {"entry": "Primitive.MatMul.0.forward", "input": "input_args[1]", "source": "parameter",
               "parameter": "fc.weight", "at_start": True,
               "message": "Parameter fc.weight already held inf/nan at start(); first used by input_args[1] of "
                          "Primitive.MatMul.0.forward"}
    out = [({"name": "Primitive.MatMul.0.forward", "origin": False, "where": f"{SCRIPT}:10", "kind": "forward",
             "entered": entered}, forward([FINITE, NANS], [NANS]))]
    for name, line in (("Functional.exp.0", 11), ("Tensor.__sub__.0", 12), ("Functional.square.0", 13)):
        out.append(({"name": f"{name}.forward", "origin": False, "where": f"{SCRIPT}:{line}", "kind": "forward"},
                    forward([NANS], [NANS])))
    out.append(({"name": "Primitive.AllReduce.0.forward", "origin": False, "where": f"{SCRIPT}:17", "kind": "forward",
                 "collective": collective(0, ranks, False)}, forward([NANS], [NANS])))
    for name in ("Tensor.__truediv__.0", "Functional.square.0", "Functional.exp.0"):
        out.append(({"name": f"{name}.backward", "origin": False, "where": f"{SCRIPT}:19", "kind": "backward"},
                    backward([NANS], [NANS])))
    out.append(({"name": "Primitive.AllReduce.1.forward", "origin": False, "where": f"{SCRIPT}:21", "kind": "forward",
                 "collective": collective(1, ranks, False)}, forward([NANS], [NANS])))
    return out


def pick(records: list, count: int, keep: int) -> list:
    """``count`` records (padded with carried ones when more are asked), the
    first ``keep`` always among them."""
    out = list(records)
    n = 0
    while len(out) < count:
        out.append(({"name": f"Tensor.__mul__.{n}.forward", "origin": False, "where": f"{SCRIPT}:30",
                     "kind": "forward"}, forward([NANS], [NANS])))
        n += 1
    return out[:max(count, keep)]


def dumps(value) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, allow_nan=True)  # as probe_runtime's writer


def write_folder(folder: Path, step: int, rank: int, records: list) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data, stacks, items = {}, {}, []
    for item, entry in records:
        data[item["name"]] = entry
        if item["kind"] != "backward":
            file, line = item["where"].rsplit(":", 1)
            stacks[str(len(stacks))] = [[item["name"]], [f"File {file}, line {line}, in train_step, \n y = step(x)",
                                                         f"File {file}, line 40, in <module>, \n train_step(x)"]]
        items.append({**item, "step": step, "rank": rank})
    header = {"task": "overflow_check", "level": "L1", "framework": "mindspore",
              "dump_data_dir": str(folder / "dump_tensor_data"), "data": data}
    (folder / "dump.json").write_text(dumps(header), encoding="utf-8")
    (folder / "stack.json").write_text(dumps(stacks), encoding="utf-8")
    (folder / "construct.json").write_text("{}", encoding="utf-8")
    (folder / "overflow.json").write_text(dumps(items), encoding="utf-8")


def make_dump(root: Path, ranks: int, steps: int, records: str = "9", origin_rank: int | None = None,
              seed: int = 0) -> int:
    """Write the dump; returns the number of records written."""
    rng = random.Random(seed)
    low, _, high = records.partition("-")
    low_n, high_n = int(low), int(high or low)
    origin = ranks // 2 if origin_rank is None else origin_rank
    group = list(range(ranks))
    total = 0
    for step in range(steps):
        for rank in range(ranks):
            count = rng.randint(low_n, high_n)
            if step == 0:
                chosen = pick(first_step_records(rank == origin, group), count, 3 if rank == origin else 1)
            else:
                chosen = pick(later_step_records(group), count, 1)
            write_folder(root / f"step{step}" / f"rank{rank}", step, rank, chosen)
            total += len(chosen)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--records", default="9", help="records a folder: K, or LOW-HIGH (random per folder)")
    parser.add_argument("--origin-rank", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="replace DUMP if it exists")
    args = parser.parse_args(argv)
    if args.dump.exists():
        if not args.force:
            print(f"{args.dump} exists (give --force to replace it)", file=sys.stderr)
            return 2
        shutil.rmtree(args.dump)
    total = make_dump(args.dump, args.ranks, args.steps, args.records, args.origin_rank, args.seed)
    print(f"{args.dump}: {args.ranks} ranks x {args.steps} steps, {total} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
