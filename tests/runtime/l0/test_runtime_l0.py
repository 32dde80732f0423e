"""probe_runtime L0 (Cell level) in MindSpore PyNative, in this process (CPU).

Each test builds its own debugger with a fresh dump folder and always stops
it; ``assert_unhooked`` checks that no Cell or Parameter hook is left.
"""
from __future__ import annotations

import json
import os
import logging
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Parameter, Tensor, nn, ops  # noqa: E402

from probe_runtime import OverflowCheckCallback, PrecisionDebugger, UsageError  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_support import assert_origin_invariant, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)


def write_config(folder: Path, level: str = "L0", nums: int = -1) -> Path:
    return write_runtime_config(folder, level=level, nums=nums)


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def make(level: str = "L0", nums: int = -1):
        debugger = PrecisionDebugger(config_path=str(write_config(tmp_path, level, nums)))
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
        assert not debugger.cells.installed
        assert_origin_invariant(debugger.dump_path)


def assert_unhooked(*nets):
    for net in nets:
        for _, cell in net.cells_and_names():
            assert not cell._forward_pre_hook and not cell._forward_hook, type(cell).__name__


def records(tmp_path, step=0):
    index = tmp_path / "dump" / f"step{step}" / "rank" / "overflow.json"
    return read_json(str(index)) if index.exists() else []


def names(tmp_path, step=0):
    return [r["name"] for r in records(tmp_path, step)]


def origins(tmp_path, step=0):
    return {r["name"]: r["origin"] for r in records(tmp_path, step)}


def step_file(tmp_path, name, step=0):
    return read_json(str(tmp_path / "dump" / f"step{step}" / "rank" / name))


def fp16(*shape_and_value):
    *shape, value = shape_and_value
    return Tensor(np.full(shape, value, np.float16))


class Lin(nn.Cell):
    """x @ w with a fixed all-ones float16 weight: 4 * 30000 overflows."""

    def __init__(self, n=4):
        super().__init__()
        self.weight = Parameter(Tensor(np.ones((n, n), np.float16)), name="weight")

    def construct(self, x):
        return ops.matmul(x, self.weight)


