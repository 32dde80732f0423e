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

A review of those fixes found (each test below fails without its fix):

5. ``start(model)`` every step with no ``stop()``, two models in turn: the
   user's ``start(net_b)`` in a step whose window ``step()`` re-opened with
   ``net_a`` replaces that window (net_b's Cells were never hooked);
6. a window ``step()`` re-opened is closed by the next ``step()`` as any
   other, also a watched or sentinel one of a forward-only step (it hooks
   no call, and was dropped as unused: not counted, no warning, the policy
   learned nothing); one ended by exit is dropped only when no Cell was
   called in it either;
7. L0 without ``has_aux``: every forward output is differentiated, so an
   inf/nan output 1 is "the loss" again, said before the backward pass.
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
from runtime_support import (  # noqa: E402
    assert_origin_invariant, dump_records, float16_mlp, isolate, write_runtime_config,
)

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
          overflow: Callable[[int], bool] = lambda step: step == BAD_STEP,
          evaluate: Callable[[int], bool] = lambda step: False) -> None:
    """``steps`` SGD steps of a float16 MLP (seed 3) whose batch is scaled
    by 3000 where ``overflow(step)`` (float16 overflows there). ``pattern``:
    ``"each"`` start/stop/step around every step (the README's loop),
    ``"once"`` ``start()`` before the loop and ``step()`` after each step,
    no ``stop()``, ``"once-stop"`` the same with ``stop()`` after the loop,
    ``"forward-first"`` a forward pass of the net, then ``start()`` and the
    step, every step, no ``stop()``.
    At L0 ``start`` gets the net. Where ``evaluate(step)``, the step runs
    the net's forward pass alone (an evaluation step: no gradients, no
    update)."""
    net, optimizer, grad_fn = float16_mlp()
    rng = np.random.default_rng(0)

    def start() -> None:
        debugger.start(net) if level == "L0" else debugger.start()

    if pattern.startswith("once"):
        start()
    for step in range(steps):
        if pattern == "forward-first":
            net(Tensor(np.ones((4, 8), np.float16)))
        if pattern in ("each", "forward-first"):
            start()
        x = Tensor(rng.normal(size=(4, 8)).astype(np.float16) * (3000 if overflow(step) else 1))
        y = Tensor(rng.normal(size=(4, 1)).astype(np.float32))
        if evaluate(step):
            net(x * 30)  # float16 overflows where the batch of a training step would
        else:
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
    # kept beside the dump for probe report, which quotes it when the dump holds no record
    from msprobe_lint.live_writers import read_writers

    assert [w.summary for w in read_writers(debugger.dump_path)] == [err.strip()], err


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


# -- 5. start(model) every step, no stop(), another model in turn ---------------------------------------------------
def train_two(debugger: Any, pattern: str, overflow: bool = True, masked: bool = False, steps: int = 5) -> None:
    """Two float16 MLPs (seed 5) trained in turn: ``net_a`` in the even
    steps, ``net_b`` in the odd ones, ``start(net)`` at the start of every
    step at L0, ``step()`` at its end; ``pattern`` ``"each"`` calls
    ``stop()`` before ``step()``, ``"no-stop"`` never does. With
    ``overflow`` the batch of step 3 (net_b's) is 1e5, above float16's
    largest value: net_b overflows. ``masked``: that batch's result only
    decides a flag, outside the differentiated loss (which stays finite)."""
    ms.set_seed(5)

    def make() -> tuple:
        net = nn.SequentialCell([nn.Dense(4, 4), nn.Dense(4, 1)])
        net.to_float(ms.float16)
        optimizer = nn.SGD(net.trainable_params(), learning_rate=1e-3)
        ones = Tensor(np.ones((2, 4), np.float32))
        if masked:
            def forward(x, y):
                flag = ops.stop_gradient(ops.isfinite(net(x)).all().astype(ms.float32))
                return ((net(ones).astype(ms.float32) - y) ** 2).mean() + flag
        else:
            def forward(x, y):
                return ((net(x).astype(ms.float32) - y) ** 2).mean()
        return net, optimizer, ms.value_and_grad(forward, None, optimizer.parameters)

    models = [make(), make()]
    y = Tensor(np.zeros((2, 1), np.float32))
    for step in range(steps):
        net, optimizer, grad_fn = models[step % 2]
        debugger.start(net)
        _, grads = grad_fn(Tensor(np.full((2, 4), 1e5 if overflow and step == BAD_STEP else 1.0, np.float32)), y)
        optimizer(grads)
        if pattern == "each":
            debugger.stop()
        debugger.step()


