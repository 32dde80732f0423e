"""L0, a Cell that returns -inf by design (issue 33).

Before: a ``Policy`` Cell masking invalid actions with ``float("-inf")``
(consumed by ``log_softmax`` + ``gather_elements`` in its caller) was the
ORIGIN of an overflow in every step, although the loss and the gradients
stayed finite; with ``overflow_nums`` 1 detection stopped in step 0 and a
real overflow in a later step was never checked. Now L0 defers a Cell
whose outputs hold -inf only from finite inputs and Parameters, as L1
defers the -inf makers (``check/by_design.py``): the -inf is judged where
the loss and the gradients see it.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import (PatchedState, assert_origin_invariant, dump_records, isolate,  # noqa: E402
                             run_default_and_exact, write_runtime_config)

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
#: the valid actions: action 3 is masked out in every row
VALID = np.array([[True, True, True, False]] * 2)
ACTIONS = np.array([[0], [1]], np.int32)


class Policy(nn.Cell):
    """Logits with the invalid actions set to -inf (an action mask)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")

    def construct(self, x, valid):
        return self.fc(x).masked_fill(~valid, float("-inf"))


class Net(nn.Cell):
    """log_softmax over the masked logits, the chosen (valid) actions picked,
    ``mean``; plus the mean of the raw input (a reward): +inf in float32
    when the input is 3e38 (the sum overflows), while the policy sees
    ``tanh`` of it, finite."""

    def __init__(self):
        super().__init__()
        self.policy = Policy()

    def construct(self, x, valid, actions):
        logp = ops.log_softmax(self.policy(ops.tanh(x), valid), -1)
        return -ops.gather_elements(logp, 1, actions).mean() + x.mean()


def _train(debugger, inputs):
    net = Net()
    optimizer = nn.SGD(net.trainable_params(), 1e-30)
    grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
    valid, actions = Tensor(VALID), Tensor(ACTIONS)
    for value in inputs:
        debugger.start(net)
        loss, grads = grad_fn(Tensor(np.full((2, 4), value, np.float32)), valid, actions)
        optimizer(grads)
        debugger.stop()
        debugger.step()
    return loss


@pytest.mark.parametrize("nums", [1, -1])
def test_an_action_mask_cell_is_no_origin_and_a_later_real_overflow_is_found(tmp_path, monkeypatch, nums):
    """Steps 0 and 1 are finite in loss and gradients: no record. Step 2's
    input 3e38 makes Net's own ``x.mean()`` +inf: Net's own construct is
    the first record, the origin, and its message says it also took the
    -inf Policy made by design (L1 tells them apart); Policy is no origin."""
    found = run_default_and_exact(tmp_path, monkeypatch, lambda d: _train(d, (1.0, 0.5, 3e38)), ORIGINAL,
                                  level="L0", nums=nums)
    for checks, records in zip(("default", "exact"), found):
        assert records, (checks, records)
        assert {step for step, _ in records} == {2}, (checks, records)
        first = records[0][1]
        assert (first["name"], first["origin"]) == ("Cell.Net.forward.0", True), (checks, records)
        entered = first["entered"]
        assert entered["source"] == "own-construct", entered
        assert "Cell.policy.Policy.forward.0" in entered["message"] and "by design" in entered["message"], entered
        assert not any(r["origin"] and "Policy" in r["name"] for _, r in records), (checks, records)
        if nums == 1:
            assert len(records) == 1, (checks, records)
        assert_origin_invariant(tmp_path / checks / "dump")
    assert [r["name"] for _, r in found[0]][:1] == [r["name"] for _, r in found[1]][:1]


class Block(nn.Cell):
    """Returns what its Policy returns: passes the -inf on."""

    def __init__(self):
        super().__init__()
        self.policy = Policy()

    def construct(self, x, valid):
        return self.policy(x, valid)