class Inner(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = Lin()

    def construct(self, x):
        return ops.exp(self.fc(x))


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def construct(self, x):
        return self.inner(x) * 0.5


class Top(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.block(x))


# -- origin, names, construct.json --------------------------------------------------
def test_innermost_origin_and_construct(work):
    tmp_path, make = work
    net = Top()
    debugger = make(nums=-1)
    debugger.start(net)
    net(fp16(2, 4, 3.0))  # exp(12) = 162755 > 65504: the overflow starts in Inner itself
    debugger.stop()
    assert names(tmp_path) == ["Cell.block.inner.Inner.forward.0", "Cell.block.Block.forward.0",
                               "Cell.act.ReLU.forward.0"]
    assert origins(tmp_path) == {"Cell.block.inner.Inner.forward.0": True, "Cell.block.Block.forward.0": False,
                                 "Cell.act.ReLU.forward.0": False}
    construct = step_file(tmp_path, "construct.json")
    assert construct["Cell.block.inner.Inner.forward.0"] == "Cell.block.Block.forward.0"
    assert construct["Cell.block.Block.forward.0"] is None and construct["Cell.act.ReLU.forward.0"] is None
    assert "Cell.Top" not in json.dumps(construct)  # the model passed in is not recorded
    entry = step_file(tmp_path, "dump.json")["data"]["Cell.block.inner.Inner.forward.0"]
    assert entry["input_args"][0]["Max"] == 3.0 and entry["output"][0]["Max"] == float("inf")
    stack = step_file(tmp_path, "stack.json")
    assert stack["0"][0] == ["Cell.block.inner.Inner.forward.0"]
    assert records(tmp_path)[0]["where"].startswith(__file__)
    assert_unhooked(net)


def test_overflow_nums_one_keeps_the_innermost_only(work):
    tmp_path, make = work
    net = Top()
    debugger = make(nums=1)
    debugger.start(net)
    net(fp16(2, 4, 30000.0))  # the matmul in block.inner.fc overflows
    debugger.stop()
    assert names(tmp_path) == ["Cell.block.inner.fc.Lin.forward.0"]
    assert records(tmp_path)[0]["origin"] is True
    construct = step_file(tmp_path, "construct.json")
    assert construct == {"Cell.block.inner.fc.Lin.forward.0": "Cell.block.inner.Inner.forward.0",
                         "Cell.block.inner.Inner.forward.0": "Cell.block.Block.forward.0",
                         "Cell.block.Block.forward.0": None}
    assert not debugger.cells.installed  # limit reached: hooks gone at once


@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on views / HookBackward
def test_cell_called_twice_gets_two_indices(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work

    class Twice(nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def construct(self, x):
            return self.inner(self.inner(x) * 0.0 + 3.0)

    net = Twice()
    debugger = make()
    debugger.start(net)
    net(fp16(2, 4, -1.0))  # 1st call: exp(-4) finite; 2nd call: exp(12) overflows
    debugger.stop()
    assert names(tmp_path) == ["Cell.inner.Inner.forward.1"]
    assert debugger.state.counters["Cell.inner.Inner"] == 2
    assert debugger.state.counters["Cell.inner.fc.Lin"] == 2


def test_list_of_cells(work):
    tmp_path, make = work
    first, second = Block(), Block()
    debugger = make()
    debugger.start([first, second])
    first(fp16(2, 4, -1.0))
    second(fp16(2, 4, 3.0))
    debugger.stop()
    assert names(tmp_path) == ["Cell.1.inner.Inner.forward.0"]
    assert step_file(tmp_path, "construct.json")["Cell.1.inner.Inner.forward.0"] is None
    assert_unhooked(first, second)


# -- backward and parameter gradients ---------------------------------------------
class Scale(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((1,), np.float16)), name="w")

    def construct(self, x):
        return x * self.w


class ScaleNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = Scale()

    def construct(self, x):
        return self.scale(x)


@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on views / HookBackward
def test_a_float16_loss_outside_the_cells_is_named_before_the_backward(work, monkeypatch, sync):
    """The same step with the loss summed in float16 outside the Cells:
    that sum is inf in the forward pass, so it is said first (``outside``)
    and the Parameter gradient that overflows after it is not an origin,
    as level L1 would name the sum (issue 33)."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    net = ScaleNet()
    debugger = make()
    grad_fn = ms.grad(lambda x: net(x).sum(), None, net.trainable_params())
    debugger.start(net)
    grad_fn(fp16(4, 60000.0))
    debugger.stop()
    assert names(tmp_path) == ["outside", "Cell.scale.Scale.parameters_grad"]
    first, second = records(tmp_path)
    assert "(the loss)" in first["message"] and not second["origin"]


@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on views / HookBackward
def test_parameter_gradient_overflow(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    net = ScaleNet()
    debugger = make()
    # the loss summed in float32, so it is finite (in float16 the sum, outside the Cells, would be inf first)
    grad_fn = ms.grad(lambda x: net(x).astype(ms.float32).sum(), None, net.trainable_params())
    debugger.start(net)
    grads = grad_fn(fp16(4, 60000.0))  # forward finite; d/dw = 4 * 60000 > 65504
    debugger.stop()
    assert np.isinf(grads[0].asnumpy()).all()
    assert names(tmp_path) == ["Cell.scale.Scale.parameters_grad"]
    assert records(tmp_path)[0]["origin"] is True
    entry = step_file(tmp_path, "dump.json")["data"]["Cell.scale.Scale.parameters_grad"]
    assert list(entry) == ["w"] and entry["w"][0]["Max"] == float("inf")
    assert entry["w"][0]["data_name"] == "Cell.scale.Scale.parameters_grad.w.npy"
    assert (tmp_path / "dump/step0/rank/dump_tensor_data/Cell.scale.Scale.parameters_grad.w.npy").exists()


@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on views / HookBackward
def test_backward_only_overflow(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work

    class Root(nn.Cell):
        def construct(self, x):
            return ops.sqrt(x)

    class RootNet(nn.Cell):
        def __init__(self):
            super().__init__()
            self.root = Root()

        def construct(self, x):
            return self.root(x)

    net = RootNet()
    debugger = make()
    x = Tensor(np.array([0.0, 4.0], np.float32))
    debugger.start(net)
    grad = ms.grad(lambda t: net(t).sum())(x)  # forward finite; d sqrt/dx at 0 is inf
    debugger.stop()
    assert np.isinf(grad.asnumpy()[0])
    assert names(tmp_path) == ["Cell.root.Root.backward.0"]
    assert records(tmp_path)[0]["origin"] is True
    entry = step_file(tmp_path, "dump.json")["data"]["Cell.root.Root.backward.0"]
    assert entry["input"][0]["Max"] == 1.0 and entry["output"][0]["Max"] == float("inf")
    assert step_file(tmp_path, "construct.json") == {"Cell.root.Root.backward.0": None}


@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on views / HookBackward
def test_backward_innermost_and_parents(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work

    class Wrap(nn.Cell):
        def __init__(self):
            super().__init__()
            self.pre = Scale()

        def construct(self, x):
            return ops.sqrt(self.pre(x))

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.wrap = Wrap()

        def construct(self, x):
            return self.wrap(x) * 2.0

    net = Net()
    debugger = make()
    x = Tensor(np.array([0.0, 4.0], np.float16))
    debugger.start(net)
    ms.grad(lambda t: net(t).sum())(x)
    debugger.stop()
    found = origins(tmp_path)
    assert found["Cell.wrap.Wrap.backward.0"] is True  # the sqrt is Wrap's own op
    assert found["Cell.wrap.pre.Scale.backward.0"] is False  # carries the inf on
    construct = step_file(tmp_path, "construct.json")
    assert construct["Cell.wrap.pre.Scale.backward.0"] == "Cell.wrap.Wrap.backward.0"


# -- special Cells --------------------------------------------------------------------
@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on views / HookBackward
def test_custom_bprop_keeps_forward_records(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work

    class Custom(nn.Cell):
        def construct(self, x):
            return ops.exp(x)

        def bprop(self, x, out, dout):
            return (dout * 2.0,)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.custom = Custom()
            self.pre = Scale()

        def construct(self, x):
            return self.custom(self.pre(x))

    net = Net()
    debugger = make()
    debugger.start(net)
    grad = ms.grad(lambda t: net(t).sum())(fp16(2, 12.0))
    debugger.stop()
    assert np.allclose(grad.asnumpy(), 2.0)  # the custom bprop still decides the gradient
    assert names(tmp_path) == ["Cell.custom.Custom.forward.0"] and records(tmp_path)[0]["origin"] is True
    assert_unhooked(net)


def test_jit_cells_are_named_once(work, caplog):
    tmp_path, make = work

    class Compiled(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = Lin()

        @ms.jit(capture_mode="bytecode")
        def construct(self, x):
            return self.fc(x)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.graph = Compiled()
            self.act = nn.ReLU()

        def construct(self, x):
            return self.act(self.graph(x))

    net = Net()
    debugger = make()
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        for step in range(2):
            debugger.start(net)
            net(fp16(2, 4, 30000.0))
            debugger.stop()
            debugger.step()
    jit_messages = [r.getMessage() for r in caplog.records if "mindspore.jit" in r.getMessage()]
    assert len(jit_messages) == 1
    assert "graph (Compiled" in jit_messages[0] and "graph.fc" in jit_messages[0]
    # the jit Cell's own inputs and outputs are still checked: it is where the inf shows
    assert names(tmp_path) == ["Cell.graph.Compiled.forward.0", "Cell.act.ReLU.forward.0"]
    assert records(tmp_path)[0]["origin"] is True


# -- usage ------------------------------------------------------------------------------
def test_start_without_model_is_refused(work):
    tmp_path, make = work
    debugger = make()
    with pytest.raises(UsageError) as info:
        debugger.start()
    assert isinstance(info.value, ValueError) and "debugger.start(model)" in str(info.value)
    with pytest.raises(UsageError):
        debugger.start("not a cell")
    with pytest.raises(UsageError) as info:
        OverflowCheckCallback(debugger)
    assert "model=net" in str(info.value)
    make(level="L1").start()  # L1 needs no model


def test_hooks_removed_after_stop_and_restart(work):
    tmp_path, make = work
    net = ScaleNet()
    debugger = make()
    seen = []
    debugger.start(net)
    assert net.scale._forward_pre_hook and debugger.cells.installed
    debugger.stop()
    assert_unhooked(net)
    original = debugger.checker.on_param_grad
    debugger.checker.on_param_grad = lambda entry: (seen.append(entry), original(entry))
    ms.grad(lambda x: net(x).astype(ms.float32).sum(), None, net.trainable_params())(fp16(4, 60000.0))
    assert seen == [] and names(tmp_path) == []  # no Parameter hook left either
    debugger.step()
    debugger.start(net)  # hooks come back for the next window
    ms.grad(lambda x: net(x).astype(ms.float32).sum(), None, net.trainable_params())(fp16(4, 60000.0))
    debugger.stop()
    assert len(seen) == 1 and names(tmp_path, step=1) == ["Cell.scale.Scale.parameters_grad"]


def test_error_in_a_hook_never_stops_training(work, caplog):
    tmp_path, make = work
    net = Top()
    debugger = make()

    def broken(api):
        raise RuntimeError("boom")

    debugger.checker.next_index = broken
    with caplog.at_level(logging.ERROR, logger="probe_runtime"):
        debugger.start(net)
        out = net(fp16(2, 4, 3.0))
        out = net(fp16(2, 4, 3.0))
        debugger.stop()
    assert out.shape == (2, 4)
    messages = [r.getMessage() for r in caplog.records if "boom" in r.getMessage()]
    # once per broken part: the sub-Cells' forward hooks and the model's own (top) hooks
    assert sorted(messages) == sorted(set(messages)) and any("forward hooks" in m for m in messages)
    assert "forward" in debugger.cells.broken and names(tmp_path) == []
    assert_unhooked(net)


# -- Model.train ---------------------------------------------------------------------
def _train(debugger, net, steps=4, bad_step=2):
    import mindspore.dataset as ds
    from mindspore.train import Model

    def generate():
        rng = np.random.default_rng(0)
        for i in range(steps):
            x = rng.normal(size=(4, 4)).astype(np.float16)
            if i == bad_step:
                x[0] = 30000.0
            yield x, rng.normal(size=(4, 4)).astype(np.float32)

    class Loss(nn.LossBase):
        def construct(self, logits, labels):
            return ops.mse_loss(logits.astype(ms.float32), labels)

    data = ds.GeneratorDataset(generate, ["x", "y"], shuffle=False)
    model = Model(net, Loss(), nn.SGD(net.trainable_params(), 0.0))
    model.train(1, data, callbacks=[OverflowCheckCallback(debugger, model=net)], dataset_sink_mode=False)


class Seq(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = Lin()
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.fc(x))


@pytest.mark.parametrize("sync", ["auto", "0"])  # weights checked on the host (synchronous CPU window) or on the device
def test_model_train_callback_l0(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    net = Seq()
    debugger = make()
    _train(debugger, net)
    assert debugger.state.step == 4
    for step in (0, 1):
        assert names(tmp_path, step) == []
    found = names(tmp_path, 2)
    assert found[:2] == ["Cell.fc.Lin.forward.0", "Cell.act.ReLU.forward.0"]
    assert origins(tmp_path, 2)["Cell.fc.Lin.forward.0"] is True
    assert "Cell.fc.Lin.parameters_grad" in found
    # SGD (lr 0) turned the weight into nan (0 * inf): step 3's Lin carries it, it does not start it
    assert origins(tmp_path, 3)["Cell.fc.Lin.forward.0"] is False
    assert_unhooked(net)


def test_model_train_callback_l1(work):
    tmp_path, make = work
    net = Seq()
    debugger = make(level="L1")
    _train(debugger, net)
    assert debugger.state.step == 4 and names(tmp_path, 0) == []
    first = records(tmp_path, 2)[0]
    assert first["name"].startswith(("Functional.matmul", "Primitive.MatMul")) and first["origin"] is True
    assert not debugger.interceptor.installed


class _SqrtCell(nn.Cell):
    def construct(self, x):
        return ops.sqrt(x)


class _ShiftCell(nn.Cell):
    def construct(self, x):
        return x - 2.0


def _sequential_backward_records(tmp_path, make, link: bool, monkeypatch):
    """Records and dump entries of one backward pass through a plain
    SequentialCell whose middle Cell's backward overflows (d sqrt/dx at 0),
    with the boundary hooks shared (``link``) or one HookBackward per side
    (the sharing turned off); also how many HookBackward were made."""
    from probe_runtime.l0 import cell_hooks as cells_module
    from probe_runtime.hooks import backward

    if not link:
        monkeypatch.setattr(cells_module.CellHooks, "_fed_by_previous",
                            lambda self, target, call, args, kwargs=None: False)
    made = []
    real = backward.hook_gradients
    monkeypatch.setattr(cells_module, "hook_gradients", lambda *a, **k: made.append(1) or real(*a, **k))
    net = nn.SequentialCell([nn.Dense(2, 2), _ShiftCell(), _SqrtCell(), nn.Dense(2, 1)])
    net.to_float(ms.float32)
    inner = nn.SequentialCell([net, _ShiftCell()])  # the model given to start() is a sequence too
    for param in net.trainable_params():
        param.set_data(Tensor(np.ones(param.shape, np.float32)))
    debugger = make()
    x = Tensor(np.array([[0.5, 0.5]], np.float32))  # Dense: 0.5 + 0.5 + bias 1 = 2, shifted to 0: sqrt backward inf
    debugger.start(inner)
    ms.grad(lambda t: inner(t).sum(), grad_position=None, weights=net.trainable_params())(x)
    debugger.stop()
    debugger.step()
    found = [(r["name"], r["origin"]) for r in records(tmp_path)]
    data = step_file(tmp_path, "dump.json")["data"] if found else {}
    monkeypatch.undo()
    return found, data, len(made)


def test_sequential_cells_share_one_gradient_hook_per_boundary(tmp_path, monkeypatch):
    """In a plain SequentialCell a Cell's input gradient is the previous
    Cell's output gradient: one HookBackward per boundary, and the records
    (names, origin flags, statistics of every backward entry) are the same
    as with one hook on each side."""
    results = []
    for link in (False, True):
        folder = tmp_path / ("linked" if link else "separate")
        folder.mkdir()
        isolate(monkeypatch, folder)
        debugger = PrecisionDebugger(config_path=str(write_config(folder)))
        results.append(_sequential_backward_records(folder, lambda: debugger, link, monkeypatch))
        assert_origin_invariant(debugger.dump_path)
    (separate, separate_data, separate_hooks), (linked, linked_data, linked_hooks) = results
    assert separate, "the backward of sqrt at 0 must overflow"
    assert any(name.endswith(".backward.0") and origin for name, origin in separate)
    assert linked == separate
    assert linked_data == separate_data
    assert linked_hooks == separate_hooks - 4  # Shift, Sqrt, the last Dense and the outer Shift share one


# -- a mindspore.jit function that calls the hooked model ------------------------------
def test_a_jit_function_calling_the_hooked_model_runs_and_the_hooks_come_back(work):
    """A ``@jit`` function compiled while the Cells carry the window's hooks
    failed to compile (``Unsupported statement 'Try'``: the user's training
    died). The hooks are taken off for each such call and put back after it:
    the function runs, gives what it gives without the debugger, and the
    model called directly afterwards in the same window is checked."""
    from mindspore.common import api

    tmp_path, make = work
    net = Top()
    executor_call = api._JitExecutor.__call__

    def twice(x):
        return net(x) * 2

    def twice_before(x):
        return net(x) * 2

    doubled = ms.jit(twice)  # first compiled inside the window, where its Cells carry the hooks
    expected = ms.jit(twice_before)(fp16(2, 4, 0.5)).asnumpy()  # the same graph, compiled before it
    debugger = make(nums=-1)
    for step in range(2):  # compiled in the first step, run from the cache in the second
        debugger.start(net)
        got = doubled(fp16(2, 4, 0.5)).asnumpy()
        np.testing.assert_array_equal(got, expected)
        assert net._forward_pre_hook, "the hooks are back once the compiled call returned"
        net(fp16(2, 4, 3.0))  # exp(12) overflows float16 in Inner, checked as without the jit call
        debugger.stop()
        debugger.step()
        assert "Cell.block.inner.Inner.forward.0" in names(tmp_path, step)
        assert origins(tmp_path, step)["Cell.block.inner.Inner.forward.0"] is True
    assert_unhooked(net)
    assert api._JitExecutor.__call__ is executor_call


TRACED = """
import json, sys
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Dense(4, 4), nn.ReLU(), nn.Dense(4, 1)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def train(debugger):
    ms.set_seed(3)
    net = Net()
    optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    loss_fn = nn.MSELoss()

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(ms.jit(forward, capture_mode="trace"), None, optimizer.parameters)
    losses = []
    for step in range(2):
        x, y = Tensor(np.full((2, 4), 0.5 + step, np.float32)), Tensor(np.ones((2, 1), np.float32))
        if debugger is not None:
            debugger.start(net)
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        if debugger is not None:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
    hooked = [type(c).__name__ for _, c in net.cells_and_names() if c._forward_pre_hook or c._forward_hook]
    return losses, hooked


losses, hooked = train(None if sys.argv[1] == "plain" else PrecisionDebugger(config_path=sys.argv[1]))
print(json.dumps({"losses": losses, "hooked": hooked}))
"""


def test_a_traced_jit_function_differentiated_at_l0_trains_as_without_the_tool(tmp_path):
    """``mindspore.jit(capture_mode="trace")`` runs the Python of the
    function to build its graph: the Cell hooks ran inside that trace and
    put a ``HookBackward`` into the graph, whose gradient MindSpore cannot
    build (``The node adjoint is null``: the process aborted). Under jit
    tracing the hooks now do nothing. (A script of its own: MindSpore's
    trace reads every caller's source line, which pytest's frames lack.)"""
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(TRACED)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE",
                                                            "MS_WORKER_NUM", "PROBE_CONFIG")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
    results = []
    for given in ("plain", str(write_config(tmp_path, nums=-1))):  # a process each: the traced graph is cached
        proc = subprocess.run([sys.executable, str(script), given], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    plain, checked = results
    assert checked["losses"] == plain["losses"] and checked["hooked"] == []


# -- tensors inside lists and dicts; the model's own Parameters -------------------------
_RETURNED: list = []  # what _Owner returned and what _RootOfOwner got, in call order
_RECEIVED: list = []


class _Owner(nn.Cell):
    """Owns ``w`` and returns ``x * w`` as ``kind``: a tuple, a list, a dict
    or (``deep``) a dict holding a list."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.w = Parameter(Tensor(np.ones((3,), np.float32)), name="w")

    def construct(self, x):
        y = x * self.w
        if self.kind == "tuple":
            out = (y,)
        elif self.kind == "list":
            out = [y]
        elif self.kind == "dict":
            out = {"first": y * 1.0, "y": y}
        else:
            out = {"y": [y]}
        _RETURNED.append(out)
        return out


class _RootOfOwner(nn.Cell):
    """Takes sqrt of zero from the owner's output in its own construct: the
    gradient w.r.t. the owner's output is already nan when it gets there."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.owner = _Owner(kind)

    def construct(self, x):
        out = self.owner(x)
        _RECEIVED.append(out)
        y = out["y"] if self.kind == "dict" else out["y"][0] if self.kind == "deep" else out[0]
        return ops.sqrt(y * 0.0).sum()


@pytest.mark.parametrize("sync", ["auto", "0"])
@pytest.mark.parametrize("kind", ["tuple", "list", "dict"])
def test_a_cell_returning_a_list_or_dict_is_never_a_gradient_origin(work, monkeypatch, sync, kind):
    """A Cell returning a list or a dict got no gradient hook on its
    outputs, so its Parameter gradient (nan from a nan gradient w.r.t. its
    output, made by the model's own sqrt) was compared with nothing and
    called the origin. A tuple's tensors are hooked (the gradient that came
    in is seen: carried; the model, whose own output gradient was finite,
    is the origin); a list or dict is the
    Cell's own object, handed to the caller as it is, so the gradient
    w.r.t. it is not known and no entry is an origin."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    net = _RootOfOwner(kind)
    debugger = make()
    _RETURNED.clear()
    _RECEIVED.clear()
    debugger.start(net)
    grads = ms.grad(net, None, net.trainable_params())(Tensor(np.full((2, 3), 0.5, np.float32)))
    debugger.stop()
    assert np.isnan(grads[0].asnumpy()).all()
    found = records(tmp_path)
    if kind == "tuple":  # hooked: the model's output gradient was finite, its own sqrt made the NaN (issue 33)
        assert (found[0]["name"], found[0]["origin"]) == ("Cell._RootOfOwner.backward.0", True), found
        assert found[0]["entered"]["source"] == "own-construct"
        found = found[1:]
    assert found and not any(r["origin"] for r in found), found
    assert found[0]["name"] == "Cell.owner._Owner.parameters_grad"
    if kind != "tuple":
        assert _RECEIVED and all(got is made for got, made in zip(_RECEIVED, _RETURNED))


class _Merge(nn.Cell):
    """sqrt(a * 0) + b from tensors given inside a container (``how``)."""

    def __init__(self, how):
        super().__init__()
        self.how = how

    def construct(self, *args, **kwargs):
        if self.how == "list" or self.how == "tuple":
            a, b = args[0]
        elif self.how == "dict":
            a, b = args[0]["a"], args[0]["b"]
        elif self.how == "kwarg":
            a, b = kwargs["pair"]
        else:  # deep: [[a], b]
            a, b = args[0][0][0], args[0][1]
        return ops.sqrt(a * 0.0) + b


class _MergeNet(nn.Cell):
    def __init__(self, how):
        super().__init__()
        self.how = how
        self.fa = nn.Dense(3, 3)
        self.fb = nn.Dense(3, 3)
        self.merge = _Merge(how)

    def construct(self, x):
        a, b = self.fa(x), self.fb(x)
        if self.how == "list":
            c = self.merge([a, b])
        elif self.how == "tuple":
            c = self.merge((a, b))
        elif self.how == "dict":
            c = self.merge({"a": a, "b": b})
        elif self.how == "kwarg":
            c = self.merge(pair=[a, b])
        else:
            c = self.merge([[a], b])
        return c.sum()


def _no_origin_under_grad(work, net):
    """The records of one gradient computation of ``net`` (input 0.5 of
    shape (2, 3)) under L0, after asserting there is one and none is an
    origin."""
    tmp_path, make = work
    debugger = make()
    debugger.start(net)
    ms.grad(net, None, net.trainable_params())(Tensor(np.full((2, 3), 0.5, np.float32)))
    debugger.stop()
    found = records(tmp_path)
    assert found and not any(r["origin"] for r in found), found
    return found


@pytest.mark.parametrize("sync", ["auto", "0"])
@pytest.mark.parametrize("how", ["list", "tuple", "dict", "kwarg"])
def test_a_cell_taking_its_tensors_in_a_container_makes_no_outside_claim(work, monkeypatch, sync, how):
    """A Cell called straight from the model with its tensors inside a list
    (tuple, dict, keyword) made nan in its backward (sqrt at 0), and the
    Dense before it was said to get a gradient "made outside the checked
    Cells". Those tensors get no hook (the container is the caller's), so
    where the gradient started is not claimed: no origin, no outside."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    found = _no_origin_under_grad(work, _MergeNet(how))
    assert not any("made outside" in (r.get("entered") or {}).get("message", "") for r in found), found


@pytest.mark.parametrize("where", ["output", "input"])
def test_tensors_nested_deeper_claim_nothing(work, where):
    """A tensor two levels inside a Cell's output (``{"y": [y]}``) or
    argument (``[[a], b]``) gets no gradient hook: the gradient w.r.t. it
    is not known, so no entry is called the origin and where the overflow
    started is not claimed (not from outside every Cell either)."""
    found = _no_origin_under_grad(work, _RootOfOwner("deep") if where == "output" else _MergeNet("deep"))
    assert not any(r.get("entered") for r in found), found


def test_a_list_a_cell_appends_to_is_the_callers_list(work):
    """A Cell that appends to the list it is given (a cache of features)
    appends to the caller's own list, which still holds the caller's own
    tensors: the tool never puts anything of its own in it."""
    tmp_path, make = work

    class Collect(nn.Cell):
        def construct(self, x, feats):
            feats.append(x * 2.0)
            return x + feats[0]

    class CollectNet(nn.Cell):
        def __init__(self):
            super().__init__()
            self.collect = Collect()

        def construct(self, x):
            feats = [x]
            y = self.collect(x, feats)
            assert len(feats) == 2 and feats[0] is x
            return y.sum() + feats[1].sum()

    net = CollectNet()
    debugger = make()
    x = Tensor(np.ones((2,), np.float32))
    debugger.start(net)
    grad = ms.grad(net)(x)
    debugger.stop()
    np.testing.assert_array_equal(grad.asnumpy(), np.full((2,), 4.0, np.float32))
    assert records(tmp_path) == []


class _UsesW(nn.Cell):
    def construct(self, x, w):
        return (x * w).sum()


class _Total(nn.Cell):
    def construct(self, h):
        return h.sum()


class _OwnsW(nn.Cell):
    """The model given to ``start()`` owns ``w`` itself and hands it to a
    sub-Cell (``arg``) or multiplies by it before one (``mul``)."""

    def __init__(self, how):
        super().__init__()
        self.how = how
        self.w = Parameter(Tensor(np.ones((3,), np.float32)), name="w")
        self.uses = _UsesW()
        self.total = _Total()

    def construct(self, x):
        if self.how == "arg":
            return self.uses(x, self.w)
        return self.total(x * self.w)


@pytest.mark.parametrize("sync", ["auto", "0"])  # its Parameters checked on the host / a sum on the device
@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("how", ["arg", "mul"])
def test_the_models_own_nan_parameter_makes_no_origin(work, monkeypatch, sync, how, grad):
    """The model given to ``start()`` whose own Parameter held nan before
    ``start()`` was called the origin of its own construct ("its inputs
    were finite"). Its own Parameters count as its inputs: no record is an
    origin and the first says the Parameter already held inf/nan (also
    when no gradient is computed and the sub-Cell gets the Parameter
    itself, not a tensor with a gradient hook)."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    net = _OwnsW(how)
    net.w.set_data(Tensor(np.full((3,), np.nan, np.float32)))
    debugger = make()
    x = Tensor(np.ones((3,), np.float32))
    debugger.start(net)
    if grad:
        ms.value_and_grad(net, None, net.trainable_params())(x)
    else:
        net(x)
    debugger.stop()
    found = records(tmp_path)
    assert found and not any(r["origin"] for r in found), found
    entered = found[0]["entered"]
    assert entered["source"] == "parameter" and entered["parameter"] == "w" and entered["at_start"] is True
    assert "already held inf/nan at start()" in entered["message"]


def test_the_models_own_parameter_written_nan_by_the_optimizer_makes_no_origin(work):
    """After an optimizer step wrote nan into the model's own Parameter, the
    next window's calls of the model (four micro-batches) carry it: none
    is an origin."""
    tmp_path, make = work
    net = _OwnsW("arg")
    optimizer = nn.SGD(net.trainable_params(), 1.0)
    grad_fn = ms.grad(net, None, optimizer.parameters)
    debugger = make()
    for step, value in enumerate((np.inf, 1.0)):
        debugger.start(net)
        grads = None
        for _ in range(4):
            g = grad_fn(Tensor(np.full((3,), value, np.float32)))
            grads = g if grads is None else tuple(a + b for a, b in zip(grads, g))
        optimizer(grads)
        debugger.stop()
        debugger.step()
    found = records(tmp_path, 1)
    assert found and not any(r["origin"] for r in found), found
    assert found[0]["entered"]["source"] == "parameter"


class _MaskedOwnExp(nn.Cell):
    """The model keeps a causal mask as a frozen Parameter (-inf above the
    diagonal, by design) and its own construct overflows: exp of 100 in
    float32 is finite, exp of 1000 is inf."""

    def __init__(self):
        super().__init__()
        mask = np.triu(np.full((3, 3), -np.inf, np.float32), 1)
        self.mask = Parameter(Tensor(mask), name="mask", requires_grad=False)
        self.attn = _Total()

    def construct(self, x):
        scores = ops.exp(x * 1000.0) + self.mask
        return self.attn(ops.softmax(scores, -1) * 0.0 + x)


def test_the_models_own_minus_inf_mask_parameter_is_not_blamed(work):
    """The model's own Parameter holding -inf only (a mask) is by design:
    the overflow its own construct made (exp) is still its own origin, not
    said to come from "Parameter mask already held inf/nan"."""
    tmp_path, make = work
    net = _MaskedOwnExp()
    debugger = make()
    debugger.start(net)
    ms.value_and_grad(net)(Tensor(np.ones((3, 3), np.float32)))
    debugger.stop()
    found = records(tmp_path)
    assert found and found[0]["origin"] is True, found
    assert found[0]["name"].startswith("Cell._MaskedOwnExp.forward"), found
    assert "already held" not in json.dumps(found[0].get("entered")), found


class _MaskedScores(nn.Cell):
    """Scores that overflow (x * 1e38 * 10 is inf in float32) plus an
    additive -inf mask: inf + -inf is NaN in the output."""

    def construct(self, x, mask=None):
        return ops.softmax(x * 1e38 * 10.0 + mask, -1)


class _MaskedNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.attn = _MaskedScores()

    def construct(self, x, mask):
        return self.attn(x, mask=mask).sum()


def test_a_minus_inf_mask_beside_nan_made_in_the_cell_says_so(work):
    """A Cell given a by-design -inf mask whose own scores overflow: L0
    cannot tell the mask from an overflow, so the Cell stays carried with
    the mask as what came in, and ``entered`` says the mask holds -inf only
    while the NaN/+inf in the output may have started inside the Cell."""
    tmp_path, make = work
    net = _MaskedNet()
    debugger = make()
    mask = Tensor(np.triu(np.full((3, 3), -np.inf, np.float32), 1))
    debugger.start(net)
    net(Tensor(np.ones((3, 3), np.float32)), mask)
    debugger.stop()
    found = records(tmp_path)
    assert found and found[0]["name"] == "Cell.attn._MaskedScores.forward.0" and not found[0]["origin"], found
    message = found[0]["entered"]["message"]
    assert found[0]["entered"]["input"] == "input_kwargs.mask"
    assert "holds -inf only" in message and "may have started inside Cell.attn._MaskedScores.forward.0" in message


class _MaskAndData(nn.Cell):
    def construct(self, mask, h):
        return ops.softmax(h + mask, -1)


class _MaskAndDataNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.attn = _MaskAndData()

    def construct(self, mask, h):
        return self.attn(mask, h).sum()


def test_no_mask_note_when_nan_came_in_with_another_input(work):
    """The -inf mask is the first input the Cell got, but the NaN came in
    with its other input: nothing says the NaN started inside the Cell."""
    tmp_path, make = work
    net = _MaskAndDataNet()
    debugger = make()
    mask = Tensor(np.triu(np.full((3, 3), -np.inf, np.float32), 1))
    h = Tensor(np.full((3, 3), np.nan, np.float32))
    debugger.start(net)
    net(mask, h)
    debugger.stop()
    found = records(tmp_path)
    assert found and not found[0]["origin"], found
    assert "holds -inf only" not in found[0]["entered"]["message"], found[0]["entered"]
