"""-inf written into a tensor by design (probe_runtime.check.by_design).

An attention mask written with ``s[pad] = -inf`` (``Tensor.__setitem__``,
in place) or ``s.index_fill(2, idx, -inf)`` and consumed by a softmax is
no overflow: the loss and every gradient stay finite. It used to be the
ORIGIN in every step (``Tensor.__setitem__.0.forward``), which with
``overflow_nums`` 1 hid the real overflow of a later step. ``masked_fill``
was already handled; these are the same rule for writes: deferred, and
recorded only when the -inf reaches a judged result.

Each scenario runs under the default checks and under ``checks="exact"``
(fresh dump folders); both must give the same first record.
"""
from __future__ import annotations


import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
STEPS = 3
MINUS_INF = float("-inf")
#: the padded key of every query: the last one
PAD = np.zeros((2, 4, 4), bool)
PAD[:, :, 3] = True


def _named(records):
    """[(step, name, origin)] of ``records``."""
    return [(step, record["name"], record["origin"]) for step, record in records]


def _write(s, how):
    """The scores ``s`` with the padded keys set to -inf, written as ``how`` says."""
    if how == "setitem":
        s[Tensor(PAD)] = MINUS_INF
        return s
    if how == "setitem_slice":
        s[:, :, 3] = MINUS_INF
        return s
    if how == "setitem_tensor":  # a -inf tensor no checked call made, as the value
        s[Tensor(PAD)] = Tensor(MINUS_INF, ms.float32)
        return s
    if how == "setitem_twice":  # the second write takes the first one's -inf (the call's input is a copy)
        s[Tensor(PAD)] = MINUS_INF
        s[:, 0, 2] = MINUS_INF
        return s
    if how == "copy_":  # an in-place copy of a masked_fill's -inf: returns a new object over s's memory
        s.copy_(s.masked_fill(Tensor(PAD), MINUS_INF))
        return s
    if how == "float16_finfo_min":  # float32's lowest value rounds to -inf in float16
        s = s.astype(ms.float16)
        s[Tensor(PAD)] = float(np.finfo(np.float32).min)
        return s
    if how == "index_fill":
        return s.index_fill(2, Tensor(np.array([3], np.int32)), MINUS_INF)
    if how == "ops.index_fill":
        return ops.index_fill(s, 2, Tensor(np.array([3], np.int32)), MINUS_INF)
    raise AssertionError(how)


class _Attention(nn.Cell):
    """Scores of a query and a key projection, masked by ``how``, through a
    softmax into the loss. In the step ``wrong``: ``"x"`` scales the input
    by 1e20 (the scores' matmul overflows: the real overflow), ``"sum"``
    also sums the masked scores into the loss (the -inf reaches it),
    ``"plus_inf"`` also writes +inf into a score (never by design)."""

    def __init__(self, how):
        super().__init__()
        self.how = how
        self.q = nn.Dense(4, 4)
        self.k = nn.Dense(4, 4)

    def construct(self, x, wrong):
        s = _write(ops.matmul(self.q(x), self.k(x).swapaxes(-1, -2)), self.how)
        if wrong == "plus_inf":
            s[:, 1, 0] = float("inf")
        loss = (ops.softmax(s, axis=-1) ** 2).sum().astype(ms.float32)
        return loss + s.sum().astype(ms.float32) if wrong == "sum" else loss


def _scenario(how, wrong=None, at=2):
    """``STEPS`` training steps of :class:`_Attention`; ``wrong`` in step ``at`` only."""
    def scenario(debugger):
        ms.set_seed(0)
        net = _Attention(how)
        grad_fn = ms.value_and_grad(net, None, net.trainable_params())
        x = np.random.RandomState(0).randn(2, 4, 4).astype(np.float32)
        for step in range(STEPS):
            now = wrong if step == at else None
            debugger.start()
            loss, grads = grad_fn(Tensor(x * (1e20 if now == "x" else 1.0)), now)
            debugger.stop()
            debugger.step()
            finite = now is None
            assert np.isfinite(loss.asnumpy()).all() == finite, (step, loss)
            if finite:
                assert all(np.isfinite(g.asnumpy()).all() for g in grads), step
    return scenario


def _run_both(tmp_path, monkeypatch, scenario, nums=-1):
    """(records under the default checks, records under exact checks), named."""
    return [_named(records) for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL,
                                                                  nums=nums)]


