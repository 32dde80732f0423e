"""Level L2 on the CPU backend: the checked step against the plain step,
and the cost of an overflowing step (issue 35).

One process, synchronous (the CPU backend), a graph-mode MLP trained
with a ``TrainOneStepCell``. The debugger is built first (MindSpore's dump
config must be set before the first compile); a plain step is the compiled
step called outside a ``start()``/``stop()`` window, a checked step the
same call inside one (snapshot, run, check). Blocks of plain and checked
steps are interleaved (the machine is shared and noisy); medians and their
ratio are printed (target <= 1.2). Then ``--overflows`` steps are fed an
input that overflows (``exp`` of a large activation): each is checked,
replayed under MindSpore's kernel dump and scanned; the median time of
such a step, its ratio to a plain step, and the disk each one leaves in
dump_path (MindSpore's own dump is removed after the scan) are printed.

Usage::

    python benchmarks/l2_bench.py [--width 512] [--depth 4] [--batch 64] [--steps 200] [--overflows 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200, help="plain and checked steps, each")
    parser.add_argument("--overflows", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="l2_bench_"))
    os.environ["TMPDIR"] = str(work)
    config = work / "config.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(work / "dump"), "rank": [], "step": [],
                                  "level": "L2", "overflow_check": {"overflow_nums": -1}}))
    os.chmod(config, 0o640)
    os.chdir(work)

    import numpy as np

    import mindspore as ms
    from mindspore import nn, ops

    from probe_runtime import PrecisionDebugger

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    debugger = PrecisionDebugger(config_path=str(config))

    class Mlp(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            layers = [nn.Dense(args.width, args.width) for _ in range(args.depth)]
            self.layers = nn.CellList(layers)
            self.head = nn.Dense(args.width, 10)

        def construct(self, x):
            for layer in self.layers:
                x = ops.relu(layer(x))
            return self.head(ops.exp(x))

    ms.set_seed(0)
    net = Mlp()
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.Momentum(net.trainable_params(), 1e-4, 0.9))
    x = ms.Tensor(np.random.default_rng(0).normal(0, 0.01, (args.batch, args.width)).astype(np.float32))
    y = ms.Tensor(np.zeros((args.batch, 10), np.float32))
    train(x, y)  # compile

    def plain() -> float:
        start = time.perf_counter()
        train(x, y).asnumpy()
        return time.perf_counter() - start

    def checked() -> float:
        start = time.perf_counter()
        debugger.start()
        train(x, y).asnumpy()
        debugger.stop()
        debugger.step()
        return time.perf_counter() - start

    plain_times: list[float] = []
    checked_times: list[float] = []
    block = 10
    for _ in range(max(1, args.steps // block)):
        plain_times += [plain() for _ in range(block)]
        checked_times += [checked() for _ in range(block)]
    p, c = statistics.median(plain_times), statistics.median(checked_times)
    params = sum(int(np.prod(q.shape)) for q in train.get_parameters())
    print(f"MindSpore {ms.__version__}, CPU, GRAPH_MODE; MLP {args.depth}x{args.width}, batch {args.batch}, "
          f"{params} Parameter values (with the optimizer's)")
    print(f"plain step   {p * 1000:8.2f} ms (median of {len(plain_times)})")
    print(f"checked step {c * 1000:8.2f} ms (median of {len(checked_times)})  ratio {c / p:.2f}")

    big = ms.Tensor(np.full((args.batch, args.width), 1e4, np.float32))
    dump = work / "dump"
    costs, disks = [], []
    for _ in range(args.overflows):
        before = folder_bytes(dump)
        step_folder = dump / f"step{debugger.state.step}"
        snapshot = {n: q.asnumpy().copy() for n, q in train.parameters_and_names()}
        start = time.perf_counter()
        debugger.start()
        train(big, y).asnumpy()
        debugger.stop()
        debugger.step()
        costs.append(time.perf_counter() - start)
        disks.append(folder_bytes(dump) - before)
        assert step_folder.exists(), "the overflow was not recorded"
        for n, q in train.parameters_and_names():  # back to finite Parameters for the next one
            ops.assign(q, ms.Tensor(snapshot[n]))
    first = json.loads((dump / "step" f"{debugger.state.step - 1}" / "rank" / "overflow.json").read_text())[0]
    o = statistics.median(costs)
    print(f"overflowing step {o * 1000:8.1f} ms (median of {len(costs)}: check, replay under the dump, scan, "
          f"write)  = {o / p:.1f} plain steps")
    print(f"disk per overflow {statistics.median(disks) / 1e6:.3f} MB in dump_path "
          f"(first record: {first['name']}, origin={first['origin']})")
    debugger.finish()


if __name__ == "__main__":
    main()
