"""Shared set-up of the probe_runtime tests: a config file, a process
environment free of launcher variables, and what this MindSpore's build can
run (:func:`missing_kernel`, behind the ``cpu_kernel`` marker)."""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

LAUNCHER_VARIABLES = ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM", "PROBE_CONFIG")


@functools.lru_cache(maxsize=None)
def missing_kernel(function: str, dtype: str, arity: int = 2) -> Optional[str]:
    """None when this MindSpore runs ``mindspore.ops.<function>`` on
    ``arity`` one-element tensors of ``dtype`` (a ``mindspore`` dtype name
    such as ``"bfloat16"``) on the current device; otherwise why not, naming
    the release and the kernel, for a skip reason. Tried once per process.

    Releases differ in the kernels their CPU build has: MindSpore 2.7.0's
    has no bfloat16 ``Mul`` ("Select CPU operator[Mul] fail! Unsupported
    data type!"), 2.10.0's has. Example: ``missing_kernel("mul", "bfloat16")``.
    """
    import mindspore as ms
    import numpy as np

    try:
        value = ms.Tensor(np.ones(1, np.float32)).astype(getattr(ms, dtype))
        getattr(ms.ops, function)(*[value] * arity).asnumpy()
    except Exception as err:  # the kernel selection error's type differs between releases
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"MindSpore {ms.__version__} has no {ms.get_context('device_target')} kernel for ops.{function} " \
               f"on {dtype} ({first})"
    return None


def isolate(monkeypatch: Any, folder: Path) -> None:
    """Run in ``folder`` with no launcher variables and no PROBE_CONFIG, so
    the debugger sees a single process (rank folder ``rank``)."""
    monkeypatch.chdir(folder)
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def write_runtime_config(folder: Path, *, level: str = "L1", nums: int = -1, dump: Optional[Path] = None,
                         **changes: Any) -> Path:
    """``folder/config.json``: an overflow_check config (dump_path
    ``folder/dump`` unless ``dump``), owner-only writable as msprobe wants;
    ``changes`` replace top-level keys (a whole ``overflow_check`` section
    included)."""
    config = {"task": "overflow_check", "dump_path": str(dump or folder / "dump"), "rank": [], "step": [],
              "level": level, "overflow_check": {"overflow_nums": nums}}
    config.update(changes)
    path = folder / "config.json"
    path.write_text(json.dumps(config, indent=4))
    os.chmod(path, 0o640)
    return path


def float16_mlp() -> tuple:
    """(net, optimizer, grad_fn): a float16 MLP 8-16-1 (seed 3), SGD with
    learning rate 0.1, and the value and gradients of its float32 squared
    error, ``grad_fn(x, y)``."""
    import mindspore as ms
    from mindspore import nn

    ms.set_seed(3)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 1)])
    net.to_float(ms.float16)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x, y: ((net(x).astype(ms.float32) - y) ** 2).mean(), None,
                                optimizer.parameters)
    return net, optimizer, grad_fn


def train_mlp(debugger: Any = None, *, level: str = "L1", between: Optional[Callable[[int], None]] = None,
              steps: int = 3, overflow: Callable[[int], bool] = lambda step: step >= 1) -> tuple[list, list]:
    """(losses, gradients) as numpy arrays of ``steps`` training steps of a
    float16 MLP (seed 3) whose input is scaled by 3000, so that it
    overflows, on the steps where ``overflow(step)``; ``debugger`` (if
    any) is started (with the net at L0), stopped and stepped around each
    step, and ``between(step)`` runs after it."""
    import mindspore as ms
    import numpy as np
    from mindspore import Tensor

    ms.set_context(mode=ms.PYNATIVE_MODE)
    net, optimizer, grad_fn = float16_mlp()
    rng = np.random.default_rng(0)
    losses: list = []
    grads_seen: list = []
    try:
        for step in range(steps):
            x = Tensor(rng.normal(size=(4, 8)).astype(np.float16) * (3000 if overflow(step) else 1))
            y = Tensor(rng.normal(size=(4, 1)).astype(np.float32))
            sgd_step(debugger, level, net, grad_fn, optimizer, (x, y), losses, grads_seen)
            if between:
                between(step)
    finally:
        if debugger:
            debugger.stop()
    return losses, grads_seen