WRITES = ["setitem", "setitem_slice", "setitem_tensor", "setitem_twice", "copy_", "float16_finfo_min",
          "index_fill", "ops.index_fill"]
#: the entry that writes the -inf of each way (the origin once it reaches the loss)
WRITER = {"setitem": "Tensor.__setitem__.0.forward", "setitem_slice": "Tensor.__setitem__.0.forward",
          "setitem_tensor": "Tensor.__setitem__.0.forward", "setitem_twice": "Tensor.__setitem__.0.forward",
          "copy_": "Tensor.masked_fill.0.forward", "float16_finfo_min": "Tensor.__setitem__.0.forward",
          "index_fill": "Tensor.index_fill.0.forward", "ops.index_fill": "Functional.index_fill.0.forward"}


@pytest.mark.parametrize("how", WRITES)
def test_a_minus_inf_mask_written_into_the_scores_that_a_softmax_consumes_is_not_an_overflow(
        tmp_path, monkeypatch, how):
    """The mask written with -inf, consumed by the softmax, in every step:
    the loss and the gradients are finite, so nothing is recorded (the
    write was an ORIGIN in every step before)."""
    default, exact = _run_both(tmp_path, monkeypatch, _scenario(how))
    assert default == exact == []


@pytest.mark.parametrize("how", ["setitem", "index_fill"])
def test_with_overflow_nums_1_the_real_overflow_is_the_one_record(tmp_path, monkeypatch, how):
    """overflow_nums 1, the tester's script: the mask in every step, a
    matmul overflowing in step 2. Its record is the only one (the mask's
    record in step 0 used everything up and hid it)."""
    default, exact = _run_both(tmp_path, monkeypatch, _scenario(how, "x"), nums=1)
    assert default == exact == [(2, "Functional.matmul.0.forward", True)]


@pytest.mark.parametrize("how", ["setitem", "setitem_twice", "copy_", "index_fill", "ops.index_fill"])
def test_a_written_minus_inf_that_reaches_the_loss_is_the_origin(tmp_path, monkeypatch, how):
    """Step 2 also sums the masked scores into the loss: the -inf written
    by design reached a judged result, so its writer is the origin, in
    that step, and the sum carries it."""
    default, exact = _run_both(tmp_path, monkeypatch, _scenario(how, "sum"))
    assert default[0] == exact[0] == (2, WRITER[how], True)
    assert "sum" in exact[1][1] and not exact[1][2], exact[:3]


def test_a_minus_inf_tensor_written_in_that_reaches_the_loss_names_the_write(tmp_path, monkeypatch):
    """The value written is a -inf tensor no checked call made: the write
    is where it came in, recorded (carried) in step 2 when it reaches the
    loss, never before."""
    default, exact = _run_both(tmp_path, monkeypatch, _scenario("setitem_tensor", "sum"))
    assert default[0] == exact[0] == (2, "Tensor.__setitem__.0.forward", False)


@pytest.mark.parametrize("how", ["setitem", "index_fill"])
def test_plus_inf_written_into_the_scores_is_the_origin(tmp_path, monkeypatch, how):
    """s[:, 1, 0] = inf in step 2, after the -inf mask: +inf is never by
    design, so that write is the origin (the softmax and sum carry it),
    and no step before has a record."""
    default, exact = _run_both(tmp_path, monkeypatch, _scenario(how, "plus_inf"))
    index = 1 if how.startswith("setitem") else 0
    assert default[0] == exact[0] == (2, f"Tensor.__setitem__.{index}.forward", True)
    assert all(step == 2 for step, _, _ in exact)


def test_plus_inf_written_into_a_tensor_that_flows_into_a_sum_is_the_origin(tmp_path, monkeypatch):
    """Forward only: a -inf mask written into scores and consumed by a
    softmax in every step, and x[idx] = inf into another tensor in step 1,
    summed into the result: that write is the origin (its +inf is never by
    design), the sum carries it, and the mask's write is never recorded."""
    def scenario(debugger):
        for step in range(2):
            debugger.start()
            scores = ops.mul(Tensor(np.ones((2, 4), np.float32)), 3.0)
            scores[:, 3] = MINUS_INF
            x = ops.mul(Tensor(np.ones(4, np.float32)), 2.0)
            if step == 1:
                x[Tensor(np.array([1], np.int32))] = float("inf")
            (ops.sum(x) + ops.softmax(scores, axis=-1).sum()).asnumpy()
            debugger.stop()
            debugger.step()

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert default[0] == exact[0] == (1, "Tensor.__setitem__.1.forward", True)
    assert exact[1][0] == 1 and "sum" in exact[1][1] and not exact[1][2], exact
    assert all(name != "Tensor.__setitem__.0.forward" for _, name, _ in exact), exact


