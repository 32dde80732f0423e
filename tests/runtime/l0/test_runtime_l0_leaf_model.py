"""L0 with a leaf Cell as the model given to ``start()`` (one ``nn.Dense``:
a linear probe), and a NaN in the batch of one step.

A fresh user's finding: the model got the NaN and returned it, but a
model with no sub-Cell had no record for that, so the only record of the
step blamed the loss ("no checked Cell made it: the loss was computed
outside the Cells given to start() ... pass the loss Cell to start()"),
even with the loss Cell already given. The model is now recorded,
carried, with ``entered`` naming its input; the loss Cell given with it
carries it on.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn  # noqa: E402

from runtime_support import PatchedState, assert_origin_invariant, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def _scenario(with_loss_cell):
    """Three steps; the batch of step 1 holds one NaN, and that step's
    update is skipped (as a loss scaler does), so the weights stay finite."""

    def run(debugger):
        net = nn.Dense(5, 1)
        loss_fn = nn.BCEWithLogitsLoss()
        optimizer = nn.SGD(net.trainable_params(), 1e-2)
        grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)
        rng = np.random.default_rng(0)
        for step in range(3):
            x = rng.normal(size=(3, 5)).astype(np.float32)
            if step == 1:
                x[1, 2] = np.nan
            debugger.start([net, loss_fn] if with_loss_cell else net)
            _, grads = grad_fn(Tensor(x), Tensor(np.ones((3, 1), np.float32)))
            if step != 1:
                optimizer(grads)
            debugger.stop()
            debugger.step()

    return run


@pytest.mark.parametrize("with_loss_cell", [False, True])
def test_nan_data_enters_at_the_leaf_model(tmp_path, monkeypatch, with_loss_cell):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(with_loss_cell), ORIGINAL, level="L0")
    model = "Cell.0.Dense.forward.0" if with_loss_cell else "Cell.Dense.forward.0"
    for records in (default, exact):
        assert {step for step, _ in records} == {1}, records
        first = records[0][1]
        assert first["name"] == model and first["origin"] is False, records
        assert first["entered"]["source"] == "outside" and first["entered"]["input"] == "input_args[0]", first
        assert not [r for _, r in records if r["origin"]], records
        assert "OUTSIDE" not in [r.get("kind") for _, r in records] and "outside" not in [
            r.get("kind") for _, r in records], records
        if with_loss_cell:
            assert [r["name"] for _, r in records][:2] == [model, "Cell.1.BCEWithLogitsLoss.forward.0"], records
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")
