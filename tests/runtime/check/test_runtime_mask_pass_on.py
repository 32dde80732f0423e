"""What an elementwise call does with a -inf mask it takes (a hunt's
findings): scaling the masked scores by a temperature passes the mask on
(before: masked_fill an ORIGIN in every clean step); an infinity the call
makes where no input held one is its own, whatever the mask beside it
(before: a cast to float16 or a float16 multiply overflowing at unmasked
places went unrecorded, or masked_fill was named)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
CAUSAL = np.triu(np.ones((4, 4), bool), 1)


def _attend(debugger, steps, then):
    """Masked scores, ``then(masked, step)``, a softmax; one window a step."""
    for step in range(steps):
        scores = Tensor((np.arange(16).reshape(4, 4) / 16).astype(np.float32))
        debugger.start()
        masked = ops.masked_fill(scores, Tensor(CAUSAL), float("-inf"))
        ops.softmax(then(masked, step), -1).astype(ms.float32).sum()
        debugger.stop()
        debugger.step()


@pytest.mark.parametrize("scale", [lambda m, step: m / 2.0, lambda m, step: m * 0.5])
def test_a_mask_scaled_by_a_temperature_is_passed_on(tmp_path, monkeypatch, scale):
    for records in run_default_and_exact(tmp_path, monkeypatch, lambda d: _attend(d, 2, scale), ORIGINAL):
        assert records == [], records


def test_a_multiply_overflowing_beside_the_mask_is_the_origin(tmp_path, monkeypatch):
    def scaled(masked, step):
        return masked.astype(ms.float16) * (1e5 if step == 1 else 1.0)  # 0.9375 * 1e5 > 65504

    for records in run_default_and_exact(tmp_path, monkeypatch, lambda d: _attend(d, 2, scaled), ORIGINAL):
        assert records and (records[0][0], records[0][1]["name"], records[0][1]["origin"]) == \
            (1, "Tensor.__mul__.0.forward", True), records


def test_a_cast_overflowing_beside_the_mask_is_the_origin(tmp_path, monkeypatch):
    def cast(masked, step):
        return (masked - (1e5 if step == 1 else 0.0)).astype(ms.float16)  # -1e5 is -inf in float16

    for records in run_default_and_exact(tmp_path, monkeypatch, lambda d: _attend(d, 2, cast), ORIGINAL):
        assert records and (records[0][0], records[0][1]["name"], records[0][1]["origin"]) == \
            (1, "Tensor.astype.0.forward", True), records
