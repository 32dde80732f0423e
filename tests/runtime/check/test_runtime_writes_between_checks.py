"""In-place writes between a checked call and the moment its tensors are
read (a fresh user's hunt; each test fails without ``l0.mutations`` and
the ``asnumpy`` wrapper of L1).

The checker reads what a call or Cell returned at its resolution points,
not at once. A write into those tensors in between (``h[...] = 0`` in a
parent's ``construct``, a NaN guard on the gradients before the optimizer,
numpy writing through ``asnumpy()``) changed what was judged: an
all-clear for an output that was +inf, a sub-Cell blamed for its parent's
inf, a gradient overflow called "outside the checked Cells".
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_support import isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture
def debugger(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def make(level: str, folder=None):
        where = folder or tmp_path
        where.mkdir(exist_ok=True)
        made.append(PrecisionDebugger(config_path=str(write_runtime_config(where, level=level))))
        return made[-1]

    yield make
    for one in made:
        one.stop()
        one.windows.summary.said = True


def first_records(debugger, count=1):
    path = f"{debugger.dump_path}/step0/rank/overflow.json"
    try:
        found = read_json(path)
    except OSError:
        return []
    return [(r["name"], r["origin"]) for r in found[:count]]


class Exploding(nn.Cell):
    def construct(self, x):
        return ops.exp(x * 100.0)  # float32 exp of 100 and more: +inf


class Halving(nn.Cell):
    def construct(self, x):
        return x * 0.5


class Parent(nn.Cell):
    def __init__(self, inner: nn.Cell, write: str):
        super().__init__()
        self.first = nn.Dense(3, 3, weight_init="ones", bias_init="zeros")
        self.inner = inner
        self.last = nn.Dense(3, 1, weight_init="ones", bias_init="zeros")
        self.write = write

    def construct(self, x):
        h = self.inner(self.first(x))
        if self.write == "clean":
            h[h > 1e30] = 0.0  # hides the +inf the inner Cell returned
        else:
            h[:] = h * 1e30 * 1e10  # the parent's own code overflows, into the inner Cell's output
        return self.last(h)


def test_l0_an_output_cleaned_in_place_by_the_parent_is_still_an_origin(debugger):
    """Forward only: the inner Cell's +inf output, set to 0 by its parent
    before the next Cell, gave "no overflow found"."""
    dbg = debugger("L0")
    net = Parent(Exploding(), "clean")
    dbg.start(net)
    out = net(Tensor(np.ones((1, 3), np.float32)))
    dbg.stop()
    dbg.step()
    assert np.isfinite(out.asnumpy()).all()  # the overflow is gone from what the model returns
    assert first_records(dbg) == [("Cell.inner.Exploding.forward.0", True)]


def test_l0_a_sub_cell_is_not_blamed_for_inf_its_parent_wrote_into_its_output(debugger):
    dbg = debugger("L0")
    net = Parent(Halving(), "overflow")
    dbg.start(net)
    net(Tensor(np.ones((1, 3), np.float32)))
    dbg.stop()
    dbg.step()
    records = read_json(f"{dbg.dump_path}/step0/rank/overflow.json")
    assert not any(r["name"].startswith("Cell.inner.") for r in records), records
    assert records[0]["origin"] is True and records[0]["name"].startswith("Cell.Parent."), records


def _nan_guard_step(dbg, guard: bool):
    ms.set_seed(0)
    quarter = [Tensor(np.full(shape, 0.25, np.float32)) for shape in ((4, 4), (1, 4))]
    net = nn.SequentialCell([nn.Dense(4, 4, weight_init=quarter[0]), nn.Dense(4, 1, weight_init=quarter[1])])
    net.to_float(ms.float16)
    opt = nn.SGD(net.trainable_params(), 1e-3)
    grad_fn = ms.value_and_grad(lambda x: net(x).astype(ms.float32).sum(), None, opt.parameters)
    # the forward pass stays finite (10000 at each layer); the last layer's weight gradient, a sum over
    # the batch of 8 x 10000, passes float16's 65504
    x = np.full((8, 4), 10000.0, np.float16)
    dbg.start(net)
    _, grads = grad_fn(Tensor(x))
    if guard:
        for g in grads:
            g[ops.logical_not(ops.isfinite(g))] = 0.0  # a NaN guard, in place, before the optimizer
    opt(grads)
    dbg.stop()
    dbg.step()


def test_l0_a_nan_guard_on_the_gradients_does_not_move_the_origin_outside(debugger, tmp_path):
    """The same step with and without the guard gives the same first
    record; before, with the guard it was an ``outside`` record pointing
    at the loss."""
    unguarded = debugger("L0", tmp_path / "plain")
    _nan_guard_step(unguarded, guard=False)
    guarded = debugger("L0", tmp_path / "guarded")
    _nan_guard_step(guarded, guard=True)
    expected = first_records(unguarded, 2)
    assert expected and all(origin for _, origin in expected), expected
    assert first_records(guarded, 2) == expected


def test_l1_numpy_writing_through_asnumpy_does_not_hide_the_call(debugger):
    """``np.nan_to_num(t.asnumpy(), copy=False)`` writes into the tensor
    (on CPU the array shares its memory): the ``exp`` that overflowed was
    judged on the cleaned values, an all-clear."""
    probe = ops.exp(Tensor(np.zeros((1,), np.float32)))
    probe.asnumpy()[0] = 5.0
    shared = float(probe.asnumpy()[0]) == 5.0  # MindSpore 2.10's CPU backend; 2.7's array is a copy (a review)
    dbg = debugger("L1")
    x = Tensor(np.ones((1, 3), np.float32))
    dbg.start()
    e = ops.exp(x * 100.0)
    np.nan_to_num(e.asnumpy(), copy=False, posinf=1e30)
    total = e.sum()
    dbg.stop()
    dbg.step()
    assert bool(np.isfinite(total.asnumpy())) == shared  # the write reached the tensor where memory is shared
    assert first_records(dbg) == [("Functional.exp.0.forward", True)]


@pytest.mark.parametrize("rate", [1e-3, 1e38])
@pytest.mark.parametrize("wrapped", [False, True])
def test_l0_a_hand_written_update_that_writes_inf_is_no_all_clear(debugger, rate, wrapped):
    """A hunt's finding: a hand-written update (no nn.Optimizer) that
    wrote inf into the weights in the last step gave "no overflow found";
    L0 checks no code outside the Cells. The window closes with a note
    naming the weights; a finite update gets none."""
    dbg = debugger("L0")
    dense = nn.Dense(2, 1, weight_init="ones", bias_init="zeros")
    net = nn.SequentialCell([dense]) if wrapped else dense  # a sub-Cell's weights, or the model's own
    params = net.trainable_params()
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, params)
    dbg.start(net)
    _, grads = grad_fn(Tensor(np.full((1, 2), 4.0, np.float32)))
    for param, grad in zip(params, grads):
        ops.assign(param, param - grad * rate * 1e10)
    dbg.stop()
    dbg.step()
    overflowed = not np.isfinite(dense.weight.asnumpy()).all()
    assert overflowed == (rate > 1)
    records = read_json(f"{dbg.dump_path}/step0/rank/overflow.json") if overflowed else []
    if overflowed:
        assert [r["kind"] for r in records] == ["outside"], records
        owner = "Cell.0.Dense" if wrapped else "Cell.Dense"
        assert f"of {owner} held inf/nan when the window closed" in records[0]["message"], records[0]["message"]
        assert records[0]["nonfinite"][:2] == ["Parameter 0.weight", "Parameter 0.bias"] if wrapped else \
            records[0]["nonfinite"][:2] == ["Parameter weight", "Parameter bias"], records[0]
    else:
        assert first_records(dbg) == []


def test_a_batch_buffer_refilled_through_numpy_is_read_before_the_refill(debugger):
    """A hunt's finding: micro-batches copied into one numpy buffer wrapped
    once with Tensor.from_numpy (shared memory). The checks of the first
    micro-batch's calls were read after the buffer held the second, so the
    MatMul that took a NaN batch was called the origin, with the next
    batch's statistics. A gradient computation's return is a resolution
    point now: the NaN is said to come in with the data."""
    dbg = debugger("L1")
    net = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
    buffer = np.zeros((2, 3), np.float32)
    shared = Tensor.from_numpy(buffer)
    for step in range(3):  # (after the first steps the checks are read in larger batches)
        batches = [np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)]
        if step == 2:
            batches[0][0, 0] = np.nan
        dbg.start()
        for batch in batches:
            np.copyto(buffer, batch)
            grad_fn(shared)
        dbg.stop()
        dbg.step()
    first = read_json(f"{dbg.dump_path}/step2/rank/overflow.json")[0]
    assert first["name"] == "Primitive.MatMul.0.forward", first
    assert first["origin"] is False and first["entered"]["source"] == "outside", first
