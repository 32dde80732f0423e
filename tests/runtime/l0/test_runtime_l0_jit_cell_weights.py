"""L0 with a sub-Cell compiled with ``mindspore.jit`` whose weights already
held NaN when the checked step began (an earlier, unchecked step's update
wrote it).

A fresh user's finding: with ``"step": [2]`` the compiled Cell was the
ORIGIN of step 2, although the step's own ``outside`` record said the
compiled region ran on Parameters that held inf/nan before the call. L0
does not see the Cells inside a compiled Cell, so their Parameters are
inputs of its call: probed with it, dumped under its ``parameters``
(``dense.weight``), and a non-finite one keeps it from being an origin.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, assert_origin_invariant, dump_records, isolate, \
    write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


class Inner(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 4)

    @ms.jit
    def construct(self, x):
        return self.dense(x) * 2


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.head = nn.Dense(4, 1)

    def construct(self, x):
        return self.head(ops.relu(self.inner(x)))


def _train(debugger, poison_step):
    """Four steps; the batch of ``poison_step`` holds inf, so its update
    writes NaN into every weight."""
    ms.set_seed(1)
    net = Net()
    optimizer = nn.SGD(net.trainable_params(), 1e-2)
    grad_fn = ms.value_and_grad(lambda x, y: ((net(x) - y) ** 2).mean(), None, optimizer.parameters)
    for step in range(4):
        x = np.ones((2, 4), np.float32)
        if step == poison_step:
            x[0, 0] = np.inf
        debugger.start(net)
        _, grads = grad_fn(Tensor(x), Tensor(np.zeros((2, 1), np.float32)))
        optimizer(grads)
        debugger.stop()
        debugger.step()


def _records(tmp_path, monkeypatch, checks, poison_step):
    """:func:`_train` at L0 with ``"step": [2]`` under ``checks``; the
    records of the dump, in step order."""
    from probe_runtime import PrecisionDebugger

    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    config = write_runtime_config(tmp_path, level="L0", step=[2])
    debugger = PrecisionDebugger(config_path=str(config), checks=checks)
    try:
        _train(debugger, poison_step)
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    return dump_records(tmp_path / "dump")


@pytest.mark.parametrize("checks", [None, "exact"])
def test_compiled_cell_with_nan_weights_is_not_the_origin(tmp_path, monkeypatch, checks):
    records = _records(tmp_path, monkeypatch, checks, poison_step=1)
    assert {step for step, _ in records} == {2}, records
    assert not [r for _, r in records if r["origin"]], records
    inner = next(r for _, r in records if r["name"] == "Cell.inner.Inner.forward.0")
    assert inner["origin"] is False, inner
    assert any(r.get("kind") == "outside" and "inner.dense.weight" in r.get("message", "") for _, r in records), \
        records
    assert_origin_invariant(tmp_path / "dump")
    dump = (tmp_path / "dump" / "step2" / "rank" / "dump.json").read_text()
    assert '"dense.weight"' in dump  # the compiled Cell's inner weights are dumped with its call
    ORIGINAL.assert_untouched(parked_ok=True)


@pytest.mark.parametrize("checks", [None, "exact"])
def test_compiled_cell_fed_an_inf_batch_is_carried(tmp_path, monkeypatch, checks):
    """The inner weights finite, an inf batch in the checked step: the
    compiled Cell's call (inf in, inf out) is carried, and without a poison
    its gradients are hooked as before (no parameters_grad entry of its
    own for weights inside it)."""
    records = _records(tmp_path, monkeypatch, checks, poison_step=2)
    names = [r["name"] for _, r in records]
    assert names[0] == "Cell.inner.Inner.forward.0" and records[0][1]["origin"] is False, records
    assert records[0][1]["entered"]["input"] == "input_args[0]", records[0][1]
    assert "Cell.inner.Inner.parameters_grad" not in names, names
    ORIGINAL.assert_untouched(parked_ok=True)
