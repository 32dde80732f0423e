"""Sentinel checks (``checks="sentinel"``): no call checked until the loss or
a gradient holds inf/nan, then exact checks from the next start().

In this process (CPU); each test stops its debugger, so nothing leaks.
"""
from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402
from mindspore.ops.composite import base as composite_base  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from probe_runtime.grad.watch import BACKWARD, FORWARD, label_gradients  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
import runtime_support  # noqa: E402
from runtime_support import (PatchedState, assert_origin_invariant, assert_same_training, isolate,  # noqa: E402
                             train_mlp, write_runtime_config)

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def grad_entries():
    """The (forward, backward) gradient entry points the sentinel wraps, as
    they are now: the two functions of ``mindspore.ops.composite.base``
    (2.10), else the PyNative executor's own ``end_graph`` and ``grad``
    (2.7; the class's function while no wrapper is on the instance)."""
    if hasattr(composite_base, FORWARD):
        return getattr(composite_base, FORWARD), getattr(composite_base, BACKWARD)
    from mindspore.common.api import _pynative_executor as executor

    return tuple(vars(executor).get(name, getattr(type(executor), name)) for name in ("end_graph", "grad"))


GRAD_FUNCTIONS = grad_entries()
_SOURCE = runtime_support.__file__
GRAD_LINE = f"{_SOURCE}:{open(_SOURCE).read().splitlines().index('    loss, grads = grad_fn(*inputs)') + 1}"


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    made = []

    def make(level="L1", **changes):
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level=level, **changes)),
                                     checks="sentinel")
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
        assert_origin_invariant(debugger.dump_path)
    ORIGINAL.assert_untouched(parked_ok=True)
    assert grad_entries() == GRAD_FUNCTIONS


def index(tmp_path, step):
    path = tmp_path / "dump" / f"step{step}" / "rank" / "overflow.json"
    return read_json(str(path)) if path.exists() else None


def train(debugger, level, overflow_steps, steps=4):
    """train_mlp with the float16 overflow in ``overflow_steps``."""
    return train_mlp(debugger, level=level, steps=steps, overflow=lambda step: step in overflow_steps)


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_sentinel_step_records_what_held_inf_then_exact_checks_name_the_calls(work, level):
    tmp_path, make = work
    debugger = make(level=level)
    train(debugger, level, overflow_steps={1, 2})
    assert index(tmp_path, 0) is None                      # clean step: nothing written
    (record,) = index(tmp_path, 1)                         # the sentinel's step: one record, no call named
    assert record["kind"] == "sentinel" and record["name"] == "sentinel" and not record["origin"]
    assert record["step"] == 1 and record["where"] == GRAD_LINE  # the user's grad_fn(...) line
    assert "gradient of 0.weight" in record["nonfinite"]
    assert "exact " + level + " checks run from the next start() on" in record["message"]
    assert not (tmp_path / "dump" / "step1" / "rank" / "dump.json").exists()
    exact = index(tmp_path, 2)  # the next step: exact records; the SGD update of step 1 made the weights nan
    assert exact and all(r.get("kind") != "sentinel" for r in exact)
    assert "already held inf/nan at start()" in exact[0]["entered"]["message"]
    assert (tmp_path / "dump" / "step2" / "rank" / "dump.json").exists()


class Boom(nn.Cell):
    def construct(self, x):
        return ops.exp(x)


