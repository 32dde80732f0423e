"""What keeps probe_runtime cheap, checked without timing anything.

Speed itself is measured by ``benchmarks/runtime_bench.py`` only; these
tests pin down the structural reasons it is cheap: nothing is patched or
hooked outside the step/rank filter or after ``overflow_nums``, and every
module global the primitives run through is put back; no
``Tensor.register_hook`` (a device wait per call) on fresh outputs at L1;
the batch size carries over windows; checked windows on the CPU backend
run synchronously and the process's own setting is back after each one;
and a Parameter changed by a jit-compiled optimizer before its entry is
resolved is still judged on the value the call saw.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import PatchedState, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def synchronous() -> bool:
    return bool(ms.get_context("pynative_synchronize"))


def write_config(folder: Path, **changes) -> Path:
    changes.setdefault("nums", 1)
    return write_runtime_config(folder, **changes)


@pytest.fixture
def make(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def build(**changes):  # exact checks: what these invariants are about (auto checks: test_runtime_auto.py)
        debugger = PrecisionDebugger(config_path=str(write_config(tmp_path, **changes)), checks="exact")
        made.append(debugger)
        return debugger

    yield build
    for debugger in made:
        debugger.stop()
    assert_untouched(parked_ok=True)


assert_untouched = ORIGINAL.assert_untouched


def small_net():
    ms.set_seed(0)
    return nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2)])


def train_step(net, optimizer, x):
    def loss_fn(data):
        return net(data).sum()

    loss, grads = ms.value_and_grad(loss_fn, None, optimizer.parameters)(x)
    optimizer(grads)
    return loss


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_after_overflow_nums_nothing_is_patched(make, level):
    net = small_net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    debugger = make(level=level)
    bad = Tensor(np.array([[np.inf, 0, 0, 0]], np.float32))
    debugger.start(net)
    net(bad)
    debugger.stop()
    debugger.step()
    assert debugger.state.exhausted
    for _ in range(2):
        debugger.start(net)
        assert_untouched(net)              # start() after the limit patches nothing
        train_step(net, optimizer, Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
        debugger.step()
    assert not debugger.checker.pending and not debugger.checker.live


@pytest.mark.parametrize("level,changes,env", [
    ("L1", {"step": [5]}, {}),
    ("L0", {"step": [5]}, {}),
    ("L1", {"rank": [0]}, {"RANK_ID": "1", "RANK_SIZE": "2"}),
    ("L0", {"rank": [0]}, {"RANK_ID": "1", "RANK_SIZE": "2"}),
])
def test_outside_the_filter_nothing_is_patched(make, monkeypatch, level, changes, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    net = small_net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    debugger = make(level=level, **changes)
    for _ in range(2):
        debugger.start(net)
        assert_untouched(net)
        train_step(net, optimizer, Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
        debugger.step()
    assert not debugger.checker.pending


@pytest.mark.parametrize("sync", ["auto", "0"])
def test_l1_registers_no_tensor_hooks_under_grad(make, monkeypatch, sync):
    """``Tensor.register_hook`` on a fresh output waits for the asynchronous
    pipeline, and a tensor carrying a Python hook breaks ``mindspore.jit``
    functions it flows into: L1 uses ``HookBackward`` only."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    registered = []
    original = ms.Tensor.register_hook

    def counting(self, hook):
        registered.append(self)
        return original(self, hook)

    monkeypatch.setattr(ms.Tensor, "register_hook", counting)
    net = small_net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    debugger = make(overflow_check={"overflow_nums": -1})
    debugger.start(net)
    train_step(net, optimizer, Tensor(np.ones((2, 4), np.float32)))
    debugger.stop()
    monkeypatch.setattr(ms.Tensor, "register_hook", original)
    assert registered == []


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_kept_loss_keeps_no_call_alive(make, level):
    """A tensor the user keeps across steps (the loss, for logging) must not
    keep the tool's entries (and the tensors they hold) alive."""
    import gc
    import weakref

    net = small_net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    debugger = make(level=level, overflow_check={"overflow_nums": -1})
    calls = []
    on_forward = debugger.checker.on_forward

    def tracking(call):
        calls.append(weakref.ref(call))
        on_forward(call)

    debugger.checker.on_forward = tracking
    kept = []
    for _ in range(2):
        debugger.start(net)
        kept.append(train_step(net, optimizer, Tensor(np.ones((2, 4), np.float32))))
        debugger.stop()
        debugger.step()
    gc.collect()
    assert calls and all(ref() is None for ref in calls)


