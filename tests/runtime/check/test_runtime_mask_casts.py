"""A mask written with a large negative constant, then cast to float16
(a hunt's finding, MSAdapter: mindtorch writes ``finfo(float32).min`` for
``masked_fill(mask, -inf)``). The cast's -inf is the mask's, by design: no
record while a softmax consumes it; the cast is the origin once it reaches
the result (a fully masked row gives NaN)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import dump_records, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)


def attend(scores, mask, fill: float):
    masked = ops.masked_fill(scores, mask, fill)
    return ops.softmax(masked.astype(ms.float16), -1).astype(ms.float32).sum()


@pytest.mark.parametrize("fill", [float(np.finfo(np.float32).min), -3.40282e38, -1e9])
def test_a_mask_cast_to_float16_is_by_design_until_it_reaches_the_result(tmp_path, monkeypatch, fill):
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    scores = Tensor(np.arange(9, dtype=np.float32).reshape(3, 3) / 9)
    partly = np.zeros((3, 3), bool)
    partly[0, 2] = True
    whole_row = partly.copy()
    whole_row[1, :] = True
    results = []
    for mask in (partly, whole_row):
        debugger.start()
        results.append(attend(scores, Tensor(mask), fill))
        debugger.stop()
        debugger.step()
    debugger.windows.summary.said = True
    assert np.isfinite(results[0].asnumpy()) and not np.isfinite(results[1].asnumpy())
    found = [(step, r["name"], r["origin"]) for step, r in dump_records(tmp_path / "dump")]
    assert found and found[0] == (1, "Tensor.astype.0.forward", True), found
    assert all(step == 1 for step, _, _ in found), found


def test_a_repeated_activation_that_overflows_a_cast_is_still_an_origin(tmp_path, monkeypatch):
    """A review's finding: a row of one repeated activation (-299998: far
    above any mask value) cast to float16 passed for a mask, and behind a
    ReLU its overflow went unrecorded."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    debugger.start()
    ops.relu(Tensor(np.full((2, 3), -299998.0, np.float32)).astype(ms.float16)).sum()
    debugger.stop()
    debugger.step()
    debugger.windows.summary.said = True
    found = [(r["name"], r["origin"]) for _, r in dump_records(tmp_path / "dump")]
    assert found[:1] == [("Tensor.astype.0.forward", True)], found


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_two_masks_of_the_lowest_value_added_are_by_design_until_they_reach_the_result(tmp_path, monkeypatch,
                                                                                      dtype):
    """A hunt's finding (MSAdapter: mindtorch writes the dtype's lowest
    finite value for ``masked_fill(mask, -inf)`` and ``pad[i] = -inf``): a
    causal mask plus a padding mask is -inf where both mask, and a clean
    attention step was an ORIGIN at ``Tensor.__add__``. The sum is a mask
    maker; a fully masked row's NaN makes it the origin."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    lowest = float(np.finfo(dtype).min)
    scores = Tensor((np.arange(9).reshape(1, 3, 3) / 9).astype(dtype))
    results = []
    for whole in (False, True):
        causal = np.triu(np.ones((3, 3), bool), 1)
        pad = np.zeros((1, 1, 3), dtype)
        pad[0, 0, 2] = lowest
        if whole:  # every key of query 0 masked by both: its softmax row is NaN
            causal[0, :] = True
            pad[0, 0, :] = lowest
        debugger.start()
        masked = ops.masked_fill(scores, Tensor(causal), lowest) + Tensor(pad)
        results.append(ops.softmax(masked, -1).astype(ms.float32).sum())
        debugger.stop()
        debugger.step()
    debugger.windows.summary.said = True
    assert np.isfinite(results[0].asnumpy()) and not np.isfinite(results[1].asnumpy())
    found = [(step, r["name"], r["origin"]) for step, r in dump_records(tmp_path / "dump")]
    assert found and found[0] == (1, "Tensor.__add__.0.forward", True), found
    assert all(step == 1 for step, _, _ in found), found


def test_an_addition_to_minus_inf_that_reaches_the_result_is_the_origin(tmp_path, monkeypatch):
    """A sum of large negative values is deferred like a mask, but once its
    -inf reaches the result (a sum of it) it is the origin, recorded first."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    debugger.start()
    (Tensor(np.full((2, 3), -3e38, np.float32)) + Tensor(np.full((2, 3), -1e38, np.float32))).sum()
    debugger.stop()
    debugger.step()
    debugger.windows.summary.said = True
    found = [(r["name"], r["origin"]) for _, r in dump_records(tmp_path / "dump")]
    assert found[:1] == [("Tensor.__add__.0.forward", True)], found


@pytest.mark.parametrize("dtype, values", [(np.float32, (-2e38, -2e38)), (np.float16, (-65504.0, -32752.0))])
def test_an_addition_of_values_that_are_not_both_the_lowest_is_an_origin(tmp_path, monkeypatch, dtype, values):
    """A review's finding: any input at or below -1e9 (or float16's lowest
    value in one input) passed an addition's real overflow for a mask sum,
    and behind a ReLU the run said "no overflow found"."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    debugger.start()
    ops.relu(Tensor(np.full((2, 3), values[0], dtype)) + Tensor(np.full((2, 3), values[1], dtype))).sum()
    debugger.stop()
    debugger.step()
    debugger.windows.summary.said = True
    found = [(r["name"], r["origin"]) for _, r in dump_records(tmp_path / "dump")]
    assert found[:1] == [("Tensor.__add__.0.forward", True)], found
