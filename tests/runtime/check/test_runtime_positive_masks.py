"""A +inf written on purpose (a hunt's finding): padded target points set
to +inf before a ``min`` over distances (a Chamfer-style loss) made
``masked_fill`` an ORIGIN in every clean step. A call that writes a value
it was given, given +inf, is a maker by design, as a -inf mask is; an
origin once its +inf reaches the result (every target padded: the min
is +inf). +inf from anything else stays an overflow. A hunt's finding:
the same +inf given as a tensor (``Tensor(float("inf"))``) gave carried
records "made outside the checked window" in every clean step; it is
judged as the float is, unless an overflowing call of the window
computed it."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


#: the +inf value written, as the user gives it
FILLS = {"float": lambda: float("inf"), "Tensor": lambda: Tensor(float("inf")),
         "ms.tensor": lambda: ms.tensor(float("inf"))}


class Chamfer(nn.Cell):
    def __init__(self, fill=FILLS["float"]):
        super().__init__()
        self.fc = nn.Dense(3, 3, weight_init="ones", bias_init="zeros")
        self.fill = fill

    def construct(self, points, targets, pad):
        moved = self.fc(points)
        dist = ((moved.expand_dims(2) - targets.expand_dims(1)) ** 2).sum(-1)
        return ops.masked_fill(dist, pad.expand_dims(1), self.fill()).min(axis=-1).mean()


def _train(debugger, pads, fill=FILLS["float"]):
    net = Chamfer(fill)
    optimizer = nn.SGD(net.trainable_params(), 0.01)
    grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
    rng = np.random.default_rng(0)
    for padded in pads:
        pad = np.zeros((2, 6), bool)
        pad[:, padded:] = True
        debugger.start()
        _, grads = grad_fn(Tensor(rng.normal(size=(2, 5, 3)).astype(np.float32)),
                           Tensor(rng.normal(size=(2, 6, 3)).astype(np.float32)), Tensor(pad))
        optimizer(grads)
        debugger.stop()
        debugger.step()


@pytest.mark.parametrize("fill", sorted(FILLS))
def test_a_positive_infinity_mask_a_min_takes_is_no_overflow(tmp_path, monkeypatch, fill):
    for records in run_default_and_exact(tmp_path, monkeypatch, lambda d: _train(d, (4, 5, 4), FILLS[fill]),
                                         ORIGINAL):
        assert records == [], records


@pytest.mark.parametrize("fill", sorted(FILLS))
def test_a_positive_infinity_mask_that_reaches_the_loss_is_the_origin(tmp_path, monkeypatch, fill):
    """Every target padded in step 1: the min is +inf, the loss +inf."""
    for records in run_default_and_exact(tmp_path, monkeypatch, lambda d: _train(d, (4, 0), FILLS[fill]),
                                         ORIGINAL):
        assert records and {step for step, _ in records} == {1}, records
        assert (records[0][1]["name"], records[0][1]["origin"]) == ("Functional.masked_fill.0.forward", True), \
            records


def test_positive_infinity_made_by_a_computation_is_an_overflow(tmp_path, monkeypatch):
    """``exp`` overflowing to +inf before the same min: an origin, although
    a min would take it finite."""
    def scenario(debugger):
        debugger.start()
        ops.exp(Tensor(np.array([[1.0, 100.0]], np.float32))).min(axis=-1).sum()
        debugger.stop()
        debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        assert records and (records[0][1]["name"], records[0][1]["origin"]) == ("Functional.exp.0.forward", True), \
            records


def test_positive_infinity_a_computation_made_given_as_the_fill_value_is_an_overflow(tmp_path, monkeypatch):
    """``exp`` overflowing to +inf, then given to ``masked_fill`` as its
    value before a min: ``exp`` is the origin, and the fill carries it."""
    for records in run_default_and_exact(tmp_path, monkeypatch,
                                         lambda d: _train(d, (4, 5), lambda: ops.exp(Tensor(100.0))), ORIGINAL):
        assert records and {step for step, _ in records} == {0, 1}, records
        first = [record for step, record in records if step == 1][:2]
        assert [(r["name"], r["origin"]) for r in first] == \
            [("Functional.exp.0.forward", True), ("Functional.masked_fill.0.forward", False)], records


def test_a_numpy_scalar_overflowed_to_positive_infinity_is_no_mask(tmp_path, monkeypatch):
    """A numpy scalar has a type of its own (``np.float64``, not ``float``):
    given as is, its +inf is no value written on purpose, and the fill is
    the origin. (Turned into a Python float it cannot be told from
    ``float("inf")``: docs/checks.md, what exact checks do not see.)"""
    with np.errstate(over="ignore"):
        for records in run_default_and_exact(tmp_path, monkeypatch,
                                             lambda d: _train(d, (4,), lambda: np.float64(1e308) * 10), ORIGINAL):
            assert records and (records[0][1]["name"], records[0][1]["origin"]) == \
                ("Functional.masked_fill.0.forward", True), records


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_an_overflow_beside_a_mask_is_not_passed_on_as_the_masks(tmp_path, monkeypatch, sign):
    """A review's finding: a float16 ``d + penalty`` overflowing at an
    unmasked place beside a +inf (or -inf) mask was passed on as the
    mask's own infinity, and the run gave an all-clear. An elementwise
    call's infinities where no by-design input had one are its own."""
    def scenario(debugger):
        fill = sign * float("inf")
        for step in range(2):
            dist = Tensor(np.full((1, 4), sign * (39675.0 if step == 1 else 1.0), np.float16))
            pen = Tensor(np.full((1, 4), sign * (40000.0 if step == 1 else 0.0), np.float16))
            debugger.start()
            masked = ops.masked_fill(dist, Tensor(np.array([[False, False, False, True]])), fill)
            total = masked + pen
            (total.min(axis=-1) if sign > 0 else total.max(axis=-1)).astype(ms.float32).sum()
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        assert records and (records[0][0], records[0][1]["name"], records[0][1]["origin"]) == \
            (1, "Tensor.__add__.0.forward", True), records


