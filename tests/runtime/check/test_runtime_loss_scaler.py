"""MindSpore's dynamic loss scaler at float32's edge (a hunt's finding).

``amp.DynamicLossScaler.adjust`` grows the scale as ``scale_value *
scale_factor`` and keeps the old scale when that product is not finite.
Once a long run without overflow has grown the scale near float32's
largest value, the product is +inf in every step, by design: a clean run
got an ORIGIN ``Tensor.__mul__`` there, which used up ``overflow_nums``
and ended detection. That +inf is judged as a fill's +inf now
(``by_design.GUARDED_CALLERS``); the same product anywhere else, and the
scaler's ``scale()`` overflowing the loss, stay overflows.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, amp, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()

#: a scale a long run grows to: times the factor 256 it is above float32's largest value
SATURATED = 2.0 ** 120


def _train(debugger, scaler, inputs=(0.1, 0.1, 0.1)):
    """A float32 Dense trained with ``scaler`` (``scale``, ``unscale``,
    ``all_finite``, ``adjust``), one checked step per input scale."""
    ms.set_seed(0)
    net = nn.Dense(4, 2)
    optimizer = nn.SGD(net.trainable_params(), 0.01)
    grad_fn = ms.value_and_grad(lambda x, y: scaler.scale(ops.mse_loss(net(x), y)), None, optimizer.parameters)
    rng = np.random.RandomState(0)
    for size in inputs:
        x = Tensor((rng.randn(4, 4) * size).astype(np.float32))
        debugger.start()
        _, grads = grad_fn(x, Tensor(np.zeros((4, 2), np.float32)))
        grads = scaler.unscale(grads)
        finite = amp.all_finite(grads)
        scaler.adjust(finite)
        if finite:
            optimizer(grads)
        debugger.stop()
        debugger.step()


def test_the_growth_of_a_saturated_loss_scale_is_no_overflow(tmp_path, monkeypatch):
    scalers = []

    def scenario(debugger):
        scalers.append(amp.DynamicLossScaler(scale_value=SATURATED, scale_factor=256, scale_window=1))
        _train(debugger, scalers[-1])

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        assert records == [], records
    assert all(float(s.scale_value.asnumpy()) == SATURATED for s in scalers)  # kept: the product was +inf


def test_a_loss_the_saturated_scale_makes_inf_is_still_the_origin(tmp_path, monkeypatch):
    """Step 1's loss times the scale overflows in ``scale()`` (its
    compiled ``_grad_scale_map``: the kernel ``Mul`` is named): that is the
    origin, although ``adjust`` makes its +inf by design in the same step."""
    def scenario(debugger):
        _train(debugger, amp.DynamicLossScaler(scale_value=SATURATED, scale_factor=256, scale_window=1),
               inputs=(0.1, 1e4, 0.1))

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        assert records and records[0][0] == 1, records
        first = records[0][1]
        assert first["origin"] and first["name"].startswith("Mul.") and "amp.py" in first["where"], first


def adjust(scale, factor):
    """The user's own ``adjust``: its +inf is no loss scaler's."""
    return scale * factor


def test_the_same_product_outside_the_scaler_is_an_overflow(tmp_path, monkeypatch):
    def scenario(debugger):
        debugger.start()
        grown = adjust(Tensor(np.float32(SATURATED)), 256)
        ops.select(ops.isfinite(grown), grown, Tensor(np.float32(SATURATED)))
        debugger.stop()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        assert records and records[0][1]["origin"] and records[0][1]["name"] == "Tensor.__mul__.0.forward", records
