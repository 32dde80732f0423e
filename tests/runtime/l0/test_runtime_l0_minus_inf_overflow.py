"""L0, a real overflow that gives -inf only, passed on by the next Cell.

A fresh user's finding: a float16 Cell whose output overflowed to -inf in
one feature (``h * 300`` at -1000: -3e5 is -inf in float16), from finite
inputs, is taken for a mask and deferred (L0 cannot see which API made the
-inf); the next Cell, a Dense, returns -inf only and is deferred for it
too, its forward judged finite. Exact checks then recorded the float16
Cell when the loss came back -inf, but not the Dense that carried it, and
called the Dense's ``parameters_grad`` (``x^T g``, -inf from that input) a
second ORIGIN; auto checks, whose replay has no loss check, recorded that
``parameters_grad`` as the step's first and only origin. Now the gradients
of a Cell that passed a deferred maker's -inf on, overflowing from finite
gradients, record the maker first (as its own backward does), and a
recorded maker's passers-on are recorded carried, their gradients carried.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import (PatchedState, assert_origin_invariant, dump_records, isolate,  # noqa: E402
                             write_runtime_config)

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
GAIN = "Cell.gain.Gain.forward.0"


class Gain(nn.Cell):
    """float16 ``h * 300``: -inf where ``h`` is -1000, finite elsewhere."""

    def construct(self, h):
        return h.astype(ms.float16) * 300.0


class Net(nn.Cell):
    """An identity Dense, the gain, then the head (a Dense, or two in a
    SequentialCell) on the gain's output cast back to float32."""

    def __init__(self, deep):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init=Tensor(np.eye(4, dtype=np.float32)), bias_init="zeros")
        self.gain = Gain()
        if deep:
            self.head = nn.SequentialCell([nn.Dense(4, 4, weight_init="ones", bias_init="zeros"),
                                           nn.Dense(4, 1, weight_init="ones", bias_init="zeros")])
        else:
            self.head = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.head(self.gain(self.fc(x)).astype(ms.float32))


def _run(tmp_path, monkeypatch, *, checks, nums, deep=False):
    """Two steps; step 1's input is -1000 in feature 2 (its gain output -inf there)."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    folder = tmp_path / f"{checks}-{nums}-{deep}"
    folder.mkdir()
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(folder, level="L0", nums=nums)),
                                 checks=checks)
    net = Net(deep)
    optimizer = nn.SGD(net.trainable_params(), 0.0)
    grad_fn = ms.value_and_grad(lambda x: net(x).mean(), None, optimizer.parameters)
    try:
        for step in range(2):
            x = np.ones((2, 4), np.float32)
            if step == 1:
                x[:, 2] = -1000.0
            debugger.start(net)
            _, grads = grad_fn(Tensor(x))
            optimizer(grads)
            debugger.stop()
            debugger.step()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    ORIGINAL.assert_untouched(parked_ok=True)
    assert_origin_invariant(folder / "dump")
    return [(step, r["name"], r["origin"]) for step, r in dump_records(folder / "dump")]


@pytest.mark.parametrize("checks", [None, "exact", "auto"])
@pytest.mark.parametrize("deep", [False, True])
def test_with_overflow_nums_1_the_one_record_is_the_cell_that_overflowed(tmp_path, monkeypatch, checks, deep):
    """Auto checks named ``Cell.head.Dense.parameters_grad`` (origin)."""
    found = _run(tmp_path, monkeypatch, checks=checks, nums=1, deep=deep)
    assert found == [(1, GAIN, True)], found


@pytest.mark.parametrize("deep", [False, True])
def test_the_cells_passing_the_minus_inf_on_carry_it_under_exact_and_auto(tmp_path, monkeypatch, deep):
    """Exact checks wrote a second, false origin (``parameters_grad`` of
    the head) and no record of the head's forward; auto checks wrote that
    ``parameters_grad`` first. Both now give the same records: the gain
    Cell the origin, the head's forward and gradients carried."""
    exact = _run(tmp_path, monkeypatch, checks=None, nums=-1, deep=deep)
    auto = _run(tmp_path, monkeypatch, checks="auto", nums=-1, deep=deep)
    assert exact == auto, (exact, auto)
    assert exact and exact[0] == (1, GAIN, True), exact
    assert not any(origin for _, _, origin in exact[1:]), exact
    heads = ["Cell.head.0.Dense", "Cell.head.1.Dense"] if deep else ["Cell.head.Dense"]
    names = [name for step, name, _ in exact if step == 1]
    for head in heads:
        assert f"{head}.forward.0" in names and f"{head}.parameters_grad" in names, exact
        assert names.index(f"{head}.forward.0") < names.index(f"{head}.parameters_grad"), exact
