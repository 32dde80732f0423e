"""A mask held in a signed integer tensor at its dtype's lowest value (a
hunt's finding: MindSpore 2.10's ``ops.full((n, n), float("-inf"))`` is
Int64 filled with ``iinfo(int64).min``, so the PyTorch idiom
``triu(full(-inf), 1).astype(float16)`` gives a float16 -inf mask). The
cast, or float16 scores plus the integer mask, is a mask maker by design:
no record while a softmax consumes it, the origin once its -inf reaches
the result. A float16 overflow of an integer that is no mask value
(70000, -70000, ``iinfo.max``) is still an origin."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import dump_records, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)

LOWEST = int(np.iinfo(np.int64).min)


def causal(whole_row: bool, dtype=np.int64) -> Tensor:
    """A causal integer mask at ``dtype``'s lowest value above the
    diagonal; ``whole_row``: query 0 sees no key (its softmax row is NaN)."""
    mask = np.triu(np.full((3, 3), np.iinfo(dtype).min, dtype), 1)
    if whole_row:
        mask[0, :] = np.iinfo(dtype).min
    return Tensor(mask)


def checked_steps(tmp_path, monkeypatch, attend, level: str = "L1") -> list:
    """Run ``attend(whole_row)`` in a clean step then in one whose fully
    masked row gives NaN; the records as (step, name, origin)."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level=level, nums=-1)))
    results = []
    for whole_row in (False, True):
        debugger.start()
        results.append(attend(whole_row))
        debugger.stop()
        debugger.step()
    debugger.windows.summary.said = True
    assert np.isfinite(results[0].asnumpy()) and not np.isfinite(results[1].asnumpy())
    return [(step, r["name"], r["origin"]) for step, r in dump_records(tmp_path / "dump")]


SCORES = (np.arange(9).reshape(3, 3) / 9).astype(np.float16)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_an_integer_mask_cast_to_float16_is_by_design_until_it_reaches_the_result(tmp_path, monkeypatch, dtype):
    def attend(whole_row):
        mask = causal(whole_row, dtype).astype(ms.float16)
        return ops.softmax(Tensor(SCORES) + mask, -1).astype(ms.float32).sum()

    found = checked_steps(tmp_path, monkeypatch, attend)
    assert found and found[0] == (1, "Tensor.astype.0.forward", True), found
    assert all(step == 1 for step, _, _ in found), found


def test_float16_scores_plus_an_integer_mask_are_by_design_until_they_reach_the_result(tmp_path, monkeypatch):
    def attend(whole_row):
        return ops.softmax(Tensor(SCORES) + causal(whole_row), -1).astype(ms.float32).sum()

    found = checked_steps(tmp_path, monkeypatch, attend)
    assert found and found[0] == (1, "Tensor.__add__.0.forward", True), found
    assert all(step == 1 for step, _, _ in found), found


def test_an_integer_mask_added_beside_a_minus_inf_padding_mask_passes_it_on(tmp_path, monkeypatch):
    """Scores a padding ``masked_fill(-inf)`` made hold -inf by design;
    the integer causal mask added to them makes -inf of its own places:
    the mask's, not an overflow of the addition."""
    pad = np.zeros((3, 3), bool)
    pad[:, 1] = True

    def attend(whole_row):
        padded = ops.masked_fill(Tensor(SCORES), Tensor(pad), float("-inf"))
        return ops.softmax(padded + causal(whole_row), -1).astype(ms.float32).sum()

    found = checked_steps(tmp_path, monkeypatch, attend)
    assert found and found[0] == (1, "Functional.masked_fill.0.forward", True), found
    assert all(step == 1 for step, _, _ in found), found


def test_the_pytorch_causal_mask_idiom_in_a_training_step_records_nothing(tmp_path, monkeypatch):
    """The hunt's scenario, trained: ``triu(full(-inf), 1)`` cast to the
    float16 scores' dtype, a softmax, finite loss and gradients, at L1 and
    L0."""
    isolate(monkeypatch, tmp_path)
    ms.set_seed(0)

    class Attention(nn.Cell):
        def __init__(self):
            super().__init__()
            self.q = nn.Dense(8, 8).to_float(ms.float16)

        def construct(self, x):
            q = self.q(x)
            scores = ops.matmul(q, q.swapaxes(1, 2)) * 0.35
            mask = ops.triu(ops.full((4, 4), float("-inf")), 1)
            return ops.softmax(scores + mask.astype(scores.dtype), -1)

    net = Attention()
    grad_fn = ms.value_and_grad(lambda x: net(x).astype(ms.float32).sum(), None, net.trainable_params())
    x = Tensor(np.random.default_rng(0).normal(size=(2, 4, 8)).astype(np.float16))
    for level in ("L1", "L0"):
        dump = tmp_path / level
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level=level, dump=dump)))
        for _ in range(2):
            debugger.start(net)
            loss, grads = grad_fn(x)
            debugger.stop()
            debugger.step()
        debugger.windows.summary.said = True
        assert np.isfinite(loss.asnumpy()) and all(np.isfinite(g.asnumpy()).all() for g in grads)
        assert dump_records(dump) == [], (level, dump_records(dump))


@pytest.mark.parametrize("value", [70000, -70000, int(np.iinfo(np.int64).max), int(np.iinfo(np.int32).max)])
def test_a_float16_cast_of_an_integer_that_is_no_mask_value_is_an_origin(tmp_path, monkeypatch, value):
    """70000 or -70000 overflow float16 (a count, an index sum): no mask
    value; nor is +inf a -inf mask. Behind a ReLU, a -inf taken for a mask
    would be consumed and go unrecorded."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    debugger.start()
    ops.relu(Tensor(np.full((2, 3), value, np.int64)).astype(ms.float16)).sum()
    debugger.stop()
    debugger.step()
    debugger.windows.summary.said = True
    found = [(r["name"], r["origin"]) for _, r in dump_records(tmp_path / "dump")]
    assert found[:1] == [("Tensor.astype.0.forward", True)], found


#: a time penalty in ms (a review's finding): varying values far below -1e9, no mask constant
PENALTY = np.array([[0, -1_500_000_000, -2_999_999_999]] * 3, np.int64)


@pytest.mark.parametrize("value", [-70000, int(np.iinfo(np.int64).max), "penalty"])
def test_float16_scores_plus_an_integer_that_is_no_mask_value_is_an_origin(tmp_path, monkeypatch, value):
    """Only the dtype's lowest value is a mask's: a penalty of -1.5e9 ms
    added to float16 scores is -inf where float16 cannot hold it, a real
    overflow (the first form of the rule took any value <= -1e9)."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    added = PENALTY if value == "penalty" else np.full((3, 3), value, np.int64)
    debugger.start()
    ops.relu(Tensor(SCORES) + Tensor(added)).sum()
    debugger.stop()
    debugger.step()
    debugger.windows.summary.said = True
    found = [(r["name"], r["origin"]) for _, r in dump_records(tmp_path / "dump")]
    assert found[:1] == [("Tensor.__add__.0.forward", True)], found
