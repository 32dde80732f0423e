"""How an L0 (Cell) entry is judged: Python floats a Cell takes or
returns, and a Cell whose only non-finite inputs are -inf.

Each scenario is a small model written here from a tester's description.
It runs under the default checks and under ``checks="exact"`` in fresh
dump folders (``run_default_and_exact``); both must give the same first
record, and that record must be the true one.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Parameter, Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def _run_both(tmp_path, monkeypatch, scenario, level="L0"):
    """(records under the default checks, records under exact checks),
    each a list of (step, overflow.json record)."""
    return run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level)


def _first(records):
    assert records, "nothing was recorded"
    step, record = records[0]
    return step, record["name"], record["origin"]


def _loop(debugger, model, steps, body):
    for step in range(steps):
        debugger.start(model)
        body(step)
        debugger.stop()
        debugger.step()


# -- Python floats between Cells ------------------------------------------------------------------
class Peak(nn.Cell):
    """Returns its input and, as a Python float (or numpy scalar), the
    largest value of ``exp(x * gain)``: inf once ``gain`` is large."""

    def __init__(self, numpy_scalar=False):
        super().__init__()
        self.numpy_scalar = numpy_scalar

    def construct(self, x, gain):
        peak = ops.exp(x * gain).max().asnumpy()
        return x, (np.float32(peak) if self.numpy_scalar else float(peak))


class Times(nn.Cell):
    """Multiplies a tensor by a number (a numpy scalar as a Python float:
    MindSpore 2.7's ``Mul`` takes no numpy scalar)."""

    def construct(self, x, factor):
        return x * float(factor)


class PeakTimes(nn.Cell):
    def __init__(self, numpy_scalar=False):
        super().__init__()
        self.peak = Peak(numpy_scalar)
        self.times = Times()

    def construct(self, x, gain):
        h, factor = self.peak(x, gain)
        return self.times(h, factor)


@pytest.mark.parametrize("numpy_scalar", [False, True], ids=["float", "numpy.float32"])
def test_a_cell_returning_an_inf_python_float_is_the_origin(tmp_path, monkeypatch, numpy_scalar):
    """Forward-only loop: in step 1 ``Peak``'s second output, a Python
    float (or numpy float32), is inf; ``Times`` multiplies by it. ``Peak``
    is the origin, ``Times`` carries it (it used to be named the origin:
    floats were not read)."""
    def scenario(debugger):
        net = PeakTimes(numpy_scalar)

        def body(step):
            net(Tensor(np.full((3,), 0.25, np.float32)), Tensor(np.float32(2000.0 if step == 1 else 1.0)))
        _loop(debugger, net, 3, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (1, "Cell.peak.Peak.forward.0", True), exact
    assert [(s, r["name"], r["origin"]) for s, r in exact] == [
        (1, "Cell.peak.Peak.forward.0", True), (1, "Cell.times.Times.forward.0", False)]
    entered = exact[0][1]["entered"]  # its tensors are finite: the record says which number is not
    assert entered["source"] == "own-construct" and "output[1]=inf" in entered["message"], entered


class Floor(nn.Cell):
    """``max(x, low)`` with ``low`` a Python number."""

    def construct(self, x, low):
        return ops.clamp(x, min=low) * 2


class FloorNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.floor = Floor()
        self.times = Times()

    def construct(self, x, low):
        return self.times(self.floor(x, low), 0.5)


def test_a_python_float_input_follows_the_cell_rules(tmp_path, monkeypatch):
    """A -inf Python float a Cell takes and turns into finite values is
    consumed (no record, steps 0 and 2); a NaN one (step 1) makes the
    Cell's inputs non-finite: it carries the NaN, it does not start it,
    and neither does the model that handed it on: the NaN came in from
    outside, through the Cell's second argument."""
    def scenario(debugger):
        net = FloorNet()

        def body(step):
            net(Tensor(np.full((3,), 0.25, np.float32)), float("nan") if step == 1 else float("-inf"))
        _loop(debugger, net, 3, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (1, "Cell.floor.Floor.forward.0", False), exact
    assert {s for s, _ in exact} == {1} and not [r for _, r in exact if r["origin"]], exact
    entered = exact[0][1]["entered"]
    assert (entered["source"], entered["input"]) == ("outside", "input_args[1]"), entered


def test_a_python_float_at_l1_is_still_an_argument(tmp_path, monkeypatch):
    """L1 is unchanged: the -inf value given to ``masked_fill`` is an
    argument, and the mask a softmax consumes is by design (no record)."""
    def scenario(debugger):
        scores = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
        keep = Tensor(np.tril(np.ones((3, 4), np.bool_)))

        for _ in range(2):
            debugger.start()
            ops.softmax(ops.masked_fill(scores, ~keep, float("-inf")), -1)
            debugger.stop()
            debugger.step()

    default, exact = _run_both(tmp_path, monkeypatch, scenario, level="L1")
    assert default == exact == [], exact


# -- a Cell given a -inf mask -----------------------------------------------------------------------
class Head(nn.Cell):
    """One float16 attention head with all-ones projections of width 4:
    the score of two rows of value v is 64 * v * v, past float16's
    largest value (65504) once v > 32; the mask is added to the scores."""

    def __init__(self, width=4):
        super().__init__()
        ones = np.ones((width, width), np.float16)
        self.wq = Parameter(Tensor(ones), name="wq")
        self.wk = Parameter(Tensor(ones), name="wk")
        self.wv = Parameter(Tensor(ones), name="wv")

    def construct(self, x, mask=None):
        q, k, v = ops.matmul(x, self.wq), ops.matmul(x, self.wk), ops.matmul(x, self.wv)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) + mask
        weights = ops.softmax(scores.astype(ms.float32), -1).astype(ms.float16)
        return ops.matmul(weights, v) * 0.01


class Stack(nn.Cell):
    def __init__(self):
        super().__init__()
        self.blocks = nn.CellList([Head(), Head()])

    def construct(self, x, mask):
        for block in self.blocks:
            x = x + block(x, mask=mask)
        return x


CAUSAL = np.triu(np.full((3, 3), -np.inf, np.float32), 1).astype(np.float16)


def test_a_cell_given_a_minus_inf_mask_that_makes_nan_is_the_origin(tmp_path, monkeypatch):
    """Steps 0, 1, 3: the softmax consumes the causal -inf mask (no
    record). Step 2: block 0's scores overflow float16 and its softmax
    returns NaN: block 0 is the origin (its only non-finite input is the
    -inf mask, by design), not a mask 'entered from outside'; block 1 and
    its NaN input carry it."""
    def scenario(debugger):
        net = Stack()
        mask = Tensor(CAUSAL)

        def body(step):
            net(Tensor(np.full((1, 3, 4), 40.0 if step == 2 else 0.01, np.float16)), mask)
        _loop(debugger, net, 4, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (2, "Cell.blocks.0.Head.forward.0", True), exact
    assert {s for s, _ in exact} == {2}, exact
    first = exact[0][1]
    assert first["entered"]["source"] == "own-construct", first["entered"]
    message = first["entered"]["message"]
    assert "input_kwargs.mask" in message and "-inf" in message and "L1" in message, message
    later = [(r["name"], r["origin"]) for _, r in exact[1:]]
    assert ("Cell.blocks.1.Head.forward.0", False) in later and not [o for _, o in later if o], later


class Relay(nn.Cell):
    """Hands the mask on, cast to float32 and back (-inf stays -inf)."""

    def construct(self, mask):
        return mask.astype(ms.float32).astype(ms.float16)


class Poison(nn.Cell):
    """Adds its second input to its first."""

    def construct(self, x, extra):
        return x + extra


class RelayNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.relay = Relay()
        self.poison = Poison()

    def construct(self, x, mask, extra):
        return self.poison(x, extra), self.relay(mask)


def test_minus_inf_carried_or_nan_given_stays_carried(tmp_path, monkeypatch):
    """A Cell given a -inf-only mask that returns -inf only (it carries
    the mask) is no origin; a Cell given a NaN input is no origin either,
    though its output is NaN."""
    def scenario(debugger):
        net = RelayNet()
        mask = Tensor(CAUSAL)

        def body(step):
            extra = np.zeros((3, 3), np.float16)
            if step == 1:
                extra[0, 0] = np.nan
            net(Tensor(np.ones((3, 3), np.float16)), mask, Tensor(extra))
        _loop(debugger, net, 2, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert [(s, r["name"], r["origin"]) for s, r in default] == [(s, r["name"], r["origin"]) for s, r in exact]
    assert not [r for _, r in exact if r["origin"]], exact
    assert (1, "Cell.poison.Poison.forward.0") in [(s, r["name"]) for s, r in exact], exact
