"""A fresh user's findings about how ``start()``, ``stop()`` and ``step()``
are called, and two records they led to (each test fails without its fix).

1. ``start()`` once before the loop, ``step()`` at the end of every
   iteration, never ``stop()``: msprobe 8.1.2 collects from ``start()``
   until ``stop()`` (its ``step()`` only counts the step), so every step is
   checked, and the window the last ``step()`` opens, which sees no
   training call, is neither a checked step nor one cut short. Before, only
   step 0 was checked and the exit said "no overflow found in 1 checked
   step(s)" of a run whose step 3 overflowed;
2. ``step()`` without any ``start()`` says at exit that no step was
   checked, and why;
3. L0, ``value_and_grad(..., has_aux=True)``: an auxiliary output that
   holds inf/nan is not called "the loss" (output 0 is);
4. an optimizer update that makes Adam's moment2 inf gets its ``update``
   record also in a step that already has an origin record.
"""
from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any, Callable

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger, lifecycle  # noqa: E402
from runtime_support import assert_origin_invariant, dump_records, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
#: the step whose batch overflows float16 in the training of :func:`train`
BAD_STEP = 3


@pytest.fixture
def make(tmp_path, monkeypatch):
    """``make(name, level, checks=None, **config)``: a debugger on
    ``tmp_path/name/config.json`` (dump ``tmp_path/name/dump``); each is
    finished at the end of the test (what interpreter exit runs), with no
    all-clear line."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    made = []

    def build(name: str, level: str = "L1", checks: Any = None, **config: Any) -> Any:
        folder = tmp_path / name
        folder.mkdir()
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(folder, level=level, **config)),
                                     checks=checks)
        made.append(debugger)
        return debugger

    yield build
    for debugger in made:
        debugger.windows.summary.said = True
        debugger.finish()
        assert_origin_invariant(Path(debugger.dump_path))


def exit_line(debugger: Any, capsys: Any) -> str:
    """What the debugger writes on stderr at interpreter exit (the same
    call ``atexit`` makes)."""
    capsys.readouterr()
    lifecycle.at_exit(weakref.ref(debugger))
    return capsys.readouterr().err


def train(debugger: Any, level: str, pattern: str, steps: int = 5,
          overflow: Callable[[int], bool] = lambda step: step == BAD_STEP) -> None:
    """``steps`` SGD steps of a float16 MLP (seed 3) whose batch is scaled
    by 3000 where ``overflow(step)`` (float16 overflows there). ``pattern``:
    ``"each"`` start/stop/step around every step (the README's loop),
    ``"once"`` ``start()`` before the loop and ``step()`` after each step,
    no ``stop()``, ``"once-stop"`` the same with ``stop()`` after the loop.
    At L0 ``start`` gets the net."""
    ms.set_seed(3)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 1)])
    net.to_float(ms.float16)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x, y: ((net(x).astype(ms.float32) - y) ** 2).mean(), None,
                                optimizer.parameters)
    rng = np.random.default_rng(0)

    def start() -> None:
        debugger.start(net) if level == "L0" else debugger.start()

    if pattern.startswith("once"):
        start()
    for step in range(steps):
        if pattern == "each":
            start()
        x = Tensor(rng.normal(size=(4, 8)).astype(np.float16) * (3000 if overflow(step) else 1))
        y = Tensor(rng.normal(size=(4, 1)).astype(np.float32))
        _, grads = grad_fn(x, y)
        optimizer(grads)
        if pattern == "each":
            debugger.stop()
        debugger.step()
    if pattern == "once-stop":
        debugger.stop()


# -- 1. start() once, step() in the loop, no stop() ----------------------------------------------------
@pytest.mark.parametrize("checks", [None, "exact"])
@pytest.mark.parametrize("level", ["L1", "L0"])
def test_start_once_then_step_checks_every_step_as_the_usual_loop(make, capsys, level, checks):
    """A fresh user's finding: ``start()`` once before the loop and
    ``step()`` at the end of each iteration (never ``stop()``) checked step
    0 only, and at exit said "no overflow found in 1 checked step(s)"
    although the batch of step 3 overflows float16. msprobe keeps
    collecting until ``stop()``, so every step is checked: the records
    (step 3's origins, step 4 carrying the inf weights the update wrote)
    are those of the README's start/stop/step loop, record for record, at
    L1 and L0 (which keeps the model given to ``start()``), under the
    default checks and ``checks="exact"``; nothing says "no overflow"."""
    usual, once = make("usual", level, checks), make("once", level, checks)
    train(usual, level, "each")
    train(once, level, "once")
    expected = dump_records(Path(usual.dump_path))
    assert {step for step, _ in expected} == {BAD_STEP, BAD_STEP + 1}
    assert any(record["origin"] for step, record in expected if step == BAD_STEP)
    assert dump_records(Path(once.dump_path)) == expected
    assert "no overflow found" not in exit_line(once, capsys)


@pytest.mark.parametrize("pattern", ["once", "once-stop"])
@pytest.mark.parametrize("level", ["L1", "L0"])
def test_the_all_clear_after_start_once_counts_the_steps_that_ran(make, capsys, level, pattern):
    """The window the last ``step()`` opens sees no training call before
    exit (or before a ``stop()`` after the loop): it is neither a checked
    step nor "step 5 did not reach stop()". Five steps, no overflow: five
    checked steps, as the usual loop says."""
    debugger = make("once", level)
    train(debugger, level, pattern, overflow=lambda step: False)
    err = exit_line(debugger, capsys)
    assert "probe_runtime: no overflow found in 5 checked step(s)" in err, err
    assert "did not reach stop()" not in err and err.count("probe_runtime:") == 1


@pytest.mark.parametrize("checks", ["auto", "sentinel"])
def test_start_once_under_auto_and_sentinel_checks(make, capsys, checks):
    """Auto and sentinel checks, whose next window depends on what the last
    one computed, count the same five steps; the unused last window leaves
    no warning of a window without gradients."""
    debugger = make("once", "L1", checks)
    train(debugger, "L1", "once", overflow=lambda step: False)
    err = exit_line(debugger, capsys)
    assert "probe_runtime: no overflow found in 5 checked step(s)" in err, err
    assert "did not reach stop()" not in err and "saw no gradient computation" not in err


def test_start_once_keeps_the_step_filter(make, capsys):
    """``step: [1, 2, 7]``: steps 1 and 2 checked, 0, 3 and 4 named as run
    outside the filter; the fifth ``step()``'s unused step 5 is not."""
    debugger = make("once", "L1", step=[1, 2, 7])
    train(debugger, "L1", "once", overflow=lambda step: False)
    err = exit_line(debugger, capsys)
    assert ("no overflow found in 2 checked step(s); dump_path: " in err
            and "; 3 step(s) ran outside the config's step filter and were not checked (step 0, 3-4)" in err), err


def test_a_step_cut_short_after_start_once_is_still_said(make, capsys):
    """A window ``step()`` opened that did see calls and never reached a
    ``stop()`` or ``step()`` (an exception in step 2) is named as cut short."""
    debugger = make("once", "L1")
    with pytest.raises(RuntimeError):
        train(debugger, "L1", "once", overflow=lambda step: False, steps=2)
        ops.exp(Tensor(np.ones(3, np.float32)))  # step 2 runs a call, then fails
        raise RuntimeError("the script fails in step 2")
    err = exit_line(debugger, capsys)
    assert "no overflow found in 3 checked step(s)" in err, err
    assert "; step 2 did not reach stop()" in err


def test_start_stop_without_step_is_unchanged(make, capsys):
    """``start()`` and ``stop()`` with no ``step()``, and ``step()`` after
    ``stop()``: one window each, as before."""
    debugger = make("plain", "L1")
    debugger.start()
    ops.exp(Tensor(np.ones(3, np.float32)))
    debugger.stop()
    assert debugger.window is None
    debugger.step()
    assert debugger.window is None
    assert "no overflow found in 1 checked step(s)" in exit_line(debugger, capsys)


# -- 2. step() without start() ---------------------------------------------------------------------------
def test_step_without_start_says_no_step_was_checked(make, capsys):
    """A fresh user's finding: a script that called ``step()`` at the end
    of every iteration but never ``start()`` (an overflow in every step)
    heard nothing at exit, as if all was well. Now one line on stderr says
    that no step was checked because ``start()`` was never called."""
    debugger = make("never", "L1")
    for _ in range(3):
        ops.exp(Tensor(np.full(3, 100.0, np.float32)))
        debugger.step()
    err = exit_line(debugger, capsys)
    lines = [line for line in err.splitlines() if line.startswith("probe_runtime:")]
    assert len(lines) == 1, err
    assert lines[0].startswith("probe_runtime: no step was checked: start() was never called (3 step() call(s))")
    assert lines[0].endswith(f"dump_path: {debugger.dump_path}")


def test_no_step_and_no_start_says_nothing(make, capsys):
    """A debugger built and never used (no ``step()`` either) says nothing."""
    assert "probe_runtime" not in exit_line(make("idle", "L1"), capsys)


# -- 3. L0, has_aux: the auxiliary output is not the loss ---------------------------------------------------
@pytest.mark.parametrize("bad", ["aux", "loss"])
def test_l0_has_aux_names_output_0_the_loss_and_no_other(make, bad):
    """A fresh user's finding: ``value_and_grad(forward, None, weights,
    has_aux=True)`` whose forward returns (loss, aux), aux = exp(logits *
    1000) of a (2, 2) Dense output, computed outside the model at L0: the
    record said "inf/nan in forward output 1 (the loss)", but output 1 is
    the auxiliary output (not differentiated). Its ``outside`` record now
    says what output 1 is; an overflowing loss (output 0) is still "forward
    output 0 (the loss)"."""
    debugger = make("aux", "L0")
    net = nn.Dense(4, 2, weight_init="ones", bias_init="zeros")

    def forward(x, y):
        logits = net(x)
        loss = ((logits - y) ** 2).mean()
        if bad == "aux":
            return loss, ops.exp(logits * 1000.0)
        return loss * 1e38 * 1e38, logits

    grad_fn = ms.value_and_grad(forward, None, net.trainable_params(), has_aux=True)
    debugger.start(net)
    grad_fn(Tensor(np.ones((2, 4), np.float32)), Tensor(np.zeros((2, 2), np.float32)))
    debugger.stop()
    records = [record for _, record in dump_records(Path(debugger.dump_path))]
    assert [record["kind"] for record in records] == ["outside"], records
    message = records[0]["message"]
    if bad == "aux":
        assert records[0]["nonfinite"] == ["forward output 1"]
        assert "(the loss)" not in message
        assert "has_aux=True: forward output 0 is the loss, the others are auxiliary outputs" in message
    else:
        assert records[0]["nonfinite"][0] == "forward output 0"
        assert message.startswith("inf/nan in forward output 0 (the loss) of the gradient computation at ")


# -- 4. an update record in a step that already has an origin ---------------------------------------------------
class MaskedNet(nn.Cell):
    """A float16 Dense(4, 4) of ones on ``x * scale`` (overflows for scale
    3e4: an origin record) whose result only says whether it was finite,
    beside a float32 Dense(4, 1) whose loss is multiplied by 2e20 when the
    float16 one overflowed: its gradients, 2e20, are finite, their squares
    in Adam's moment2 (4e40) are not."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 1, weight_init="zeros", bias_init="zeros")
        self.half = nn.Dense(4, 4, weight_init="ones", bias_init="zeros").to_float(ms.float16)

    def construct(self, x, scale):
        keep = ops.isfinite(self.half(x * scale)).astype(ms.float32).min()
        return self.fc(x).sum() * 2e20 * ops.stop_gradient(1 - keep) + self.fc(x).sum()


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_an_update_record_is_written_beside_the_steps_origin(make, level):
    """A fresh user's finding: in step 1 the float16 Dense overflows (an
    origin record) and, independently, Adam's update turns moment2 inf
    from finite gradients (2e20); the ``update`` record docs/checks.md
    promises for a state the optimizer step made inf/nan was dropped,
    because the window already held a record. Both are written now, the
    origin once, and step 2 carries the inf moment2 without a second
    ``update``."""
    debugger = make("adam", level)
    net = MaskedNet()
    optimizer = nn.Adam(net.fc.trainable_params(), learning_rate=0.01)
    grad_fn = ms.value_and_grad(lambda x, s: net(x, s), None, optimizer.parameters)
    for step in range(3):
        debugger.start(net) if level == "L0" else debugger.start()
        _, grads = grad_fn(Tensor(np.ones((1, 4), np.float32)), Tensor(np.float32(3e4 if step == 1 else 1.0)))
        assert all(np.isfinite(g.asnumpy()).all() for g in grads)
        optimizer(grads)
        debugger.stop()
        debugger.step()
    records = dump_records(Path(debugger.dump_path))
    assert {step for step, _ in records} == {1}, records
    origins = [record["name"] for _, record in records if record["origin"]]
    assert origins == (["Primitive.MatMul.0.forward"] if level == "L1" else ["Cell.half.Dense.forward.0"])
    updates = [record for _, record in records if record["kind"] == "update"]
    assert len(updates) == 1, records
    assert updates[0]["nonfinite"] == ["Adam moment2 of fc.weight", "Adam moment2 of fc.bias"]
    assert "in the optimizer's own state" in updates[0]["message"]