def sgd_step(debugger: Any, level: str, net: Any, grad_fn: Callable, optimizer: Any, inputs: tuple,
             losses: list, grads_seen: list) -> None:
    """One training step, checked when ``debugger`` is given (started with
    ``net`` at L0, stopped and stepped after the optimizer); the loss and
    gradients are appended as numpy arrays."""
    if debugger:
        debugger.start(net) if level == "L0" else debugger.start()
    loss, grads = grad_fn(*inputs)
    optimizer(grads)
    if debugger:
        debugger.stop()
        debugger.step()
    losses.append(loss.asnumpy())
    grads_seen.append([g.asnumpy() for g in grads])


def assert_same_training(a: tuple[list, list], b: tuple[list, list]) -> None:
    """Bit-identical losses and gradients (nan equal to nan)."""
    import numpy as np

    for la, lb in zip(a[0], b[0]):
        assert np.array_equal(la, lb, equal_nan=True)
    for ga, gb in zip(a[1], b[1]):
        assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(ga, gb))


class PatchedState:
    """What probe_runtime patches, as it was when this object was made (at a
    test module's import, before any debugger): :meth:`assert_untouched`
    checks it is all back."""

    def __init__(self) -> None:
        import mindspore as ms
        from mindspore import ops
        from mindspore.ops import primitive as primitive_module
        from mindspore.ops.auto_generate import gen_ops_prim

        self.ms, self.ops = ms, ops
        self.exp = ops.exp
        self.prim_call = primitive_module.Primitive.__call__
        self.modules = [(m, dict(vars(m))) for m in (gen_ops_prim, primitive_module)]  # pyboost_<op>, _run_op
        self.tensor = dict(vars(ms.Tensor))
        self.optimizer = dict(vars(ms.nn.Optimizer))  # __call__ is patched while a window is open
        self.parameter = dict(vars(ms.Parameter))  # set_data too
        from mindspore.experimental.optim import Optimizer as TorchStyleOptimizer

        self.torch_style = (TorchStyleOptimizer, dict(vars(TorchStyleOptimizer)))

    def assert_untouched(self, net: Any = None, parked_ok: bool = False) -> None:
        """Every patch, hook and the execution mode are back (and the Cells
        of ``net`` carry no forward hook). ``parked_ok``: after a
        ``stop()`` whose next step is checked, L1's patches may stay in
        place, inert (``ApiInterceptor.park``): they must hand calls on
        (the checker not live), and removing them must put everything back."""
        from types import ModuleType

        from probe_runtime.l1.interceptor import ApiInterceptor

        active = ApiInterceptor._active
        if parked_ok and active is not None:
            assert active.parked and not active.sink.live
            active.uninstall()
        ms, ops = self.ms, self.ops
        assert ops.exp is self.exp
        assert type(ops) is ModuleType and type(ms.mint) is ModuleType  # the namespaces' classes are put back
        assert ops.primitive.Primitive.__call__ is self.prim_call
        assert dict(vars(ms.Tensor)) == self.tensor
        assert dict(vars(ms.nn.Optimizer)) == self.optimizer
        assert dict(vars(ms.Parameter)) == self.parameter
        assert dict(vars(self.torch_style[0])) == self.torch_style[1]
        for module, saved in self.modules:
            assert dict(vars(module)) == saved
        assert not ms.get_context("pynative_synchronize")
        if net is not None:
            for _, cell in net.cells_and_names():
                assert not cell._forward_pre_hook and not cell._forward_hook


def dump_records(dump: Path) -> list:
    """Every overflow.json record under ``dump``, in step order: [(step, record)]."""
    out = []
    for path in sorted(dump.glob("step*/rank/overflow.json"), key=lambda p: int(p.parent.parent.name[4:])):
        step = int(path.parent.parent.name[4:])
        out.extend((step, record) for record in json.loads(path.read_text()))
    return out


def run_default_and_exact(tmp_path: Path, monkeypatch: Any, scenario: Callable[[Any], None],
                          original: PatchedState, *, level: str = "L1", nums: int = -1) -> list:
    """``scenario(debugger)`` under the default checks, then under exact
    checks, each with a fresh dump folder; [default records, exact records]
    (:func:`dump_records`). Asserts everything is as ``original`` (made at
    the test module's import) afterwards."""
    from probe_runtime import PrecisionDebugger

    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    results = []
    for checks in (None, "exact"):
        folder = tmp_path / (checks or "default")
        folder.mkdir()
        config = write_runtime_config(folder, level=level, nums=nums)
        debugger = PrecisionDebugger(config_path=str(config), checks=checks)
        try:
            scenario(debugger)
        finally:
            debugger.stop()
            debugger.windows.summary.said = True
        results.append(dump_records(folder / "dump"))
    original.assert_untouched(parked_ok=True)
    return results


