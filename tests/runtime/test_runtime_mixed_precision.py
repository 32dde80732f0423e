"""Cells given a precision (``cell.to_float(mindspore.float16)``): the tool's
own operators must not take it on.

MindSpore casts the floating inputs of every operator run during such a
Cell's call, the tool's too. A fresh user's finding: the ``HookBackward``
the hooks put on a call's inputs and outputs handed float32 tensors back as
float16, so under the tool (L1 and L0, in a gradient computation) a
float16 Cell that ends in ``.astype(float32)`` returned float16 and the
next float32 layer failed ("the type of 'x2' should be same as 'x1'"), and
at L0 a float32 input above 65504 reached the Cell already inf, so its
parent was named the origin ("inside Net.construct itself") instead of the
Cell whose cast made it. A Parameter's finiteness probe on the
asynchronous path (a float32 sum) summed in float16 and read a finite
Parameter as inf (:mod:`probe_runtime.hooks.precision`).
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn  # noqa: E402

from runtime_support import PatchedState, assert_origin_invariant, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


class _Half(nn.Cell):
    """A float16 block (``to_float``) that hands float32 back; it notes the
    dtype its input has inside ``construct``."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.seen: list = []
        self.to_float(ms.float16)

    def construct(self, x):
        self.seen.append(x.dtype)
        return (self.fc(x) * 0.5).astype(ms.float32)


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.half = _Half()
        self.out = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")  # float32: float16 input is refused
        self.got: list = []

    def construct(self, x):
        h = self.half(x)
        self.got.append(h.dtype)
        return self.out(h)


def _train(level, big_step=None):
    """Three steps of a gradient computation over :class:`_Net` at
    ``level``; the
    inputs of step ``big_step`` are 1e5 (finite in float32, inf once the
    float16 block casts them). Returns the net and the losses."""

    def scenario(debugger):
        net = _Net()
        grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
        losses = []
        for step in range(3):
            debugger.start(net if level == "L0" else None)
            loss, _ = grad_fn(Tensor(np.full((2, 4), 1e5 if step == big_step else 1.0, np.float32)))
            losses.append(float(loss.asnumpy()))
            debugger.stop()
            debugger.step()
        scenario.nets.append((net, losses))

    scenario.nets = []
    return scenario


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_float16_cell_keeps_its_dtypes_under_the_tool(tmp_path, monkeypatch, level):
    scenario = _train(level)
    default, exact = run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level)
    assert default == [] and exact == []
    plain = _Net()
    grad_fn = ms.value_and_grad(lambda x: plain(x).sum(), None, plain.trainable_params())
    want = float(grad_fn(Tensor(np.ones((2, 4), np.float32)))[0].asnumpy())
    for net, losses in scenario.nets:
        assert set(net.half.seen) == {ms.float32} and set(net.got) == {ms.float32}, (net.half.seen, net.got)
        assert losses == [want] * 3


def test_l0_a_float16_cells_own_cast_is_the_origin_not_its_parent(tmp_path, monkeypatch):
    """1e5 in float32 enters the float16 block: the cast of its Dense (the
    innermost Cell, in the block's precision) makes inf, so that Dense is
    the origin; neither the block nor its parent handed it inf."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _train("L0", big_step=1), ORIGINAL, level="L0")
    for records in (default, exact):
        step1 = [(r["name"], r["origin"], (r.get("entered") or {}).get("source")) for step, r in records
                 if step == 1]
        assert step1 and step1[0] == ("Cell.half.fc.Dense.forward.0", True, None), step1
        assert [name for name, origin, _ in step1 if origin] == ["Cell.half.fc.Dense.forward.0"], step1
        assert not [r for step, r in records if step != 1], records
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")
        data = json.loads((tmp_path / checks / "dump" / "step1" / "rank" / "dump.json").read_text())["data"]
        given = data["Cell.half.fc.Dense.forward.0"]["input_args"][0]  # as the caller gave it, not as cast
        assert given["dtype"] == "Float32" and given["Max"] == 1e5, given


def test_device_probes_keep_float32_inside_a_float16_cell():
    """The asynchronous path's probes (a float32 sum, a device copy) made
    while a float16 Cell runs: a finite Parameter whose sum is 1e5 is
    finite, and a copy keeps the dtype and values."""
    from probe_runtime.check.probes import launch_sum, snapshot

    big = ms.Parameter(Tensor(np.full((100,), 1000.0, np.float32)), name="big")
    wide = Tensor(np.full((3,), 7e4, np.float32))
    got = {}

    class Probing(nn.Cell):
        def construct(self, x):
            got["sum"], got["copy"] = launch_sum(big), snapshot(wide, False)
            return x

    cell = Probing()
    cell.to_float(ms.float16)
    cell(Tensor(np.ones(2, np.float32)))
    assert got["sum"].total.dtype == ms.float32 and float(got["sum"].asnumpy()[0]) == 1e5 * 2.0 ** -64  # trainable
    assert got["copy"].dtype == ms.float32 and got["copy"].asnumpy().tolist() == [7e4] * 3