@pytest.mark.parametrize("level, origin", [("L1", "Functional.exp.0.forward"), ("L0", "Cell.1.Boom.forward.0")])
def test_an_overflow_that_comes_back_is_named_at_its_origin_the_step_after(work, level, origin):
    """A loss-scale style loop: the update is skipped when a gradient is not
    finite, so the weights stay finite and the overflow comes back."""
    tmp_path, make = work
    debugger = make(level=level)
    ms.set_seed(1)
    net = nn.SequentialCell([nn.Dense(4, 4), Boom(), nn.Dense(4, 1)])
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    for step in range(4):
        x = Tensor(np.full((2, 4), 200.0 if step >= 1 else 0.1, np.float32))
        debugger.start(net)
        _, grads = grad_fn(x)
        if bool(ms.amp.all_finite(grads)):
            optimizer(grads)
        debugger.stop()
        debugger.step()
    assert index(tmp_path, 0) is None
    assert [r["kind"] for r in index(tmp_path, 1)] == ["sentinel"]
    first = index(tmp_path, 2)[0]
    assert first["name"] == origin and first["origin"]


def test_clean_training_writes_nothing_and_is_bit_identical(work, capsys):
    tmp_path, make = work
    plain = train(None, "L1", overflow_steps=set())
    debugger = make()
    probed = train(debugger, "L1", overflow_steps=set())
    assert_same_training(plain, probed)
    assert not list((tmp_path / "dump").glob("step*"))
    assert debugger.windows.policy.sentinel_armed                          # never switched to exact checks


def test_training_with_overflow_is_bit_identical(work):
    _, make = work
    plain = train(None, "L1", overflow_steps={1})
    assert_same_training(plain, train(make(), "L1", overflow_steps={1}))


def test_sentinel_steps_patch_no_api_and_put_the_wrappers_back(work):
    _, make = work
    debugger = make()
    add = Tensor.__add__
    debugger.start()
    assert Tensor.__add__ is add                            # no API is intercepted in a sentinel step
    assert grad_entries()[1] is not GRAD_FUNCTIONS[1]
    debugger.stop()
    assert grad_entries()[1] is GRAD_FUNCTIONS[1]


def test_a_gradient_only_overflow_is_seen(work):
    tmp_path, make = work
    debugger = make()
    x = Tensor(np.array([0.0, 4.0], np.float32))
    debugger.start()
    grad = ms.grad(lambda t: ops.sqrt(t).sum())(x)          # finite output, inf gradient at 0
    debugger.stop()
    assert np.isinf(grad.asnumpy()[0])
    (record,) = index(tmp_path, 0)
    assert record["nonfinite"] == ["gradient w.r.t. input 0"]