def test_a_positive_fill_assigned_into_a_parameter_is_recorded_after_its_maker(tmp_path, monkeypatch):
    """A review's finding: a +inf fill written into a Parameter with
    ``ops.assign`` (a judged result: the fill is the origin) had the
    assign recorded first, carried, its input "made outside the checked
    window", and the fill after it: the in-place call's copy of the value
    was not known as the maker's. The fill is the first record now, the
    assign carried after it. In the next step the Parameter holds step 0's
    +inf at ``start()``, and the assign's record says so."""
    def scenario(debugger):
        best = ms.Parameter(Tensor(np.zeros(4, np.float32)), name="best", requires_grad=False)
        for _ in range(2):
            debugger.start()
            filled = ops.masked_fill(Tensor(np.ones(4, np.float32)), Tensor(np.array([True, False, False, False])),
                                     float("inf"))
            ops.assign(best, filled)
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        names = [(r["name"], r["origin"]) for s, r in records if s == 0]
        assert names == [("Functional.masked_fill.0.forward", True), ("Functional.assign.0.forward", False)], records
        assert "made outside" not in (records[1][1].get("entered") or {}).get("message", ""), records
        later = [r for s, r in records if s == 1]
        assert later[0]["name"] == "Functional.assign.0.forward" and not later[0]["origin"], records
        assert later[0]["entered"]["message"].startswith("Parameter best already held inf/nan at start()"), later


def test_a_real_positive_infinity_assigned_is_not_taken_for_a_consumed_fill(tmp_path, monkeypatch):
    """A review's finding against the test above's fix, which first
    matched an in-place call's +inf copy to a fill by its values: a
    ``masked_fill(+inf)`` consumed by ``minimum``, then an ``exp`` that
    overflowed to the same values assigned into a Parameter, made the fill
    a second ORIGIN. Only the copy of the fill's very tensor is the
    fill's: ``exp`` is the one origin."""
    def scenario(debugger):
        best = ms.Parameter(Tensor(np.zeros(4, np.float32)), name="best", requires_grad=False)
        debugger.start()
        filled = ops.masked_fill(Tensor(np.ones(4, np.float32)), Tensor(np.array([True, False, False, False])),
                                 float("inf"))
        ops.minimum(filled, 5.0)
        ops.assign(best, ops.exp(Tensor(np.array([100.0, 0, 0, 0], np.float32))))
        debugger.stop()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        origins = [r["name"] for _, r in records if r["origin"]]
        assert origins == ["Functional.exp.0.forward"], records
        assert "Functional.masked_fill.0.forward" not in [r["name"] for _, r in records], records
