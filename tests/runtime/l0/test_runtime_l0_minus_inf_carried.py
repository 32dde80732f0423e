"""L0, a Cell whose sub-Cell's output already held -inf only.

A fresh user's finding: ``Net.construct`` only sums what its Dense returns;
the Dense's weight held -inf when the step began (set before ``start()``,
or written by the previous step's optimizer), or the Dense really
overflowed to -inf. The Dense's record was right (carried, or the origin),
but ``Net``, returning -inf only from finite inputs and holding no
Parameter of its own, was taken for a mask maker and recorded as the
ORIGIN when its -inf reached the loss: the report said the overflow
started in a Cell that only carried it. With +inf the same graph was
right. A Cell in which a sub-Cell's output overflowed carries it, -inf or
not.
"""
from __future__ import annotations

import io

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn  # noqa: E402

from msprobe_lint.report.command import run as report  # noqa: E402
from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import PatchedState, assert_origin_invariant, dump_records, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
FC, NET = "Cell.network.fc.Dense.forward.0", "Cell.network.Net.forward.0"


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 1)

    def construct(self, x):
        return self.fc(x).sum()


class Wrapper(nn.Cell):
    """The model given to ``start()`` (as a ``WithLossCell`` would be)."""

    def __init__(self, net):
        super().__init__()
        self.network = net

    def construct(self, x):
        return self.network(x)


def _run(tmp_path, monkeypatch, weight: float, checks) -> tuple[list, str]:
    """One L0 step with ``fc.weight`` set to ``weight`` before ``start()``:
    the records as ``(name, origin)`` and the report's last line."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    folder = tmp_path / f"w{'%g' % weight}-{checks}".replace("+", "")
    folder.mkdir()
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(folder, level="L0")), checks=checks)
    net = Net()
    model = Wrapper(net)
    net.fc.weight.set_data(Tensor(np.full((1, 4), weight, np.float32)))
    grad_fn = ms.value_and_grad(model, None, net.trainable_params())
    try:
        debugger.start(model)
        grad_fn(Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
        debugger.step()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    ORIGINAL.assert_untouched(parked_ok=True)
    assert_origin_invariant(folder / "dump")
    out = io.StringIO()
    report(str(folder / "dump"), out=out, err=io.StringIO())
    return [(r["name"], r["origin"]) for _, r in dump_records(folder / "dump")], out.getvalue().strip().splitlines()[-1]


@pytest.mark.parametrize("checks", [None, "auto"])
@pytest.mark.parametrize("weight", [-np.inf, np.inf])
def test_a_weight_non_finite_at_start_is_where_it_entered_whatever_its_sign(tmp_path, monkeypatch, weight, checks):
    records, summary = _run(tmp_path, monkeypatch, weight, checks)
    assert records[:2] == [(FC, False), (NET, False)], records
    assert not any(origin for _, origin in records), records
    assert "Overflow entered" in summary and "fc.weight already held inf/nan at start()" in summary, summary


def test_a_dense_overflowing_to_minus_inf_is_the_one_origin(tmp_path, monkeypatch):
    """``-1e38 * 4`` is -inf in float32: the Dense is the origin, ``Net`` carries it."""
    records, summary = _run(tmp_path, monkeypatch, -1e38, None)
    assert records[:2] == [(FC, True), (NET, False)], records
    assert [name for name, origin in records if origin] == [FC], records
    assert "Overflow started" in summary and FC.replace("forward.0", "") in summary.replace("forward.0", ""), summary
