"""-inf written by a constant pad, and a +inf fill negated (a fresh user's
findings): ``ops.pad(s, (1, 1), value=-inf)`` before a max over windows,
``nn.ConstantPad1d((1, 1), -inf)``, and a causal mask written as
``triu(-full(+inf), 1)`` before a softmax were ORIGINs in every clean step
at L1: ``pad`` was only known to pass a -inf on, not to write one it is
given, and a negation was not known to pass one on. A pad is a maker now,
as ``masked_fill`` is (an origin once its -inf reaches the result), and a
negation passes a by-design infinity on."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
MINUS_INF = float("-inf")


class Net(nn.Cell):
    def __init__(self, case):
        super().__init__()
        self.fc = nn.Dense(4, 4)
        self.case = case
        self.pad = nn.ConstantPad1d((1, 1), MINUS_INF)

    def construct(self, x):
        s = self.fc(x)
        if self.case == "pad":
            return ops.amax(ops.pad(s, (1, 1), mode="constant", value=MINUS_INF), axis=-1).sum()
        if self.case == "ConstantPad1d":
            return ops.amax(self.pad(s), axis=-1).sum()
        if self.case == "negated full":
            mask = ops.triu(-ops.full((4, 4), float("inf"), dtype=ms.float32), diagonal=1)
            return ops.softmax(s + mask, axis=-1).sum()
        # the padding reaches the loss: a sum over the padded row is -inf
        return ops.pad(s, (1, 1), mode="constant", value=MINUS_INF).sum()


def _scenario(case):
    def run(debugger):
        net = Net(case)
        optimizer = nn.SGD(net.trainable_params(), 0.01)
        grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
        x = Tensor(np.random.default_rng(0).normal(size=(1, 4, 4)).astype(np.float32))
        for _ in range(2):
            debugger.start(net)
            _, grads = grad_fn(x)
            optimizer(grads)
            debugger.stop()
            debugger.step()
    return run


@pytest.mark.parametrize("case", ["pad", "ConstantPad1d", "negated full"])
def test_a_minus_inf_padding_or_negated_fill_a_later_call_consumes_is_no_overflow(tmp_path, monkeypatch, case):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(case), ORIGINAL)
    assert default == exact == [], (default, exact)


def test_a_padding_that_reaches_the_loss_names_the_pad(tmp_path, monkeypatch):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario("reaches the loss"), ORIGINAL)
    assert default == exact, (default, exact)
    origins = [(step, r["name"]) for step, r in default if r["origin"]]
    assert origins and origins[0] == (0, "Functional.pad.0.forward"), default