def _stats_finite(value: Any, minus_inf_ok: bool = False, complex_unknown: bool = False) -> bool:
    """Every tensor statistics object inside ``value`` (dump.json nesting)
    has finite Max/Min/Mean/Norm (None counts as finite); with
    ``minus_inf_ok`` a tensor whose only non-finite values are -inf (Min
    -inf, Max and Mean neither NaN nor +inf: a mask made by design) counts
    too. A complex tensor has no statistics (all None): with
    ``complex_unknown`` it counts as not shown finite."""
    import math

    def number(stats: dict, key: str) -> float:
        item = stats.get(key)
        return item if isinstance(item, float) else 0.0

    if isinstance(value, dict):
        if "Max" in value and ("dtype" in value or "type" in value):
            if complex_unknown and str(value.get("dtype", "")).startswith("Complex"):
                return False
            if all(not isinstance(value.get(k), float) or math.isfinite(value[k])
                   for k in ("Max", "Min", "Mean", "Norm")):
                return True
            top, low, mean = number(value, "Max"), number(value, "Min"), number(value, "Mean")
            return minus_inf_ok and low == -math.inf and not math.isnan(top) and top != math.inf \
                and not math.isnan(mean) and mean != math.inf
        return all(_stats_finite(v, minus_inf_ok, complex_unknown) for v in value.values())
    if isinstance(value, list):
        return all(_stats_finite(v, minus_inf_ok, complex_unknown) for v in value)
    return True


def assert_origin_invariant(dump_path: Path) -> int:
    """Every record under ``dump_path`` (any step and rank) marked origin in
    overflow.json has all its dumped inputs finite or -inf only by design
    (``input_args``, ``input_kwargs``, an L0 Cell's ``parameters``: a
    frozen mask; a backward entry's ``input``) and some dumped output not (``output``, and ``written``:
    what a call left in the Parameters it wrote in place); returns the
    number of records checked. An L0 model or Cell recorded because its
    own ``construct`` handed a sub-Cell inf/nan made from finite inputs
    (``entered.source`` ``own-construct``, "handed a sub-Cell") may return
    finite values (a step Cell returning its loss): the record after it,
    when written, is then that sub-Cell's, and its dumped inputs are not
    all finite."""
    from probe_runtime.dump.writer import read_json

    checked = 0
    for index in sorted(Path(dump_path).glob("step*/rank*/overflow.json")):
        data: dict = {}
        listed = read_json(str(index))
        for position, record in enumerate(listed):
            checked += 1
            if record.get("kind") == "sentinel":  # names no call: no dump.json entry
                assert not record["origin"], f"{index}: a sentinel record is never an origin"
                continue
            if not record["origin"]:
                continue
            data = data or read_json(str(index.parent / "dump.json"))["data"]
            entry = data[record["name"]]
            name = record["name"]
            if name.endswith(".parameters_grad"):
                inputs, outputs = [], list(entry.values())
            elif "input" in entry:  # backward
                inputs, outputs = [entry["input"]], [entry["output"]]
            else:
                inputs = [entry.get("input_args"), entry.get("input_kwargs"), entry.get("parameters")]
                outputs = [entry.get("output"), entry.get("written")]
            assert _stats_finite(inputs, minus_inf_ok=True), \
                f"{index}: {name} is an origin but a dumped input holds NaN or +inf"
            entered = record.get("entered") or {}
            if entered.get("source") == "own-construct" and "handed a sub-" in entered.get("message", ""):
                if position + 1 < len(listed):
                    fed = data[listed[position + 1]["name"]]
                    assert not _stats_finite([fed.get("input_args"), fed.get("input_kwargs"), fed.get("input")]), \
                        f"{index}: {name} handed a sub-Cell inf/nan, but the next record's inputs are finite"
                continue
            assert not _stats_finite(outputs, complex_unknown=True), \
                f"{index}: {name} is an origin but every dumped output is finite"
    return checked
