"""Train a small float16 MLP under probe_runtime's PrecisionDebugger (L0 or L1).

A 3-layer MLP (mindspore.nn.Dense + ReLU, cast to float16 with to_float)
learns a regression on generated data with SGD. At step 3 a batch with an
outlier feature (30000.0, a unit that went wild upstream) arrives: the
forward pass and the loss stay finite, but the weight-gradient matmuls sum
past float16's largest value (65504), so the update writes inf into the
weights and step 4's forward pass carries it. The debugger finds where it
started: the weight-gradient matmuls (``Primitive.MatMul.<n>.backward``)
with the L1 config, the Dense layers' ``parameters_grad`` with the L0
config. The loop
calls ``debugger.start(net)``: level L0 needs the model, L1 ignores it.

Usage:
    PROBE_CONFIG=example-dump/config_l1.json python examples/train_overflow.py
    python examples/train_overflow.py example-dump/config_l1.json
    python examples/train_overflow.py example-dump/config_l0.json
    python examples/train_overflow.py --no-debugger      (timing baseline)
    ... --clean --steps 200                              (no outlier batch; timing)
    ... --clean --steps 200 --interleave                 (debugger on even steps only:
                                                          both medians and their ratio)

The config's dump_path must be absolute (./run-example.sh writes example-dump/
configs with one inside the clone); nothing is deleted there. Ends with a
short summary: what was found, where it started, the dump, the step time.
"""
from __future__ import annotations

import glob
import json
import os
import statistics
import sys
import time

import numpy as np
import mindspore as ms
from mindspore import nn, Tensor

from probe_runtime import PrecisionDebugger

STEPS = 6
OUTLIER_STEP = 3


def make_batches(seed: int = 0, steps: int = STEPS, outlier: bool = True):
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=(32, 1)).astype(np.float32)
    batches = []
    for step in range(steps):
        x = rng.normal(size=(64, 32)).astype(np.float32)
        y = x @ w_true
        if outlier and step == OUTLIER_STEP:
            x[5, :] = 30000.0
        batches.append((Tensor(x.astype(np.float16)), Tensor(y.astype(np.float16))))
    return batches


def build_model():
    ms.set_seed(1)
    net = nn.SequentialCell([nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 64), nn.ReLU(), nn.Dense(64, 1)])
    net.to_float(ms.float16)
    return net


def main(argv: list[str]) -> int:
    ms.set_context(mode=ms.PYNATIVE_MODE)
    use_debugger = "--no-debugger" not in argv
    outlier = "--clean" not in argv
    steps = STEPS
    if "--steps" in argv:
        steps = int(argv[argv.index("--steps") + 1])
        argv = argv[:argv.index("--steps")] + argv[argv.index("--steps") + 2:]
    args = [a for a in argv if not a.startswith("--")]
    os.environ.update({"PROBE_CONFIG": args[0]} if args else {})  # a config named here wins over PROBE_CONFIG
    debugger = PrecisionDebugger() if use_debugger else None  # config_path falls back to PROBE_CONFIG

    net = build_model()
    loss_fn = nn.MSELoss()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)

    def forward(x, y):
        return loss_fn(net(x).astype(ms.float32), y.astype(ms.float32))

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    times, losses = [], []
    verbose = steps <= 20
    interleave = debugger is not None and "--interleave" in argv
    plain_times = []
    for step, (x, y) in enumerate(make_batches(steps=steps, outlier=outlier)):
        checked = debugger is not None and not (interleave and step % 2)
        start = time.perf_counter()
        if checked:
            debugger.start(net)  # L0 hooks net's Cells; L1 ignores the argument
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        if checked:
            debugger.stop()
            debugger.step()
        value = float(loss.asnumpy())
        (times if checked or not interleave else plain_times).append(time.perf_counter() - start)
        losses.append(value)
        if verbose:
            print(f"step {step}: loss {value:.4g}")

    median_ms = statistics.median(times[1:] if len(times) > 1 else times) * 1000
    label = f"with the debugger, level {debugger.level}" if debugger else "without the debugger"
    print(f"median step time: {median_ms:.2f} ms ({label}; first step left out)")
    if interleave and plain_times:
        plain_ms = statistics.median(plain_times) * 1000
        print(f"median step time: {plain_ms:.2f} ms (same process, debugger off on odd steps); "
              f"ratio {median_ms / plain_ms:.3f}")
    if debugger:
        summarise(debugger.dump_path)
    return 0


def summarise(dump_path: str) -> None:
    records = []
    for index in sorted(glob.glob(os.path.join(dump_path, "step*", "rank*", "overflow.json"))):
        with open(index, encoding="utf-8") as f:
            records += [dict(r, file=index) for r in json.load(f)]
    records.sort(key=lambda r: (r.get("step", 0),))
    if not records:  # not "no overflow found": a full disk that turned detection off leaves no record either
        print(f"no overflow record in the dump folder {dump_path}; `probe report {dump_path}` says why")
        return
    print(f"{len(records)} overflow record(s):")
    for r in records:
        mark = "SENTINEL" if r.get("kind") == "sentinel" else "ORIGIN " if r["origin"] else "carried"
        print(f"  step{r.get('step')}: {r['name']:<40} {mark} at {r['where']}")
    named = [r for r in records if r.get("kind") != "sentinel"]  # sentinel checks name no call
    if not named:
        print(f"sentinel checks saw inf/nan; no call named yet: {records[0].get('message')}")
        return
    first = next((r for r in named if r["origin"]), None)
    if first is None:  # it came in (bad data, a weight already inf/nan): `probe report` says from where
        first = named[0]
        print(f"no record is an origin; the first is {first['name']} ({first['where']}): see probe report")
    else:
        print(f"overflow starts at {first['name']} ({first['where']})")
    print(f"dump: {os.path.dirname(first['file'])} (dump.json, stack.json, overflow.json, dump_tensor_data/)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