class Act(nn.Cell):
    """A forward-only model returning the masked logits themselves."""

    def __init__(self, wrapped):
        super().__init__()
        self.inner = Block() if wrapped else Policy()

    def construct(self, x, valid):
        return self.inner(x, valid)


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_forward_only_result_that_is_the_minus_inf_records_its_maker(tmp_path, monkeypatch, wrapped):
    """Nothing consumed the -inf: it is the result, and its maker, Policy,
    is recorded as the origin in each step (when the window closes), and
    only it: a Block passing it on is no record of its own."""
    def scenario(debugger):
        net = Act(wrapped)
        for _ in range(2):
            debugger.start(net)
            net(Tensor(np.ones((2, 4), np.float32)), Tensor(VALID))
            debugger.stop()
            debugger.step()

    name = "Cell.inner.policy.Policy.forward.0" if wrapped else "Cell.inner.Policy.forward.0"
    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0"):
        assert [(step, r["name"], r["origin"]) for step, r in records] == [(0, name, True), (1, name, True)], records


class Diff(nn.Cell):
    """``mask - mask``: -inf - -inf is NaN."""

    def construct(self, m):
        return m - m


class Computes(nn.Cell):
    """Step 0 consumes the mask (log_softmax); step 1 hands it to Diff."""

    def __init__(self):
        super().__init__()
        self.policy = Policy()
        self.diff = Diff()

    def construct(self, x, valid, broken=False):
        masked = self.policy(x, valid)
        if broken:
            return self.diff(masked).sum()
        return ops.log_softmax(masked, -1).max()


@pytest.mark.parametrize("nums", [1, -1])
def test_a_cell_computing_nan_from_the_mask_makes_its_maker_the_origin(tmp_path, monkeypatch, nums):
    """Step 0 is clean (no record). In step 1 Diff takes Policy's -inf and
    returns NaN: the -inf reached a judged result, so Policy is recorded
    then as the origin, and Diff after it, carried (L1's rule); Computes's
    own construct is not called the origin."""
    def scenario(debugger):
        net = Computes()
        grad_fn = ms.value_and_grad(net, None, net.trainable_params())
        for broken in (False, True):
            debugger.start(net)
            grad_fn(Tensor(np.ones((2, 4), np.float32)), Tensor(VALID), broken)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=nums):
        assert {step for step, _ in records} == {1}, records
        names = [(r["name"], r["origin"]) for _, r in records]
        assert names[0] == ("Cell.policy.Policy.forward.0", True), records
        if nums == 1:
            assert len(names) == 1, records
        else:
            assert names[1] == ("Cell.diff.Diff.forward.0", False), records
            assert not any(origin for _, origin in names[1:]), records


class CausalMask(nn.Cell):
    """A -inf causal mask built from its input's shape (by design)."""

    def construct(self, scores):
        upper = ops.triu(ops.ones_like(scores), 1).astype(ms.bool_)
        return ops.zeros_like(scores).masked_fill(upper, float("-inf"))


class Attention(nn.Cell):
    """softmax(scores + mask) @ v: finite, the mask consumed."""

    def construct(self, scores, mask, v):
        return ops.matmul(ops.softmax(scores + mask, -1), v)


class Decoder(nn.Cell):
    def __init__(self):
        super().__init__()
        self.q = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.mask = CausalMask()
        self.attn = Attention()

    def construct(self, x):
        h = self.q(x)
        scores = ops.matmul(h, h.T) * 0.01
        return self.attn(scores, self.mask(scores), h).mean()


def _steps(debugger, net, inputs, lr=1e-3, finite=False):
    """One checked window per input: ``net``'s gradients, an SGD step;
    ``finite``: assert the loss and the gradients stayed finite (a step
    that is clean, or whose overflow never reaches them)."""
    optimizer = nn.SGD(net.trainable_params(), lr)
    grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
    for x in inputs:
        debugger.start(net)
        loss, grads = grad_fn(Tensor(x))
        optimizer(grads)
        debugger.stop()
        debugger.step()
        if finite:
            assert np.isfinite(loss.asnumpy()) and all(np.isfinite(g.asnumpy()).all() for g in grads)


def test_an_attention_cell_given_a_mask_cells_minus_inf_consumes_it(tmp_path, monkeypatch):
    """CausalMask returns -inf by design, Attention's output is finite:
    no record, in any step, trained with gradients."""
    def scenario(debugger):
        _steps(debugger, Decoder(), [np.ones((3, 4), np.float32)] * 2)

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=1):
        assert records == [], records


