"""Where the L1 detector's own cost goes: the same measurement with parts of
the detector switched off (an ablation, not a mode anyone should run).

Each part is switched off by replacing one method or function (mostly of
``probe_runtime.l1.wrappers.Wrappers``) in a worker process that is
synchronous throughout (``pynative_synchronize=True``), so the figure is the
detector's own cost, as the ``L1 sy`` column of ``runtime_bench.py``:

* ``full``: the detector as shipped;
* ``no input hooks``: no ``ops.HookBackward`` on a call's inputs (its
  outputs keep theirs): the gradients w.r.t. the inputs are not seen;
* ``no host reads``: every tensor taken as finite without a read
  (``HostCache.finite``), so nothing is checked: what the reads cost;
* ``no caller frames``: no ``(file, line, function)`` walk per call;
* ``no Parameter probes``: no host check of each Parameter at its first
  use in a window;
* ``no backward hooks``: no ``ops.HookBackward`` on a call's inputs and
  outputs (``_grad_flag`` answers False), so no backward entry is made at
  all: what a mode that checked gradients only in aggregate could at best
  save;
* ``no backward hooks, no Parameter probes``: also no host check of each
  Parameter at its first use in a window.

What is left in the last row is the forward path: the wrappers (entry
object, caller's frames, call index), the host read of every floating
input and output, and patching at ``start()``/``stop()``.

``--floor`` prints, per model, the least any exact per-call check can cost
on this backend, from MindSpore's own mechanisms alone: one
``HookBackward`` per call that takes part in the backward pass (the fewest
that can see each call's gradients; the detector uses two, on the inputs
and on the outputs) and one host read of each tensor the detector reads,
each at its bare cost measured in the same process (a shared
``HookBackward`` in a ``value_and_grad`` of ``relu`` calls, ``asnumpy``
and ``numpy.isfinite`` on the step's own tensors), over the plain step:
``(plain + calls * hook + reads * read) / plain``. The detector's own
bookkeeping and patching come on top of that figure. With ``--level L0``
the same for Cells: one ``HookBackward`` per Cell call in the backward
pass and one read per tensor L0 reads. ``2 hooks`` adds a second hook per
call at the same bare cost: a backward entry holds the gradients w.r.t.
a call's outputs and w.r.t. its inputs, two points of the autograd graph
one hook cannot both see (a call's input hook could stand for its
producer's output hook only when nothing else consumes that output,
which is not known while the forward pass runs).

Per model (float32; ``runtime_bench.build``), one worker per variant, each
timing checked steps (``start()`` .. ``stop(); step()``) alternating with
unchecked ones in the same process; prints the median step times and their
ratio (checked / unchecked).

Usage::

    python benchmarks/runtime_parts.py [--models mlp,transformer] [--steps 30]
    python benchmarks/runtime_parts.py --floor [--models mlp,cnn,transformer,resnet] [--dtypes float32,float16]
    python benchmarks/runtime_parts.py --floor --level L0 [--models ...] [--dtypes ...]
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
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: variant -> what is replaced (a Wrappers method unless `worker` says otherwise)
VARIANTS = {
    "full": (),
    "no input hooks": ("_hook_inputs",),
    "no host reads": ("finite",),
    "no caller frames": ("capture_frames",),
    "no Parameter probes": ("_probe_parameters",),
    "no backward hooks": ("_grad_flag",),
    "no backward hooks, no Parameter probes": ("_grad_flag", "_probe_parameters"),
}


def _stepper(model: str, dtype: str, level: str = "L1"):
    """A synchronous process's debugger (``level``, exact) and ``one_step(i,
    checked) -> seconds`` for ``model`` in ``dtype`` (``runtime_bench.build``):
    checked steps run ``start(net)`` .. ``stop(); step()`` around the step."""
    sys.path[:0] = [HERE, ROOT]
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU", pynative_synchronize=True)
    import runtime_bench
    from probe_runtime import PrecisionDebugger

    folder = tempfile.mkdtemp(prefix="probe-parts-")
    config = os.path.join(folder, "config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump({"task": "overflow_check", "dump_path": os.path.join(folder, "dump"), "rank": [], "step": [],
                   "level": level, "overflow_check": {"overflow_nums": 1}}, f)
    debugger = PrecisionDebugger(config_path=config)
    net, forward, optimizer, batches, _ = runtime_bench.build(model, dtype)
    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    def one_step(i: int, checked: bool) -> float:
        x, y = batches[i % len(batches)]
        start = time.perf_counter()
        if checked:
            debugger.start(net)
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        if checked:
            debugger.stop()
            debugger.step()
        loss.asnumpy()
        return time.perf_counter() - start

    return debugger, one_step


def _interleaved(one_step, steps: int, warmup: int, debugger: Any = None, block: int = 3) -> tuple[list, list]:
    """Checked and unchecked step times, in blocks of ``block`` steps
    alternating which comes first. Each checked block starts with one
    untimed checked step, and L1's patches, left in place between checked
    steps (``ApiInterceptor.park``), are removed before an unchecked block
    (untimed): the checked steps cost what a loop checking every step
    pays, the unchecked ones are plain."""
    on: list[float] = []
    off: list[float] = []

    def plain(i: int) -> list[float]:
        unpark = getattr(getattr(getattr(debugger, "windows", None), "exact", None), "unpark", None)
        if unpark is not None:
            unpark()
        return [one_step(i + k, False) for k in range(block)]

    def checked(i: int) -> list[float]:
        one_step(i, True)
        return [one_step(i + k, True) for k in range(block)]

    for r in range(warmup + steps // block + 1):
        i = r * block
        first, second = (checked, plain) if r % 2 else (plain, checked)
        a, b = first(i), second(i)
        if r >= warmup:
            (on if first is checked else off).extend(a)
            (off if first is checked else on).extend(b)
    return on, off


def worker(model: str, variant: str, steps: int, warmup: int) -> dict:
    """Median checked and unchecked step times (s) of ``model`` (float32) with
    the parts of ``VARIANTS[variant]`` switched off, in this process."""
    sys.path[:0] = [HERE, ROOT]
    import probe_runtime.l1.wrappers as wrappers
    from probe_runtime.check.verdict import HostCache

    replaced: dict[str, tuple[Any, Any]] = {  # name -> (owner, stand-in)
        "_grad_flag": (wrappers.Wrappers, lambda self, *a: False),
        "_hook_inputs": (wrappers.Wrappers, lambda self, call, args, hooked=None: args),
        "finite": (HostCache, lambda self, tensor: True),
        "capture_frames": (wrappers, lambda frame, limit=32: ()),
    }
    for name in VARIANTS[variant]:
        owner, stand_in = replaced.get(name, (wrappers.Wrappers, lambda self, *a: None))
        setattr(owner, name, stand_in)
    debugger, one_step = _stepper(model, "float32")
    on, off = _interleaved(one_step, steps, warmup, debugger)
    return {"checked": statistics.median(on), "plain": statistics.median(off),
            "records": debugger.checker.state.found}


def floor_worker(model: str, dtype: str, steps: int, warmup: int, level: str = "L1") -> dict:
    """The floor of ``--floor`` for ``model`` in ``dtype`` at ``level``, in
    this process: the plain and checked median step times (s), the calls
    (L1) or Cell calls (L0) hooked for the backward pass and the tensors
    read per checked step, the bare cost (s) of one ``HookBackward`` use
    and of one host read, and the floor ratio."""
    debugger, one_step = _stepper(model, dtype, level)
    import mindspore as ms
    import numpy as np
    from mindspore import ops

    from probe_runtime.check import verdict
    from probe_runtime.hooks.backward import HookMaker
    from probe_runtime.l0.cell_hooks import CellHooks
    from probe_runtime.l1.wrappers import Wrappers

    counts = {"calls": 0, "reads": 0}
    seen: list = []
    hooker: Any = CellHooks if level == "L0" else Wrappers
    hook_outputs, read = hooker._hook_outputs, verdict.HostCache._read

    def counted_hook_outputs(self, call, output):  # a call whose outputs take part in the backward pass
        hooked = hook_outputs(self, call, output)
        counts["calls"] += hooked is not None
        return hooked

    def counted_read(self, tensor, name, where=False):
        counts["reads"] += 1
        seen.append(tensor)
        return read(self, tensor, name, where)

    on, off = _interleaved(one_step, steps, warmup, debugger)
    hooker._hook_outputs, verdict.HostCache._read = counted_hook_outputs, counted_read
    one_step(0, True)
    hooker._hook_outputs, verdict.HostCache._read = hook_outputs, read

    reads = []
    for _ in range(5):
        start = time.perf_counter()
        for tensor in seen:
            bool(np.isfinite(tensor.asnumpy()).all())
        reads.append((time.perf_counter() - start) / max(len(seen), 1))

    maker = HookMaker(ops.HookBackward, ms.__version__)  # as the detector makes them (shared where it can)
    sample = ops.ones((64, 256), ms.float32)
    chain = 50

    def relus(t, hooked):
        for _ in range(chain):
            t = ops.relu(t)
            if hooked:
                t = maker(lambda *grads: None)(t)
        return t.sum()

    timings: dict[bool, list[float]] = {False: [], True: []}
    for hooked in (False, True) * 12:
        fn = ms.value_and_grad(lambda t, hooked=hooked: relus(t, hooked))
        start = time.perf_counter()
        fn(sample)[0].asnumpy()
        timings[hooked].append(time.perf_counter() - start)
    hook = max((statistics.median(timings[True][2:]) - statistics.median(timings[False][2:])) / chain, 0.0)
    plain = statistics.median(off)
    read_cost = statistics.median(reads)
    floor = (plain + counts["calls"] * hook + counts["reads"] * read_cost) / plain
    return {"plain": plain, "checked": statistics.median(on), "calls": counts["calls"], "reads": counts["reads"],
            "hook": hook, "read": read_cost, "floor": floor, "floor2": floor + counts["calls"] * hook / plain}


def print_floor(models: list[str], dtypes: list[str], steps: int, warmup: int, level: str = "L1") -> None:
    """Run :func:`floor_worker` per model and dtype in fresh processes and
    print the table."""
    unit = "Cell call" if level == "L0" else "call"
    print(f"The least an exact per-{unit} {level} check costs here from MindSpore's own mechanisms (one "
          f"HookBackward per {unit} in the backward pass, one host read per tensor read), against the detector's "
          "own cost; process synchronous throughout, medians")
    print(f"{'model':<12} {'dtype':<8} {'plain ms':>9} {'calls':>6} {'reads':>6} {'hook us':>8} {'read us':>8} "
          f"{'floor':>6} {'2 hooks':>8} {'detector':>9}")
    for model in models:
        for dtype in dtypes:
            with tempfile.TemporaryDirectory() as cwd:  # a failed graph compile writes rank_0/ here
                done = subprocess.run([sys.executable, os.path.abspath(__file__), "--floor-worker", model, dtype,
                                       "--steps", str(steps), "--warmup", str(warmup), "--level", level],
                                      cwd=cwd, capture_output=True, text=True)
            if done.returncode:
                print(f"{model:<12} {dtype:<8} worker failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{model:<12} {dtype:<8} {r['plain'] * 1e3:9.2f} {r['calls']:6d} {r['reads']:6d} "
                  f"{r['hook'] * 1e6:8.1f} {r['read'] * 1e6:8.1f} {r['floor']:6.2f} {r['floor2']:8.2f} "
                  f"{r['checked'] / r['plain']:9.2f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,transformer")
    parser.add_argument("--steps", type=int, default=30, help="checked (and as many unchecked) steps per worker")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--worker", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--floor", action="store_true",
                        help="the least an exact per-call check costs from MindSpore's own mechanisms")
    parser.add_argument("--dtypes", default="float32", help="with --floor")
    parser.add_argument("--level", default="L1", choices=("L1", "L0"), help="with --floor")
    parser.add_argument("--floor-worker", nargs=2, metavar=("MODEL", "DTYPE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor_worker:
        print(json.dumps(floor_worker(args.floor_worker[0], args.floor_worker[1], args.steps, args.warmup,
                                      args.level)))
        return 0
    if args.floor:
        print_floor(args.models.split(","), args.dtypes.split(","), args.steps, args.warmup, args.level)
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
        target = "L0 <= 1.15" if args.level == "L0" else "L1 <= 1.30"
        print(f"targets (issue 33, exact checks the default): {target}; load average at end {load}")
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.steps, args.warmup)))
        return 0
    print("L1 own cost with parts switched off (float32, process synchronous throughout; checked / unchecked "
          "step time, medians)")
    print(f"{'model':<12} {'variant':<40} {'plain ms':>9} {'checked ms':>11} {'ratio':>6}")
    for model in args.models.split(","):
        for variant in VARIANTS:
            with tempfile.TemporaryDirectory() as cwd:  # a failed graph compile writes rank_0/ here
                done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", model, variant,
                                       "--steps", str(args.steps), "--warmup", str(args.warmup)],
                                      cwd=cwd, capture_output=True, text=True)
            if done.returncode:
                print(f"{model:<12} {variant:<40} worker failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{model:<12} {variant:<40} {r['plain'] * 1e3:9.2f} {r['checked'] * 1e3:11.2f} "
                  f"{r['checked'] / r['plain']:6.2f}")
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"targets (issue 15): L1 own cost <= 1.30; load average at end {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
