"""A -inf mask by design moved before it is used (probe_runtime.check.by_design.PASS_ON).

A fresh user's prefix-tuning mask (``ops.cat([zeros, causal])``), masks
stacked per head, padded, repeated, reordered, split or top-k selected:
each call only moves the -inf values a ``full(-inf).triu(1)`` made, and a
softmax turns them into exact zeros, so the loss and every gradient stay
finite. The maker was named ORIGIN in every step (with ``overflow_nums``
1, msprobe's default, that hid a real overflow later) because these
movers were not known to pass a -inf on. A real overflow after the moved
mask is still the origin.

Each scenario runs under the default checks and under ``checks="exact"``;
both must give the same records.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, mint, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
T, H = 4, 2


def _causal():
    return ops.full((T, T), float("-inf"), dtype=ms.float32).triu(1)


#: how the [T, T] causal mask becomes the [H, T, T] one added to the scores (each keeps it causal)
MOVERS = {
    "none": lambda c: c.expand_dims(0),
    "cat": lambda c: ops.cat([ops.zeros((T, 1), ms.float32), c[:, 1:]], axis=1).expand_dims(0),
    "stack": lambda c: ops.stack([c] * H),
    "pad": lambda c: ops.pad(c[:, 1:], (1, 0), value=0.0).expand_dims(0),
    "repeat_interleave": lambda c: c.expand_dims(0).repeat_interleave(H, 0),
    "index_select": lambda c: ops.index_select(c, 0, Tensor(np.arange(T), ms.int32)).expand_dims(0),
    "split": lambda c: ops.split(ops.cat([c, c]), T, 0)[0].expand_dims(0),
    "topk": lambda c: ops.flip(ops.topk(c, T)[0], (1,)).expand_dims(0),
    "gather": lambda c: ops.gather(c, Tensor(np.arange(T), ms.int32), 0).expand_dims(0),
    "mint.cat": lambda c: mint.cat([c, c], dim=0)[:T].expand_dims(0),
    "masked_select": lambda c: ops.masked_select(c, ops.ones((T, T), ms.bool_)).reshape(1, T, T),
}


def _scenario(move, blow_up_step=None):
    """Three steps of a small attention block whose mask goes through
    ``move``; in ``blow_up_step`` the scores are multiplied by ``exp(100)``
    (a real overflow: ``Functional.exp``)."""

    def run(debugger):
        net = nn.Dense(4, 4)
        optimizer = nn.SGD(net.trainable_params(), 1e-2)

        def loss_fn(x, scale):
            q = net(x)
            scores = ops.matmul(q, q.T).expand_dims(0).tile((H, 1, 1)) * ops.exp(scale)
            p = ops.softmax(scores + MOVERS[move](_causal()), axis=-1)
            return (ops.matmul(p, q.expand_dims(0)) ** 2).mean()

        grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
        rng = np.random.default_rng(0)
        for step in range(3):
            x = Tensor(rng.normal(size=(T, 4)).astype(np.float32))
            debugger.start()
            _, grads = grad_fn(x, Tensor(100.0 if step == blow_up_step else 0.0, ms.float32))
            if step != blow_up_step:
                optimizer(grads)
            debugger.stop()
            debugger.step()

    return run


@pytest.mark.parametrize("move", sorted(MOVERS))
def test_a_moved_mask_is_no_overflow(tmp_path, monkeypatch, move):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(move), ORIGINAL)
    assert default == [] and exact == [], (default, exact)


@pytest.mark.parametrize("move", ["none", "cat", "topk"])
def test_a_real_overflow_after_a_moved_mask_is_the_origin(tmp_path, monkeypatch, move):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(move, blow_up_step=1), ORIGINAL)
    for records in (default, exact):
        assert records and {step for step, _ in records} == {1}, records
        first = records[0][1]
        assert first["name"] == "Functional.exp.0.forward" and first["origin"] is True, records
        assert [r["name"] for _, r in records if r["origin"]] == [first["name"]], records
