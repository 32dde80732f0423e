"""The runtime's own cost on PyTorch code running on MindSpore (MSAdapter).

Trains a small PyTorch-style MLP on mindnlp 0.5.1's mindtorch (the
environment ``tools/make-msadapter-env.sh`` builds) with nothing
overflowing, in one fresh process per run, every run but ``plain async``
in a process made synchronous throughout (``pynative_synchronize`` before
the first step, what a checked window runs on CPU anyway), so the ratios
are the tool's own cost: the layer's plain step, then the same step under
``PrecisionDebugger`` at L1 and L0, with exact and auto checks; ``plain
async`` (MindSpore's default pipeline) for reference. Runs are interleaved
round by round (the machine is shared); each run's median step time
(``start()`` to ``stop()`` and ``step()`` included, after warm-up steps) is
taken, and the report gives the median over rounds and its ratio to the
plain synchronous step.

    python benchmarks/msadapter_bench.py [--python .mindspore-envs/msadapter/bin/python]
        [--rounds 5] [--steps 30] [--warmup 5] [--width 256]

msprobe 8.3.3 on the same layer, for comparison (issue #36): L1 32-44x,
L0 11-24x the synchronous step.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODES = ("plain", "plain-async", "L1-exact", "L1-auto", "L0-exact", "L0-auto")


def worker(mode: str, steps: int, warmup: int, width: int, dump: str) -> None:
    """One run: print the median step time in seconds as JSON."""
    import numpy as np

    import mindspore
    import mindtorch  # noqa: F401  (then `import torch` loads it)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(width, width)
            self.fc2 = nn.Linear(width, width)
            self.fc3 = nn.Linear(width, 10)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.fc3(torch.tanh(self.fc2(F.relu(self.fc1(x)))))

    rs = np.random.RandomState(0)
    net = Net()
    params = list(net.parameters())
    x = torch.tensor(rs.randn(64, width).astype(np.float32))
    y = torch.tensor(rs.randint(0, 10, size=64).astype(np.int64))
    grad_fn = torch.autograd.value_and_grad(lambda a, b: F.cross_entropy(net(a), b), params)
    debugger = None
    if mode != "plain-async":
        mindspore.set_context(pynative_synchronize=True)
    if not mode.startswith("plain"):
        from probe_runtime import PrecisionDebugger

        level, checks = mode.split("-")
        debugger = PrecisionDebugger(task="overflow_check", dump_path=dump, level=level, checks=checks)
    times = []
    for step in range(warmup + steps):
        began = time.perf_counter()
        if debugger is not None:
            debugger.start(net if debugger.level == "L0" else None)
        grad_fn(x, y)
        with torch.no_grad():
            for p in params:
                p.copy_(p - 0.01 * p.grad)
                p.grad = None
        if debugger is not None:
            debugger.stop()
            debugger.step()
        float(params[0].sum())  # the step's work is done
        if step >= warmup:
            times.append(time.perf_counter() - began)
    print(json.dumps({"mode": mode, "median": statistics.median(times)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=str(REPO / ".mindspore-envs" / "msadapter" / "bin" / "python"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.warmup, args.width, args.dump)
        return 0
    if not Path(args.python).exists():
        print(f"msadapter_bench: no {args.python}: build it with tools/make-msadapter-env.sh", file=sys.stderr)
        return 2
    results: dict[str, list[float]] = {mode: [] for mode in MODES}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBE_")}
    for round_number in range(args.rounds):
        for mode in MODES:
            with tempfile.TemporaryDirectory() as tmp:
                proc = subprocess.run([args.python, __file__, "--worker", mode, "--steps", str(args.steps),
                                       "--warmup", str(args.warmup), "--width", str(args.width),
                                       "--dump", os.path.join(tmp, "dump")],
                                      cwd=tmp, env=env, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return 1
            results[mode].append(json.loads(proc.stdout.strip().splitlines()[-1])["median"])
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    base = statistics.median(results["plain"])
    print("| run | median step | x plain synchronous step |\n|---|---|---|")
    for mode in MODES:
        value = statistics.median(results[mode])
        print(f"| {mode} | {value * 1000:.2f} ms | {value / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
