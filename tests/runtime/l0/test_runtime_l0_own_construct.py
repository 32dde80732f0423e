"""L0, an overflow a sub-Cell's own ``construct`` makes between its own
sub-Cells (not the model given to ``start()``).

Before: the sub-Cells that got the inf/nan were recorded first, carried,
and the enclosing Cell, the origin, only when its call returned; with
``overflow_nums`` 1 (msprobe's default) the one record kept was a carried
one and the origin was lost. Now the enclosing Cell's entries are held
back until its own record (origin, ``entered.source`` ``own-construct``)
is written, as for the model given to ``start()``.
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


def _dense(n_in, n_out):
    return nn.Dense(n_in, n_out, weight_init="ones", bias_init="zeros")


class Block(nn.Cell):
    """fc1, then its own code makes +inf from a finite fc1 output, then fc2."""

    def __init__(self, mask_after=False):
        super().__init__()
        self.fc1 = _dense(4, 4)
        self.fc2 = _dense(4, 4)
        self.mask_after = mask_after

    def construct(self, x):
        h = ops.exp(self.fc1(x) * 1000.0)  # between its sub-Cells
        out = self.fc2(h)
        if self.mask_after:  # the Block hides it again: its output is finite
            out = ops.where(ops.isfinite(out), out, ops.zeros_like(out))
        return out


class Net(nn.Cell):
    def __init__(self, mask_after=False):
        super().__init__()
        self.block = Block(mask_after)
        self.head = _dense(4, 2)

    def construct(self, x):
        return self.head(self.block(x))


class Outer(nn.Cell):
    """Its own code scales a finite input to inf before a Block whose
    first sub-Cell (fc1) then gets it: Outer made it, not Block."""

    def __init__(self):
        super().__init__()
        self.pre = _dense(4, 4)
        self.block = Block()

    def construct(self, x):
        return self.block(self.pre(x) * 1e38 * 1e38)


class Deep(nn.Cell):
    def __init__(self, pre=False):
        super().__init__()
        self.pre = _dense(4, 4) if pre else None  # Outer's input then needs a gradient: its backward entry is judged
        self.outer = Outer()
        self.head = _dense(4, 2)

    def construct(self, x):
        if self.pre is not None:
            x = self.pre(x)
        return self.head(self.outer(x))


def _run(tmp_path, monkeypatch, make_net, *, checks, nums, train=True, steps=1):
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    folder = tmp_path / f"{checks}-{nums}-{train}"
    folder.mkdir()
    config = write_runtime_config(folder, level="L0", nums=nums)
    debugger = PrecisionDebugger(config_path=str(config), checks=checks)
    net = make_net()
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
    try:
        for _ in range(steps):
            debugger.start(net)
            x = Tensor(np.ones((2, 4), np.float32))
            if train:
                grad_fn(x)
            else:
                net(x)
            debugger.stop()
            debugger.step()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    ORIGINAL.assert_untouched(parked_ok=True)
    assert_origin_invariant(folder / "dump")
    return dump_records(folder / "dump")


@pytest.mark.parametrize("checks", [None, "exact", "auto"])
@pytest.mark.parametrize("train", [True, False])
def test_with_overflow_nums_1_the_one_record_is_the_cell_whose_code_made_it(tmp_path, monkeypatch, checks, train):
    found = _run(tmp_path, monkeypatch, Net, checks=checks, nums=1, train=train)
    assert [(step, r["name"], r["origin"]) for step, r in found] == [(0, "Cell.block.Block.forward.0", True)], found
    entered = found[0][1]["entered"]
    assert entered["source"] == "own-construct", entered
    assert "Block.construct itself, between its sub-Cells" in entered["message"], entered


def test_every_record_the_cell_first_then_what_it_fed(tmp_path, monkeypatch):
    found = _run(tmp_path, monkeypatch, Net, checks=None, nums=-1, train=False, steps=2)
    for step in (0, 1):
        names = [(r["name"], r["origin"]) for s, r in found if s == step]
        assert names == [("Cell.block.Block.forward.0", True), ("Cell.block.fc2.Dense.forward.0", False),
                         ("Cell.head.Dense.forward.0", False)], found


def test_the_nearest_cell_with_finite_inputs_is_named_not_an_inner_one(tmp_path, monkeypatch):
    found = _run(tmp_path, monkeypatch, Deep, checks=None, nums=-1, train=False)
    names = [(r["name"], r["origin"]) for _, r in found]
    assert names[0] == ("Cell.outer.Outer.forward.0", True), names
    assert not any(origin for _, origin in names[1:]), names
    assert "Cell.outer.block.fc1.Dense.forward.0" in dict(names), names


@pytest.mark.parametrize("nums", [1, -1])
def test_a_cell_that_hides_it_again_is_still_where_it_started(tmp_path, monkeypatch, nums):
    """A fresh user's finding: the Block hides the inf its own code made
    (its output is finite). It was not recorded: with ``overflow_nums`` 1
    the one record was fc2's, carried, "where it started is not known";
    with -1 its backward entry came last, as ORIGIN, with the forward
    pass's message (level L1 names its ``exp`` forward, its backward
    carried). The Block is the origin now, first, its output finite; its
    backward entry is carried and says nothing of its forward pass."""
    found = _run(tmp_path, monkeypatch, lambda: Net(mask_after=True), checks=None, nums=nums)
    first = found[0][1]
    assert (first["name"], first["origin"], first["entered"]["source"]) == \
        ("Cell.block.Block.forward.0", True, "own-construct"), found
    assert [r["name"] for _, r in found if r["origin"]] == ["Cell.block.Block.forward.0"], found
    if nums == -1:
        assert found[1][1]["name"] == "Cell.block.fc2.Dense.forward.0", found
        assert not [r for _, r in found[1:] if "entered" in r], found  # only a step's first record says it


def test_the_cells_backward_entry_does_not_repeat_the_forward_message(tmp_path, monkeypatch):
    """A fresh user's finding: the enclosing Cell's carried backward entry
    got ``entered`` with the forward pass's "own-construct" message, which
    ``probe report`` printed twice; only a step's first record says where
    the overflow came in."""
    found = _run(tmp_path, monkeypatch, lambda: Deep(pre=True), checks=None, nums=-1, train=True)
    assert found[0][1]["name"] == "Cell.outer.Outer.forward.0", found
    assert "Cell.outer.Outer.backward.0" in [r["name"] for _, r in found], found
    assert not [r["name"] for _, r in found[1:] if "entered" in r], found


def _recomputed():
    net = Net()
    net.block.recompute()  # MindSpore puts _RecomputeCell and _WrapCell around Block.construct
    return net


@pytest.mark.parametrize("nums", [1, -1])
def test_a_recomputed_cell_is_named_not_mindspore_wrapper_cells(tmp_path, monkeypatch, nums):
    """A fresh user's finding: with ``Cell.recompute()`` the origin was
    ``Cell.block._recompute_cell.wrap_cell._WrapCell``, MindSpore's Cell
    around Block.construct, not the user's Block."""
    found = _run(tmp_path, monkeypatch, _recomputed, checks=None, nums=nums)
    assert (found[0][1]["name"], found[0][1]["origin"]) == ("Cell.block.Block.forward.0", True), found
    assert found[0][1]["entered"]["source"] == "own-construct", found[0][1]
    assert not any("_recompute_cell" in r["name"] for _, r in found), [r["name"] for _, r in found]