class Outer(nn.Cell):
    """Net as a sub-Cell: its own construct's overflow is named on its Cell entry."""

    def __init__(self):
        super().__init__()
        self.net = Net()

    def construct(self, x, valid, actions):
        return self.net(x, valid, actions)


def test_a_sub_cell_whose_own_code_overflows_beside_the_mask_is_the_origin(tmp_path, monkeypatch):
    """Net, called inside Outer, takes Policy's -inf by design and its own
    ``x.mean()`` makes +inf in step 1: Net's entry is the origin
    (``own-construct``, naming Policy's -inf), Policy is no origin."""
    def scenario(debugger):
        net = Outer()
        grad_fn = ms.value_and_grad(net, None, net.trainable_params())
        for value in (1.0, 3e38):
            debugger.start(net)
            grad_fn(Tensor(np.full((2, 4), value, np.float32)), Tensor(VALID), Tensor(ACTIONS))
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        assert records and {step for step, _ in records} == {1}, records
        first = records[0][1]
        assert (first["name"], first["origin"]) == ("Cell.net.Net.forward.0", True), records
        assert first["entered"]["source"] == "own-construct", first
        assert "Cell.net.policy.Policy.forward.0 made by design" in first["entered"]["message"], first
        assert not any(r["origin"] for _, r in records[1:]), records


class SumsTheMask(nn.Cell):
    """A loss that is the sum of the masked logits: -inf."""

    def __init__(self):
        super().__init__()
        self.policy = Policy()

    def construct(self, x, valid):
        return self.policy(x, valid).sum()


def test_a_loss_that_is_the_masks_minus_inf_records_its_maker(tmp_path, monkeypatch):
    """The -inf reaches the loss of a gradient computation unconsumed: the
    maker, Policy, is the origin (not an ``outside`` loss record)."""
    def scenario(debugger):
        net = SumsTheMask()
        debugger.start(net)
        ms.value_and_grad(net, None, net.trainable_params())(Tensor(np.ones((2, 4), np.float32)), Tensor(VALID))
        debugger.stop()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=1):
        assert [(r["name"], r["origin"]) for _, r in records] == [("Cell.policy.Policy.forward.0", True)], records


class LogP(nn.Cell):
    """log of probabilities some of which are 0 by design: -inf there."""

    def construct(self, p):
        return ops.log(p)