@pytest.mark.parametrize("masked", [False, True])
def test_start_with_another_model_in_a_step_step_reopened_hooks_that_model(make, capsys, masked):
    """A review's finding: ``start(net)`` every step and never ``stop()``,
    net_a in the even steps and net_b in the odd ones, net_b overflowing
    in step 3. ``step()`` re-opened each step's window with the last
    model, net_a, and the user's ``start(net_b)`` returned early (already
    started): net_b's Cells were never hooked, so the overflow masked
    before the loss was never seen ("no overflow found in 5 checked
    step(s)") and the one that reaches the loss got an ``outside`` record
    instead of net_b's Cell. That ``start()`` now ends the window
    ``step()`` opened and opens one with net_b: the records are those of
    the same loop with ``stop()``, record for record."""
    usual, reopened = make("usual", "L0"), make("reopened", "L0")
    train_two(usual, "each", masked=masked)
    train_two(reopened, "no-stop", masked=masked)
    expected = dump_records(Path(usual.dump_path))
    assert {step for step, _ in expected} == {BAD_STEP}
    assert any(record["origin"] and record["name"].startswith("Cell.") for _, record in expected), expected
    assert dump_records(Path(reopened.dump_path)) == expected
    assert "no overflow found" not in exit_line(reopened, capsys)


@pytest.mark.parametrize("level", ["L0", "L1"])
def test_start_every_step_without_stop_counts_each_step_once(make, capsys, level):
    """The user's ``start()`` in a step whose window ``step()`` opened,
    with another model (L0, two models in turn) or after calls of the step
    were checked (L1, a call before ``start()``), ends that window and
    opens the user's in the same step: five steps are five checked steps,
    none cut short, and the last ``step()``'s unused window is not one."""
    debugger = make("reopened", level)
    if level == "L0":
        train_two(debugger, "no-stop", overflow=False)
    else:
        for _ in range(5):
            ops.exp(Tensor(np.ones(3, np.float32)))  # checked in the window step() opened
            debugger.start()
            ops.exp(Tensor(np.ones(3, np.float32)))
            debugger.step()
    err = exit_line(debugger, capsys)
    assert "probe_runtime: no overflow found in 5 checked step(s)" in err, err
    assert "did not reach stop()" not in err and err.count("probe_runtime:") == 1


@pytest.mark.parametrize("form", ["cell", "list"])
def test_start_with_the_same_model_keeps_the_window_step_opened(make, form):
    """``start(net)`` with the model ``step()`` re-opened the window with
    (``start([net, loss_fn])``: a new list of the same Cells), before any
    call of the step: that window is kept (it becomes the user's), not
    closed and opened again."""
    debugger = make("same", "L0")
    net, loss_fn = nn.Dense(2, 2), nn.MSELoss()
    model = (lambda: net) if form == "cell" else (lambda: [net, loss_fn])
    debugger.start(model())
    net(Tensor(np.ones((1, 2), np.float32)))
    debugger.step()
    window = debugger.windows.current
    assert window is not None
    debugger.start(model())
    assert debugger.windows.current is window


# -- 6. the window step() opened is closed by the next step() as any other ------------------------------------------
def test_auto_checks_an_evaluation_step_after_start_once_is_a_step_without_gradients(make, capsys, caplog):
    """A review's finding: under auto checks, ``start()`` once and ``step()``
    in the loop, steps 3 and 4 forward-only (an evaluation), step 4's
    overflowing float16. The watched window of step 3 hooks no call, so it
    looked unused and was dropped: not counted, no warning that it computed
    no gradients, and step 4 stayed watched and saw nothing ("no overflow
    found in 3 checked step(s)"). The next ``step()`` now closes it as any
    other: the warning, step 4 under exact checks, its origin, the records
    of the start/stop/step loop."""
    usual, once = make("usual", "L1", "auto"), make("once", "L1", "auto")
    evaluate = lambda step: step >= BAD_STEP  # noqa: E731
    overflow = lambda step: step == BAD_STEP + 1  # noqa: E731
    train(usual, "L1", "each", overflow=overflow, evaluate=evaluate)
    caplog.clear()
    train(once, "L1", "once", overflow=overflow, evaluate=evaluate)
    said = [r.getMessage() for r in caplog.records if "computed no gradients" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"probe_runtime: step {BAD_STEP} computed no gradients"), said
    expected = dump_records(Path(usual.dump_path))
    assert {step for step, _ in expected} == {BAD_STEP + 1}
    assert any(record["origin"] for _, record in expected)
    assert dump_records(Path(once.dump_path)) == expected
    assert "no overflow found" not in exit_line(once, capsys)