def _deep(layers, last_reaches_loss=False, overflow_at=None):
    """``layers`` masked attention layers in one step (each: scores, a -inf
    masked_fill, a softmax), more than the 16 makers a window keeps; in
    the step ``overflow_at`` the input is scaled to overflow the first
    matmul. ``last_reaches_loss``: the last layer's masked scores are also
    summed into the loss in step 2 (its -inf reaches a judged result)."""
    def scenario(debugger):
        w = ms.Parameter(Tensor(np.full((4, 4), 10.0, np.float32)), name="w")
        mask = Tensor(np.triu(np.ones((4, 4), bool), 1))

        def forward(x, leak):
            h = x
            for _ in range(layers):
                s = ops.masked_fill(ops.matmul(h, w), mask, MINUS_INF)
                h = ops.softmax(s, -1)
            return h.sum() + s.sum() if leak else h.sum()

        grad_fn = ms.value_and_grad(forward, None, [w])
        for step in range(STEPS):
            scale = 1e38 if step == overflow_at else 1.0  # the first matmul: 4e39
            debugger.start()
            grad_fn(Tensor(np.full((4, 4), scale, np.float32)), last_reaches_loss and step == 2)
            debugger.stop()
            debugger.step()
    return scenario


def test_more_masked_layers_than_the_window_keeps_are_no_overflow(tmp_path, monkeypatch):
    """20 masked attention layers: the window keeps at most 16 makers;
    the 17th mask was called an origin in every step. Makers whose -inf a
    softmax already absorbed are let go first."""
    default, exact = _run_both(tmp_path, monkeypatch, _deep(20))
    assert default == exact == []


def test_past_the_limit_a_mask_that_reaches_the_loss_and_a_real_overflow_are_named(tmp_path, monkeypatch):
    """Past the 16 kept makers the rule still holds both ways: the last
    layer's mask summed into the loss is the origin in its step, and an
    input that overflows the first matmul is named there."""
    default, exact = _run_both(tmp_path, monkeypatch, _deep(20, last_reaches_loss=True))
    assert default[0] == exact[0] == (2, "Functional.masked_fill.19.forward", True)
    (tmp_path / "again").mkdir()
    default, exact = _run_both(tmp_path / "again", monkeypatch, _deep(20, overflow_at=1))
    assert default[0] == exact[0] == (1, "Functional.matmul.0.forward", True)


def _built_first(heads, overflow_at=None):
    """``heads`` masked scores built before any is used (each a -inf
    masked_fill), then each softmaxed; in the step ``overflow_at`` an
    ``exp`` of 100 overflows beside them."""
    def scenario(debugger):
        w = ms.Parameter(Tensor(np.eye(4, dtype=np.float32)), name="w")
        mask = Tensor(np.triu(np.ones((4, 4), bool), 1))

        def forward(x, t):
            masked = [ops.masked_fill(ops.matmul(x * (h + 1), w), mask, MINUS_INF) for h in range(heads)]
            return sum(ops.softmax(m, -1).sum() for m in masked) + ops.exp(t).sum() * 0.0

        grad_fn = ms.value_and_grad(forward, None, [w])
        for step in range(STEPS):
            debugger.start()
            grad_fn(Tensor(np.ones((4, 4), np.float32)), Tensor([100.0 if step == overflow_at else 1.0]))
            debugger.stop()
            debugger.step()
    return scenario


def test_more_masks_built_before_any_is_used_than_16_are_no_overflow(tmp_path, monkeypatch):
    """A fresh user's finding: 17 heads' masked scores built first, then
    softmaxed: the 17th mask was an ORIGIN in a clean step (16 makers were
    waiting), and with ``overflow_nums`` 1 the real overflow of a later step
    went unchecked. Makers nothing consumed yet are kept up to 256."""
    default, exact = _run_both(tmp_path, monkeypatch, _built_first(20))
    assert default == exact == []
    (tmp_path / "again").mkdir()
    default, exact = _run_both(tmp_path / "again", monkeypatch, _built_first(20, overflow_at=1), nums=1)
    assert default == exact == [(1, "Functional.exp.0.forward", True)], (default, exact)