class Entropy(nn.Cell):
    """where(p > 0, log(p), 0) * p: finite forward; log's backward at 0 is
    0 / 0, NaN, in LogP's own backward entry."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(2, 2, weight_init="ones", bias_init="zeros")
        self.logp = LogP()

    def construct(self, x):
        p = ops.relu(self.fc(x))
        return (ops.where(p > 0, self.logp(p), ops.zeros_like(p)) * p).sum()


def test_the_makers_own_backward_overflowing_records_the_maker_first(tmp_path, monkeypatch):
    """LogP returns -inf by design (deferred) and its own backward makes
    NaN from finite gradients: LogP's forward entry is recorded first, the
    origin, then its backward entry, carried (L1's rule)."""
    def scenario(debugger):
        net = Entropy()
        debugger.start(net)
        ms.value_and_grad(net, None, net.trainable_params())(Tensor(np.array([[1.0, -1.0]], np.float32)))
        debugger.stop()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        names = [(r["name"], r["origin"]) for _, r in records]
        assert names[:2] == [("Cell.logp.LogP.forward.0", True), ("Cell.logp.LogP.backward.0", False)], records
        assert not any(origin for _, origin in names[1:]), records


class NegExp(nn.Cell):
    """An overflow that gives -inf only: -exp(100 * x) is -inf in float32
    (given no gradient: its backward, inf * 0, would be NaN and recorded).
    Only above the diagonal, so that every row keeps finite entries: a row
    of -inf only is NaN after softmax on MindSpore 2.7.0 (0 on 2.10.0)."""

    def construct(self, scores):
        return -ops.exp(ops.triu(scores, 1) * 100.0)


class Scores(nn.Cell):
    """Attention over a mask made by ``mask_cell``; the result finite."""

    def __init__(self, mask_cell):
        super().__init__()
        self.q = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.mask = mask_cell
        self.attn = Attention()

    def construct(self, x):
        h = self.q(x)
        scores = ops.matmul(h, h.T)
        return self.attn(scores * 0.01, self.mask(ops.stop_gradient(scores)), h).mean()  # no gradient through it


@pytest.mark.parametrize("mask_cell, name", [(CausalMask, "Cell.mask.CausalMask"), (NegExp, "Cell.mask.NegExp")])
def test_the_all_clear_names_the_cells_taken_for_a_mask(tmp_path, monkeypatch, mask_cell, name):
    """A Cell's -inf-only output that later code turned finite is taken for a
    mask made by design and not recorded; at L0 an overflow that gives -inf
    only (NegExp) looks the same, so the all-clear names such Cells and
    says level L1 tells them apart."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L0", nums=1)))
    net = Scores(mask_cell())
    optimizer = nn.SGD(net.trainable_params(), 1e-3)
    grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
    try:
        for _ in range(2):
            debugger.start(net)
            _, grads = grad_fn(Tensor(np.ones((3, 4), np.float32)))
            optimizer(grads)
            debugger.stop()
            debugger.step()
        line = debugger.windows.summary.line(False)
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    assert dump_records(tmp_path / "dump") == []
    assert line.startswith("probe_runtime: no overflow found in 2 checked step(s)"), line
    assert f"1 Cell(s) returned -inf only, which later code turned finite, and were taken for a mask made by " \
           f"design (not recorded): {name}; " in line, line
    assert "level L1 tells them apart" in line


class MaskedScores(nn.Cell):
    """A mask Cell's -inf taken by a Softmax Cell (finite) and, by the
    model's own code (``amin``), also returned: it reaches the result."""

    def __init__(self):
        super().__init__()
        self.q = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.mask = CausalMask()
        self.sm = nn.Softmax(-1)

    def construct(self, x):
        s = self.mask(self.q(x))
        return self.sm(s).sum(-1) + ops.amin(s, -1)


@pytest.mark.parametrize("train", [True, False])
def test_a_mask_a_softmax_took_that_also_reaches_the_result_is_recorded(tmp_path, monkeypatch, train):
    """A fresh user's finding: once the Softmax Cell had consumed the
    mask's -inf, the same -inf reaching the model's result was no longer
    traced: a forward-only run said "no overflow found" (and named the
    mask Cell as a consumed mask), a training run got an ``outside``
    record for the loss. The mask Cell is the origin, first."""
    def scenario(debugger):
        net = MaskedScores()
        optimizer = nn.SGD(net.trainable_params(), 1e-3)
        grad_fn = ms.value_and_grad(lambda x: (net(x) ** 2).mean(), None, optimizer.parameters)
        debugger.start(net)
        if train:
            _, grads = grad_fn(Tensor(np.ones((4, 4), np.float32)))
            optimizer(grads)
        else:
            net(Tensor(np.ones((4, 4), np.float32)))
        debugger.stop()
        debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        assert records and (records[0][1]["name"], records[0][1]["origin"]) == ("Cell.mask.CausalMask.forward.0", True)
        assert all((r.get("entered") or {}).get("source") != "outside" for _, r in records), records


class _Mask(nn.Cell):
    def construct(self, scores, masked):
        return ops.masked_fill(scores, masked, float("-inf"))


class _TwoMasks(nn.Cell):
    """A mask a softmax Cell consumes, then a second mask whose -inf
    reaches the result through a Dense."""

    def __init__(self):
        super().__init__()
        self.mask, self.mask2 = _Mask(), _Mask()
        self.soft = nn.Softmax(-1)
        self.fc = nn.Dense(3, 3, weight_init="ones", bias_init="zeros")

    def construct(self, scores, first, second):
        attended = self.soft(self.mask(scores, first))
        return self.fc(self.mask2(self.fc(attended), second))


def test_a_mask_a_softmax_consumed_is_not_recorded_beside_one_that_reached_the_result(tmp_path, monkeypatch):
    """A hunt's finding: when the second mask's -inf reached the model's
    result, the first mask, consumed by the softmax, was recorded too, and
    named as where the overflow started."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L0")))
    net = _TwoMasks()
    scores = Tensor(np.array([[1.0, 2.0, 3.0]], np.float32))
    debugger.start(net)
    out = net(scores, Tensor(np.array([[False, False, True]])), Tensor(np.array([[True, False, False]])))
    debugger.stop()
    debugger.step()
    debugger.windows.summary.said = True
    assert not np.isfinite(out.asnumpy()).all()
    assert [(r["name"], r["origin"]) for _, r in dump_records(tmp_path / "dump")][:1] == [
        ("Cell.mask2._Mask.forward.0", True)]


class _Half(nn.Cell):
    """A float16 Dense whose result overflows to -inf only (a real overflow,
    not a mask), cast to float32 by the enclosing Cell's own code before
    the loss Cell takes it (what amp's O2 and many scripts do)."""

    def __init__(self, cast):
        super().__init__()
        self.backbone = nn.Dense(4, 1, weight_init="ones", bias_init="zeros").to_float(ms.float16)
        self.loss = nn.MSELoss()
        self.cast = cast

    def construct(self, x, y):
        out = self.backbone(x)
        return self.loss(out.astype(ms.float32) if self.cast else out * 1.0, y)


@pytest.mark.parametrize("cast", [True, False])
def test_a_makers_minus_inf_the_enclosing_code_casts_names_the_maker(tmp_path, monkeypatch, cast):
    """A hunt's finding: the Dense's -inf, cast by the enclosing Cell
    before the loss Cell, made the enclosing Cell the origin ("inf/nan
    started in _Half.construct itself") and the Dense was never named;
    the -inf a Cell gets that lies where a deferred sibling's -inf lay is
    that sibling's (``ByDesign.adopt``)."""
    def scenario(debugger):
        net = _Half(cast)
        optimizer = nn.SGD(net.trainable_params(), 0.0)
        grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
        for step in range(2):
            debugger.start(net)
            x = Tensor(np.full((2, 4), -30000.0 if step == 1 else -1.0, np.float32), ms.float16)
            _, grads = grad_fn(x, Tensor(np.zeros((2, 1), np.float32)))
            optimizer(grads)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        assert records and {step for step, _ in records} == {1}, records
        first = records[0][1]
        assert (first["name"], first["origin"]) == ("Cell.backbone.Dense.forward.0", True), records
        assert not any(r["origin"] for _, r in records[1:]), records


class _MaskedHead(nn.Cell):
    """log_softmax over logits with class 2 masked out by a -inf constant."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3, weight_init="ones", bias_init="zeros")
        self.mask = Tensor(np.array([0, 0, -np.inf], np.float32))

    def construct(self, x):
        return ops.log_softmax(self.fc(x) + self.mask, -1)


class _HeadInside(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Dense(4, 4), _MaskedHead()

    def construct(self, x):
        return self.head(ops.relu(self.body(x)))


@pytest.mark.parametrize("model, maker", [(_HeadInside, "Cell.head._MaskedHead.forward.0"),
                                          (_MaskedHead, "Cell._MaskedHead.forward.0")])
@pytest.mark.parametrize("picked", [0, 2])
def test_a_mask_the_model_returns_is_judged_by_the_loss_after_it(tmp_path, monkeypatch, model, maker, picked):
    """Hunts' findings: a model returning log-probabilities with a class
    masked to -inf (made by a sub-Cell, or by the model's own construct),
    of which the loss computed after the model picks finite entries, was an
    origin in every step (loss and gradients finite; L1 had no record).
    The -inf is judged where the loss sees it: picked finite, nothing is
    recorded; the masked class picked (the loss is inf), its maker is the
    origin."""
    def scenario(debugger):
        net = model()
        optimizer = nn.SGD(net.trainable_params(), 0.1)
        labels = Tensor(np.array([[picked], [picked]], np.int32))
        grad_fn = ms.value_and_grad(lambda x: -ops.gather_elements(net(x), 1, labels).mean(), None,
                                    optimizer.parameters)
        for _ in range(2):
            debugger.start(net)
            _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)))
            optimizer(grads)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        if picked == 0:
            assert records == [], records
        else:
            assert records and (records[0][1]["name"], records[0][1]["origin"]) == (maker, True), records


def _half_dense():
    net = nn.SequentialCell([nn.Dense(4, 3, weight_init="ones", bias_init="zeros")])
    net.to_float(ms.float16)
    return net


def test_a_finite_loss_does_not_consume_a_forward_only_passs_minus_inf(tmp_path, monkeypatch):
    """A review's finding: a window holding an evaluation pass whose
    float16 Dense overflowed to -inf, then a training step on other data
    with a finite loss, gave an all-clear: the finite loss counted every
    -inf of the window as consumed, not only the one the model returned
    into it."""
    def scenario(debugger):
        net = _half_dense()
        optimizer = nn.SGD(net.trainable_params(), 0.01)
        grad_fn = ms.value_and_grad(lambda x: (net(x).astype(ms.float32) ** 2).mean(), None, optimizer.parameters)
        for step in range(2):
            debugger.start(net)
            net(Tensor(np.full((2, 4), -30000 if step == 1 else -0.5, np.float16))).asnumpy()  # a metric
            _, grads = grad_fn(Tensor(np.full((2, 4), 0.5, np.float16)))
            optimizer(grads)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        assert records and (records[0][0], records[0][1]["name"], records[0][1]["origin"]) == \
            (1, "Cell.0.Dense.forward.0", True), records


def test_a_finite_loss_with_nan_gradients_keeps_the_makers_origin_first(tmp_path, monkeypatch):
    """A review's finding: the loss sqrt(exp(-inf)) is finite, its
    gradient NaN; the Dense that overflowed to -inf lost its origin record
    (the finite loss consumed its -inf) and the step had carried gradient
    records only."""
    def scenario(debugger):
        net = _half_dense()
        optimizer = nn.SGD(net.trainable_params(), 0.01)
        grad_fn = ms.value_and_grad(lambda x: ops.sqrt(ops.exp(net(x).astype(ms.float32))).mean(), None,
                                    optimizer.parameters)
        for step in range(2):
            debugger.start(net)
            _, grads = grad_fn(Tensor(np.full((2, 4), -30000 if step == 1 else -0.5, np.float16)))
            optimizer(grads)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        assert records and (records[0][0], records[0][1]["name"], records[0][1]["origin"]) == \
            (1, "Cell.0.Dense.forward.0", True), records


class _OwnMask(nn.Cell):
    """Its own construct masks class 2 with -inf: a forward-only model."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc(x) + Tensor(np.array([0, 0, -np.inf], np.float32))


def test_a_forward_only_models_own_minus_inf_keeps_its_own_construct_record(tmp_path, monkeypatch):
    """A review's finding: deferred, then recorded when the window closed,
    the model's own -inf lost its ``entered`` (own-construct, use L1)."""
    def scenario(debugger):
        net = _OwnMask()
        debugger.start(net)
        net(Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
        debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        first = records[0][1]
        assert (first["name"], first["origin"]) == ("Cell._OwnMask.forward.0", True), records
        assert first["entered"]["source"] == "own-construct" and "level L1" in first["entered"]["message"], first


class _Policy(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(Tensor(np.ones((3, 5), np.float32)), name="pw")

    def construct(self, x, valid):
        return ops.matmul(x, self.w).masked_fill(~valid, float("-inf"))


class _Exp(nn.Cell):
    """-exp in float16: -inf only where exp overflows, then a softmax."""

    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(Tensor(np.ones((4,), np.float16)), name="bw")

    def construct(self, h):
        return ops.softmax((-ops.exp(h * self.w)).astype(ms.float32), -1)


class _Both(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = _Policy(), _Exp()


@pytest.mark.parametrize("with_b", [False, True])
def test_a_mask_sub_cell_the_loss_function_calls_is_judged_by_its_loss(tmp_path, monkeypatch, with_b):
    """A hunt's finding: a policy sub-Cell of the model given to start(),
    called by the loss function (not by the model), handed its -inf mask
    to code outside the Cells; consumed by a finite loss there, it was an
    ORIGIN in every step, and named before a second computation's real
    overflow (model B's exp in float16, step 1)."""
    valid = Tensor(np.array([[1, 1, 0, 1, 0]] * 2, bool))
    actions = Tensor(np.array([[0], [3]], np.int32))

    def scenario(debugger):
        net = _Both()
        optimizer = nn.SGD(net.a.trainable_params() + (net.b.trainable_params() if with_b else []), 0.01)
        grad_a = ms.value_and_grad(lambda x: -ops.gather_elements(ops.log_softmax(net.a(x, valid), -1), 1,
                                                                  actions).mean(), None, net.a.trainable_params())
        grad_b = ms.value_and_grad(lambda h: (net.b(h) * Tensor(np.arange(4, dtype=np.float32))).sum(), None,
                                   net.b.trainable_params())
        for step in range(2):
            debugger.start(net)
            _, grads = grad_a(Tensor(np.random.RandomState(step).rand(2, 3).astype(np.float32)))
            if with_b:
                h = np.random.RandomState(step).rand(4).astype(np.float16)
                h[1] = 12.0 if step == 1 else h[1]
                _, more = grad_b(Tensor(h))
                grads = grads + more
            optimizer(grads)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0", nums=-1):
        assert not any("Policy" in r["name"] for _, r in records), records
        if with_b:
            assert records and records[0][0] == 1 and records[0][1]["name"].startswith("Cell.b._Exp"), records
        else:
            assert records == [], records


class _Float16Head(nn.Cell):
    """A float16 ``nn.Dense`` (MindSpore's layer, or a subclass keeping its
    ``construct``) whose output is -inf only where the input is large, then
    a ReLU that hides it: the loss and the gradients stay finite."""

    def __init__(self, dense_class):
        super().__init__()
        self.fc = dense_class(4, 4, weight_init="ones", bias_init="zeros").to_float(ms.float16)
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.fc(x).astype(ms.float32)).mean()


class _MyDense(nn.Dense):
    """A subclass that keeps ``nn.Dense.construct``."""


@pytest.mark.parametrize("dense_class", [nn.Dense, _MyDense])
def test_a_library_layer_overflowing_to_minus_inf_only_is_an_origin(tmp_path, monkeypatch, dense_class):
    """A hunt's finding: a float16 ``nn.Linear`` overflowing to -inf only
    (4 * -30000 is past -65504) before a ReLU was taken for a mask at L0
    and the run got an all-clear, where L1 names the MatMul. A layer
    MindSpore defines writes no mask: its -inf-only output from finite
    inputs and Parameters is the origin, under exact and default checks."""
    def scenario(debugger):
        _steps(debugger, _Float16Head(dense_class), [np.full((2, 4), v, np.float32) for v in (0.5, -30000.0)],
               lr=0.0, finite=True)

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0"):
        assert records and records[0][0] == 1, records
        assert (records[0][1]["name"], records[0][1]["origin"]) == ("Cell.fc._MyDense.forward.0"
                                                                     if dense_class is _MyDense else
                                                                     "Cell.fc.Dense.forward.0", True), records


class _MaskedLogSoftmax(nn.Cell):
    """float16 logits of about 20 plus a vocabulary mask of
    ``finfo(float16).min`` (finite), then ``nn.LogSoftmax``: x - max
    overflows float16 at the masked entry, -inf there by design; the loss
    gathers allowed targets only."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.logsm = nn.LogSoftmax(-1)

    def construct(self, x):
        logits = (self.fc(x) * 5.0 + Tensor(np.array([0.0, 0.0, 0.0, -20.0], np.float32))).astype(ms.float16)
        mask = Tensor(np.array([0.0, 0.0, 0.0, np.finfo(np.float16).min], np.float16))
        logp = self.logsm(logits + mask)
        return -ops.gather_elements(logp, 1, Tensor(np.array([[0], [1]], np.int32))).astype(ms.float32).mean()


def test_a_library_log_softmax_over_a_masked_vocabulary_is_a_maker(tmp_path, monkeypatch):
    """A review's finding: with every MindSpore layer an origin at once, a
    LogSoftmax whose -inf is a mask's (the loss skips it) was an ORIGIN in
    every clean step; ``log_softmax`` is a maker at L1 too."""
    def scenario(debugger):
        _steps(debugger, _MaskedLogSoftmax(), [np.ones((2, 4), np.float32)] * 2, finite=True)

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level="L0"):
        assert records == [], records