def test_sentinel_checks_count_forward_only_steps_after_start_once(make, capsys):
    """A review's finding: sentinel checks, ``start()`` once, five
    forward-only steps: "1 checked step(s)" where the start/stop/step loop
    says 5 (each sentinel window hooks no call, and looked unused)."""
    debugger = make("once", "L1", "sentinel")
    train(debugger, "L1", "once", overflow=lambda step: False, evaluate=lambda step: True)
    err = exit_line(debugger, capsys)
    assert "probe_runtime: no overflow found in 5 checked step(s)" in err, err


def test_a_watched_window_that_ran_a_forward_pass_before_exit_is_not_dropped(make, capsys, caplog):
    """The window the last ``step()`` opens under auto checks is watched:
    no hook sees a forward pass there, but a Cell called in it is a sign
    that one ran (an evaluation after the loop, before exit): it is closed
    as any other, not dropped: counted, cut short, said to have computed
    no gradients. Without a Cell call it is dropped (five checked steps)."""
    debugger = make("once", "L1", "auto")
    train(debugger, "L1", "once", overflow=lambda step: False, steps=3)
    assert debugger.window == "watched"
    caplog.clear()
    nn.Dense(2, 2)(Tensor(np.ones((1, 2), np.float32)))  # after the loop, no stop(): still in step 3's window
    err = exit_line(debugger, capsys)
    assert "no overflow found in 4 checked step(s)" in err and "; step 3 did not reach stop()" in err, err
    said = [r.getMessage() for r in caplog.records if "computed no gradients" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("probe_runtime: step 3 computed no gradients"), said


def test_the_cell_call_sign_puts_cell_call_back(make):
    """The sign of a Cell call in a window ``step()`` opened wraps
    ``nn.Cell.__call__`` until the first call, and puts it back then and
    when the window ends."""
    original = nn.Cell.__dict__["__call__"]
    debugger = make("once", "L1", "auto")
    train(debugger, "L1", "once", overflow=lambda step: False, steps=2)
    assert nn.Cell.__dict__["__call__"] is not original  # armed: nothing called since step()
    nn.Dense(2, 2)(Tensor(np.ones((1, 2), np.float32)))
    assert nn.Cell.__dict__["__call__"] is original
    debugger.step()
    assert nn.Cell.__dict__["__call__"] is not original
    debugger.stop()
    assert nn.Cell.__dict__["__call__"] is original


# -- 7. L0 without has_aux: every forward output is the loss ----------------------------------------------------------
def test_l0_without_has_aux_every_forward_output_is_the_loss(make):
    """A review's finding: ``value_and_grad(forward, None, weights)``
    without ``has_aux`` differentiates every output of a forward that
    returns (loss, extra); extra = exp(logits * 1000) is inf, computed
    outside the model at L0. The fix for ``has_aux=True`` (output 1 is
    auxiliary there) had made it a later generic record; it is again "the
    loss", said before the backward pass (no backward entry an origin)."""
    debugger = make("noaux", "L0")
    net = nn.Dense(4, 2, weight_init="ones", bias_init="zeros")

    def forward(x, y):
        logits = net(x)
        return ((logits - y) ** 2).mean(), ops.exp(logits * 1000.0).sum()

    grad_fn = ms.value_and_grad(forward, None, net.trainable_params())
    debugger.start(net)
    grad_fn(Tensor(np.ones((2, 4), np.float32)), Tensor(np.zeros((2, 2), np.float32)))
    debugger.stop()
    records = [record for _, record in dump_records(Path(debugger.dump_path))]
    assert [record["kind"] for record in records] == ["outside"], records
    assert records[0]["nonfinite"] == ["forward output 1"]
    assert records[0]["message"].startswith("inf/nan in forward output 1 (the loss) of the gradient computation at ")
    assert "before its backward pass" in records[0]["message"]


# -- 7. the user's start() with the model the window checks keeps it; another model at L0 replaces it ---------------
@pytest.mark.parametrize("checks", ["auto", "sentinel"])
def test_a_forward_pass_before_start_with_the_same_model_keeps_the_window(make, capsys, caplog, checks):
    """A review's finding: a forward pass of the net, then ``start(net)``,
    every step, no ``stop()``: the Cell call made the window ``step()``
    opened look used, so ``start(net)`` ended it: under auto and sentinel
    checks each such window was closed on its own, said to have computed
    no gradients, and the policy learned from it. The same model keeps
    the window: the all-clear of the start/stop/step loop, no warning."""
    usual, first = make("usual", "L0", checks), make("first", "L0", checks)
    train(usual, "L0", "each", overflow=lambda step: False)
    expected = exit_line(usual, capsys)
    caplog.clear()
    train(first, "L0", "forward-first", overflow=lambda step: False)
    assert not [r for r in caplog.records if "no gradient" in r.getMessage()], caplog.records
    assert exit_line(first, capsys) == expected.replace("/usual/", "/first/")


def train_gan(debugger: Any, pattern: str, steps: int = 5) -> None:
    """A GAN-style loop at L0: each step ``start(gen)`` and one SGD step of
    the float16 MLP ``gen``, then ``start(disc)`` and one of ``disc``
    (seed 7), then ``step()``; ``pattern`` ``"each"`` calls ``stop()``
    after each part, ``"no-stop"`` never does. disc's batch is 1e5 in step
    3, above float16's largest value."""
    ms.set_seed(7)
    parts = []
    for _ in range(2):
        net = nn.SequentialCell([nn.Dense(4, 4), nn.Dense(4, 1)])
        net.to_float(ms.float16)
        optimizer = nn.SGD(net.trainable_params(), learning_rate=1e-3)
        grad_fn = ms.value_and_grad(lambda x, y, net=net: ((net(x).astype(ms.float32) - y) ** 2).mean(), None,
                                    optimizer.parameters)
        parts.append((net, optimizer, grad_fn))
    y = Tensor(np.zeros((2, 1), np.float32))
    for step in range(steps):
        for which, (net, optimizer, grad_fn) in enumerate(parts):
            debugger.start(net)
            scale = 1e5 if which == 1 and step == BAD_STEP else 1.0
            _, grads = grad_fn(Tensor(np.full((2, 4), scale, np.float32)), y)
            optimizer(grads)
            if pattern == "each":
                debugger.stop()
        debugger.step()


def test_a_second_start_with_another_model_in_a_step_checks_that_model(make):
    """A review's finding: ``start(gen)`` then ``start(disc)`` in each step
    of a GAN loop with no ``stop()``: the second ``start()`` returned
    early (already started), disc's Cells were never hooked, and its
    step-3 overflow got an ``outside`` record ("the loss was computed
    outside the Cells given to start()"). At L0 another model's
    ``start()`` ends the open window and opens one with it: the records
    of the loop that calls ``stop()`` after each part."""
    usual, nostop = make("usual", "L0"), make("nostop", "L0")
    train_gan(usual, "each")
    train_gan(nostop, "no-stop")
    expected = dump_records(Path(usual.dump_path))
    assert min(step for step, _ in expected) == BAD_STEP  # and later steps carry disc's inf weights
    assert any(record["origin"] and record["name"].startswith("Cell.") for _, record in expected), expected
    assert dump_records(Path(nostop.dump_path)) == expected


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_start_again_after_an_exception_skipped_stop_and_step_is_said(make, capsys, level):
    """A hunt's finding: a loop that catches a bad batch's exception and
    goes on skipped stop() and step(); the next start() continued the open
    window, the run's steps fell behind the loop's, and nothing said so.
    The exit line says in which step start() came again."""
    debugger = make("restart", level)
    net, optimizer, grad_fn = float16_mlp()
    rng = np.random.default_rng(0)
    for iteration in range(4):
        try:
            debugger.start(net) if level == "L0" else debugger.start()
            if iteration == 1:
                raise ValueError("a bad batch")
            x = Tensor(rng.normal(size=(4, 8)).astype(np.float16))
            _, grads = grad_fn(x, Tensor(rng.normal(size=(4, 1)).astype(np.float32)))
            optimizer(grads)
            debugger.stop()
            debugger.step()
        except ValueError:
            continue
    err = exit_line(debugger, capsys)
    assert "no overflow found in 3 checked step(s)" in err, err
    assert "start() was called again in step 1 (2 start() calls) while its window was open" in err, err