def test_a_minus_inf_from_outside_moved_past_the_limit_is_not_an_origin(tmp_path, monkeypatch):
    """A reviewer's finding: with 16 makers held and none consumed, a
    reshape of a -inf tensor no checked call made was called the origin
    (the rule for a write that makes NaN or +inf of its own took it); it
    is carried, with where it came in, as before."""
    def scenario(debugger):
        outside = Tensor(np.full((2, 2), MINUS_INF, np.float32))  # made before the window
        debugger.start()
        held = [ops.full((2,), MINUS_INF, dtype=ms.float32) for _ in range(16)]  # 16 makers, none consumed
        moved = ops.reshape(outside, (4,))
        debugger.stop()
        debugger.step()
        assert len(held) == 16 and not np.isfinite(moved.asnumpy()).any()
    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert ("Functional.reshape.0.forward" in [name for _, name, _ in exact])
    assert all(not origin for _, name, origin in exact if name == "Functional.reshape.0.forward"), exact
    assert default == exact


def test_a_mask_whose_backward_only_carries_nan_is_not_an_origin(tmp_path, monkeypatch):
    """A masked loss: logits masked with -inf (by design, the softmax turns
    it into probabilities of 0), then ``where(allowed, log(p), 0)``. The
    forward pass is finite; log's backward divides 0 by 0 at the banned
    entries. The log is the origin; the masked_fill, whose backward only
    carried the NaN coming from the softmax's backward, was recorded as a
    second origin of the same step."""
    banned = Tensor(np.array([False] * 4 + [True] * 2))

    def scenario(debugger):
        ms.set_seed(0)
        head = nn.Dense(4, 6)

        def forward(x):
            p = ops.softmax(head(x).masked_fill(banned, MINUS_INF), axis=-1)
            return -ops.where(~banned, ops.log(p), ops.zeros_like(p)).mean()

        grad_fn = ms.value_and_grad(forward, None, head.trainable_params())
        debugger.start()
        _, grads = grad_fn(Tensor(np.random.RandomState(0).randn(3, 4).astype(np.float32)))
        debugger.stop()
        debugger.step()
        assert not all(np.isfinite(g.asnumpy()).all() for g in grads)

    for records in _run_both(tmp_path, monkeypatch, scenario):
        origins = [name for _, name, origin in records if origin]
        assert origins == ["Functional.log.0.forward"], records
        assert "Tensor.masked_fill.0.backward" in [name for _, name, _ in records]


def _float16_fill(how, mask_at):
    """Three forward steps over float16 scores filled where ``mask`` holds,
    as ``how`` says, with a value float16 cannot hold (-1e9 or 1e5: the
    fill casts it to -inf or +inf first); the mask is all False except in
    the step ``mask_at``. The scores are consumed by a softmax; with
    1e5 the +inf written in step ``mask_at`` is a real overflow."""
    def scenario(debugger):
        for step in range(STEPS):
            scores = ops.mul(Tensor(np.ones((2, 4), np.float16)), 3.0)
            mask = np.zeros((2, 4), bool)
            if step == mask_at:
                mask[:, 3] = True
            debugger.start()
            if how == "masked_fill":
                scores = scores.masked_fill(Tensor(mask), -1e9)
            elif how == "setitem":
                scores[Tensor(mask)] = -1e9
            else:
                scores[Tensor(mask)] = 1e5
            ops.softmax(scores.astype(ms.float32), axis=-1).sum().asnumpy()
            debugger.stop()
            debugger.step()
    return scenario


@pytest.mark.parametrize("how", ["masked_fill", "setitem", "setitem_plus"])
def test_a_float16_fill_with_an_all_false_mask_is_no_overflow(tmp_path, monkeypatch, how):
    """A fresh hunt: ``scores.masked_fill(mask == 0, -1e9)`` in float16
    (the Annotated Transformer's idiom) with no padding in the batch writes
    nothing, yet the cast of -1e9 to float16 made inside the call (-inf)
    was recorded in every step, with ``overflow_nums`` 1 hiding the real
    overflow. Nothing is written, so nothing is recorded; a +inf written
    where the mask holds is still the origin, in its step."""
    default, exact = _run_both(tmp_path, monkeypatch, _float16_fill(how, mask_at=2 if how == "setitem_plus" else None))
    if how == "setitem_plus":
        assert default[0] == exact[0] == (2, "Tensor.__setitem__.0.forward", True)
        assert all(step == 2 for step, _, _ in exact), exact
    else:
        assert default == exact == []