def test_batch_size_carries_over_windows(make):
    debugger = make(overflow_check={"overflow_nums": -1})
    x = Tensor(np.ones((2,), np.float32))
    for _ in range(3):
        debugger.start()
        for _ in range(20):
            ops.exp(x)
        debugger.stop()
        debugger.step()
    assert debugger.checker._threshold > 20   # a reset per window would wait for the device 5 times a step


@pytest.mark.parametrize("sync", ["auto", "0"])  # weights checked on the host (synchronous CPU window) or on the device
def test_parameter_changed_by_jit_optimizer_judged_on_seen_value(make, tmp_path, monkeypatch, sync):
    """nn.SGD's construct is jit-compiled: its in-place updates are not
    intercepted. The forward entry still sees finite weights."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    net = nn.Dense(2, 1, has_bias=False)
    net.weight.set_data(Tensor(np.array([[1.0, 1.0]], np.float32)))
    optimizer = nn.SGD(net.trainable_params(), learning_rate=10.0)  # 1 - 10 * 3e38 = -inf
    debugger = make(overflow_check={"overflow_nums": -1})
    debugger.start(net)
    for _ in range(20):                               # batch size grows past the next step's calls
        ops.exp(Tensor(np.ones((2,), np.float32)))
    debugger.stop()
    debugger.step()
    debugger.start(net)
    x = Tensor(np.array([[3e38, 3e38]], np.float32))  # finite inputs, the matmul overflows
    train_step(net, optimizer, x)                     # weights become non-finite after the step
    debugger.stop()
    index = json.loads((tmp_path / "dump" / "step1" / "rank" / "overflow.json").read_text())
    forward = [r for r in index if r["name"].startswith("Primitive.MatMul") and r["name"].endswith("forward")]
    assert forward and forward[0]["origin"] is True


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_checked_windows_run_synchronously_on_cpu(make, level):
    """The hooks drain MindSpore's asynchronous pipeline once per hooked
    call; on the CPU backend each window runs synchronously instead and
    the process's own setting comes back at stop()."""
    net = small_net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    debugger = make(level=level, overflow_check={"overflow_nums": -1})
    seen = []
    for _ in range(2):
        debugger.start(net)
        seen.append(synchronous())
        train_step(net, optimizer, Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
        seen.append(synchronous())
        debugger.step()
    assert seen == [True, False, True, False]


@pytest.mark.parametrize("sync", ["auto", "0"])
def test_a_synchronous_process_stays_synchronous(make, monkeypatch, sync):
    """Left as it is, whatever PROBE_SYNC says, and its windows count as
    synchronous (Parameters checked on the host)."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    ms.set_context(pynative_synchronize=True)
    try:
        debugger = make()
        debugger.start()
        assert debugger.windows.exact.sync.active
        ops.exp(Tensor(np.ones((2,), np.float32)))
        debugger.stop()
        assert synchronous()
    finally:
        ms.set_context(pynative_synchronize=False)


def test_probe_sync_0_keeps_the_pipeline(make, monkeypatch):
    monkeypatch.setenv("PROBE_SYNC", "0")
    debugger = make()
    debugger.start()
    assert not synchronous() and not debugger.windows.exact.sync.active
    ops.exp(Tensor(np.ones((2,), np.float32)))
    debugger.stop()


def test_limit_reached_inside_a_window_restores_the_mode(make):
    debugger = make()
    debugger.start()
    ops.exp(Tensor(np.array([1000.0], np.float32)))   # the first call is resolved at once: limit reached
    assert debugger.state.exhausted and not synchronous()  # before stop(): no more checking, no more sync
    debugger.stop()


def test_an_interrupt_while_restoring_the_mode_can_be_finished_later():
    """A KeyboardInterrupt landing inside leave() must not leave the process
    synchronous for good: the next stop() (or the exit handler) restores it."""
    from probe_runtime.execution import SyncWindows

    class Context:
        value = False
        interrupt = True

        def get_param(self, key):
            return self.value

        def set_param(self, key, value):
            if not value and self.interrupt:
                self.interrupt = False
                raise KeyboardInterrupt
            self.value = value

    context = Context()
    windows = SyncWindows()
    assert windows.enabled                      # CPU backend, PyNative
    windows._handle = (context, "pynative_synchronize")
    windows.enter()
    assert context.value and windows.active
    with pytest.raises(KeyboardInterrupt):
        windows.leave()
    windows.leave()
    assert context.value is False and not windows.active
