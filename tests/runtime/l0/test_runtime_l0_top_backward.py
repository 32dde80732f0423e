"""L0, an overflow the backward pass of the model given to ``start()``
makes in its own code between its sub-Cells (issue 33).

Before: the model's own output gradient was never hooked, so a sub-Cell
whose output gradient was inf/nan with no enclosing hooked Cell got
"made outside the checked Cells: by the loss or other code after the
model, or by the model's own code between its sub-Cells" (both possible),
carried, and no record named where it started. Now the model's output
gradient is kept (one ``HookBackward`` in a gradient computation): when it
is finite, the model's own backward code made it, recorded first as
``Cell.<Model>.backward.<n>``, the origin (``own-construct``); when it is
not, the loss did, as before.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import (PatchedState, assert_origin_invariant, dump_records, isolate,  # noqa: E402
                             write_runtime_config)

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


class Net(nn.Cell):
    """fc1, then its own code: ``sqrt`` of zeros (finite forward; backward
    1 / (2 * sqrt(0)) = inf, times 0 = NaN), then fc2."""

    def __init__(self, in_loss=False):
        super().__init__()
        self.fc1 = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.fc2 = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")
        self.in_loss = in_loss

    def construct(self, x):
        h = self.fc1(x)
        if not self.in_loss:
            h = ops.sqrt(ops.relu(h) * 0.0)
        return self.fc2(h)


def _run(tmp_path, monkeypatch, *, checks, nums=-1, level="L0", in_loss=False):
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    folder = tmp_path / f"{checks}-{nums}-{level}"
    folder.mkdir()
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(folder, level=level, nums=nums)), checks=checks)
    net = Net(in_loss)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    if in_loss:  # the loss's own backward makes it: sqrt of the model's output times 0
        loss_fn = lambda x: ops.sqrt(ops.relu(net(x)) * 0.0).sum()  # noqa: E731
    else:
        loss_fn = lambda x: (net(x) ** 2).mean()  # noqa: E731
    grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
    try:
        debugger.start(net)
        _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)))
        optimizer(grads)
        debugger.stop()
        debugger.step()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    ORIGINAL.assert_untouched(net)
    assert_origin_invariant(folder / "dump")
    return dump_records(folder / "dump")


@pytest.mark.parametrize("checks", [None, "exact"])
@pytest.mark.parametrize("nums", [1, -1])
def test_the_model_whose_own_backward_code_made_it_is_the_origin(tmp_path, monkeypatch, checks, nums):
    found = _run(tmp_path, monkeypatch, checks=checks, nums=nums)
    step, first = found[0]
    assert (step, first["name"], first["origin"]) == (0, "Cell.Net.backward.0", True), found
    assert first["entered"]["source"] == "own-construct", first
    assert "Net.construct itself, in the backward pass" in first["entered"]["message"], first
    rest = [(r["name"], r["origin"]) for _, r in found[1:]]
    assert len(found) == (1 if nums == 1 else 3)
    if nums == -1:
        assert sorted(rest) == [("Cell.fc1.Dense.backward.0", False), ("Cell.fc1.Dense.parameters_grad", False)]
        assert all("outside the checked Cells" not in str(r.get("entered")) for _, r in found), found


def test_l1_names_the_call_in_that_code(tmp_path, monkeypatch):
    found = _run(tmp_path, monkeypatch, checks=None, level="L1")
    assert (found[0][1]["name"], found[0][1]["origin"]) == ("Functional.sqrt.0.backward", True), found


def test_an_overflow_in_the_loss_backward_still_comes_from_outside(tmp_path, monkeypatch):
    found = _run(tmp_path, monkeypatch, checks=None, in_loss=True)
    assert found and all(not r["name"].startswith("Cell.Net.") for _, r in found), found
    entered = found[0][1]["entered"]
    assert entered["source"] == "outside" and "gradient w.r.t. the model's output" in entered["message"], entered


class DictNet(nn.Cell):
    """Returns a dict that also holds fc1's output: no gradient hook on it."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.fc2 = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        h = self.fc1(x)
        return {"out": self.fc2(ops.sqrt(ops.relu(h) * 0.0)), "h": h}


def test_a_model_returning_a_dict_never_blames_the_loss(tmp_path, monkeypatch):
    """A fresh user's finding: the gradient w.r.t. a dict output is not
    known, yet fc1's carried record said the loss made it ("the gradient
    w.r.t. the model's output"), while the model's own sqrt had: the
    message now gives both possibilities."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L0")))
    net = DictNet()
    grad_fn = ms.value_and_grad(lambda x: (net(x)["out"] ** 2).mean(), None, net.trainable_params())
    try:
        debugger.start(net)
        grad_fn(Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    found = dump_records(tmp_path / "dump")
    assert found and not any(r["origin"] for _, r in found), found
    message = found[0][1]["entered"]["message"]
    assert "or by the model's own code between its sub-Cells" in message and "model's output" not in message


class SqrtLoss(nn.Cell):
    def construct(self, out):
        return ops.sqrt((out ** 2).sum() * 0.0)  # backward of sqrt at 0: inf, times 0: NaN


@pytest.mark.parametrize("checks", [None, "exact"])
def test_a_loss_cell_given_to_start_whose_own_backward_made_it_is_the_origin(tmp_path, monkeypatch, checks):
    """``start([net, loss_cell])``: a fresh user's finding: the loss Cell's
    own backward made the NaN, and the net's carried record said it came
    from outside the checked Cells. The loss Cell's output gradient was
    finite and it took the net's output: it is the origin."""
    isolate(monkeypatch, tmp_path)
    config = write_runtime_config(tmp_path, level="L0")
    debugger = PrecisionDebugger(config_path=str(config), checks=checks)
    net, loss = Net(in_loss=True), SqrtLoss()
    grad_fn = ms.value_and_grad(lambda x: loss(net(x)), None, net.trainable_params())
    try:
        debugger.start([net, loss])
        grad_fn(Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    found = dump_records(tmp_path / "dump")
    assert (found[0][1]["name"], found[0][1]["origin"]) == ("Cell.1.SqrtLoss.backward.0", True), found
    assert found[0][1]["entered"]["source"] == "own-construct"
    assert not any(r["origin"] for _, r in found[1:]), found