def test_a_window_without_gradients_is_said_once(work, caplog):
    tmp_path, make = work
    debugger = make()
    for _ in range(2):
        debugger.start()
        ops.exp(Tensor(np.array([100.0], np.float32)))      # inf, but no gradient computed: not seen
        debugger.stop()
        debugger.step()
    debugger.stop()                                         # no window open: nothing to judge, nothing said
    said = [r for r in caplog.records if "saw no gradient computation" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
    assert "step 0" in said[0].getMessage()
    assert not list((tmp_path / "dump").glob("step*"))


def test_checks_from_the_environment_and_a_bad_value(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    config = str(write_runtime_config(tmp_path))
    monkeypatch.setenv("PROBE_CHECKS", "sentinel")
    assert PrecisionDebugger(config_path=config).checks == "sentinel"
    assert PrecisionDebugger(config_path=config, checks="exact").checks == "exact"  # the argument wins
    monkeypatch.setenv("PROBE_CHECKS", "fast")
    with pytest.raises(ValueError, match="PROBE_CHECKS must be 'exact', 'auto' or 'sentinel', not 'fast'"):
        PrecisionDebugger(config_path=config)
    with pytest.raises(ValueError, match="checks must be 'exact', 'auto' or 'sentinel'"):
        PrecisionDebugger(config_path=config, checks="fastest")
    monkeypatch.setenv("PROBE_CHECKS", "Sentinel")  # case does not matter, as for PROBE_SYNC
    assert PrecisionDebugger(config_path=config).checks == "sentinel"
    monkeypatch.delenv("PROBE_CHECKS")
    assert PrecisionDebugger(config_path=config).checks == "exact"  # the default (issue 33)
    # PROBE_SYNC is refused the same way, not taken silently
    for good in ("0", "1", "auto", " ON ", ""):
        monkeypatch.setenv("PROBE_SYNC", good)
        PrecisionDebugger(config_path=config)
    monkeypatch.setenv("PROBE_SYNC", "maybe")
    with pytest.raises(ValueError, match="PROBE_SYNC must be '0', '1' or 'auto' .*, not 'maybe'"):
        PrecisionDebugger(config_path=config)


def test_gradients_are_labelled_by_parameter_and_input_position():
    weights = [ms.Parameter(Tensor(np.ones(2, np.float32)), name="w"),
               ms.Parameter(Tensor(np.ones(1, np.float32)), name="b")]
    gx, gy, gw, gb = (Tensor(np.ones(n, np.float32)) for n in (3, 4, 2, 1))

    def labels(out, weights, position=None):
        return [label for label, _ in label_gradients(out, weights, position)]

    assert labels((gx, (gw, gb)), weights, 0) == ["gradient w.r.t. input 0", "gradient of w", "gradient of b"]
    assert labels((gw, gb), weights) == ["gradient of w", "gradient of b"]
    assert labels(gx, None) == ["gradient w.r.t. input 0"]
    assert labels(gx, None, 2) == ["gradient w.r.t. input 2"]             # the position, not a count
    assert labels((gx, gy), None, (0, 2)) == ["gradient w.r.t. input 0", "gradient w.r.t. input 2"]
    assert labels((gx, (gw, gb)), weights, 2) == ["gradient w.r.t. input 2", "gradient of w", "gradient of b"]
    assert labels(((gx, gy), gw), None, (0, 1)) == [                        # a tuple input
        "gradient w.r.t. input 0 item 0", "gradient w.r.t. input 0 item 1", "gradient w.r.t. input 1"]
    assert FORWARD != BACKWARD


def test_one_parameter_as_weights_is_labelled_and_never_iterated(work, monkeypatch):
    """weights=<one Parameter> (MindSpore accepts it): iterating it would
    slice it row by row at every gradient call."""
    tmp_path, make = work
    table = ms.Parameter(Tensor(np.ones((3000, 4), np.float32)), name="embedding_table")
    assert [label for label, _ in label_gradients(Tensor(np.ones((3000, 4), np.float32)), table)] == [
        "gradient of embedding_table"]
    iterated = []
    debugger = make()
    x = Tensor(np.array([[np.inf, 1.0, 1.0, 1.0]], np.float32))
    with monkeypatch.context() as patch:  # undone before the fixture checks that Parameter is untouched
        patch.setattr(ms.Parameter, "__iter__", lambda self: iterated.append(1) or iter(()), raising=False)
        debugger.start()
        ms.grad(lambda t: ops.matmul(t, table.T).sum(), None, table)(x)
        debugger.stop()
    assert not iterated
    assert index(tmp_path, 0)[0]["nonfinite"] == ["forward output 0", "gradient of embedding_table"]


def test_a_second_debugger_is_refused_while_one_watches(work, tmp_path, caplog):
    _, make = work
    # another config: built again with the same arguments, it would be the first (msprobe's singleton)
    first, second = make(), make(nums=2)
    first.start()
    second.start()                                          # refused: it would wrap the first one's wrappers
    assert any("another PrecisionDebugger is already started" in r.getMessage() for r in caplog.records)
    second.stop()
    assert not any("saw no gradient computation" in r.getMessage() for r in caplog.records)  # it never watched
    assert grad_entries()[1] is not GRAD_FUNCTIONS[1]  # the first one's, still on
    first.stop()
    assert grad_entries()[1] is GRAD_FUNCTIONS[1]


def test_many_gradient_computations_in_one_window_are_judged_as_they_come(work, monkeypatch):
    """Gradient accumulation: each result is judged when it returns and let
    go (no tensor is held); an inf in an early micro batch is still
    reported, once, with its line."""
    tmp_path, make = work
    debugger = make()
    w = ms.Parameter(Tensor(np.ones(4, np.float32)), name="w")
    grad_fn = ms.value_and_grad(lambda x: (x * w).sum(), None, [w])
    judged = []
    debugger.start()
    for micro in range(10):
        grad_fn(Tensor(np.full(4, np.inf if micro == 1 else 1.0, np.float32)))
        judged.append(debugger.grads.computations)
    debugger.stop()
    assert judged == list(range(1, 11))                     # judged at return, one by one
    assert all(c.output is None and c.gradients is None for c in debugger.grads.findings)
    (record,) = index(tmp_path, 0)
    assert record["nonfinite"] == ["forward output 0", "gradient of w"]


@pytest.mark.parametrize("overflow", [False, True])
def test_the_device_path_judges_as_the_host_path(work, overflow, monkeypatch):
    """Other backends reduce on the device first (mindspore.amp.all_finite)
    and read on the host only to name what is not finite: forced here on
    CPU, the records are those of the host path."""
    tmp_path, make = work
    debugger = make()
    debugger.grads.on_device = True
    reads = []
    from probe_runtime.check import verdict

    to_host = verdict.to_host
    monkeypatch.setattr(verdict, "to_host", lambda *a, **k: reads.append(1) or to_host(*a, **k))
    train(debugger, "L1", overflow_steps={1} if overflow else set(), steps=2)
    if overflow:
        (record,) = index(tmp_path, 1)
        assert "gradient of 0.weight" in record["nonfinite"] and reads
    else:
        assert not list((tmp_path / "dump").glob("step*"))
        assert not reads and debugger.grads.on_device      # nothing read on the host, the path kept


def test_gradients_made_inf_between_the_computation_and_the_optimizer_are_seen_that_step(work):
    """A fresh user's finding: gradients user code made inf after the
    gradient computation (an unscale by a scale of 0) and the optimizer
    wrote into the weights got no record in that step; the next step's
    sentinel named the next step. The optimizer's inputs that no finite
    gradient result holds are judged: the record is in the right step,
    names the gradients and the optimizer, and exact checks follow."""
    tmp_path, make = work
    debugger = make()
    ms.set_seed(2)
    net = nn.Dense(3, 2)
    optimizer = nn.SGD(net.trainable_params(), 0.1)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    x = Tensor(np.ones((2, 3), np.float32))
    for step in range(3):
        debugger.start()
        _, grads = grad_fn(x)
        scale = 0.0 if step == 1 else 1.0
        grads = tuple(g / scale for g in grads)                # 1/0: inf in every gradient of step 1
        optimizer(grads)
        debugger.stop()
        debugger.step()
    assert index(tmp_path, 0) is None
    (record,) = index(tmp_path, 1)
    assert record["kind"] == "sentinel", record
    assert record["nonfinite"] == [f"gradient of {p.name}" for p in net.trainable_params()], record
    assert "given to the optimizer SGD" in record["message"], record
    assert debugger.windows.policy.next_kind() == "exact"


def test_gradients_handed_on_as_computed_are_not_read_again(work, monkeypatch):
    """The optimizer's inputs a finite gradient result holds are not read
    a second time (the sentinel's cost is one read of each gradient)."""
    from probe_runtime.check import verdict

    _, make = work
    debugger = make()
    net = nn.Dense(3, 2)
    optimizer = nn.SGD(net.trainable_params(), 0.1)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    reads = []
    original = verdict.HostCache.finite
    monkeypatch.setattr(verdict.HostCache, "finite", lambda self, t: reads.append(id(t)) or original(self, t))
    debugger.start()
    _, grads = grad_fn(Tensor(np.ones((2, 3), np.float32)))
    optimizer(grads)
    debugger.stop()
    assert len(reads) == 3 and len(set(reads)) == 3, reads      # the loss and two gradients, once each
