"""A -inf mask returned as an auxiliary output (a defect left open):
``value_and_grad(fn, None, weights, has_aux=True)`` where ``fn`` returns
``(loss, logits)`` and the logits hold a class masked with -inf before the
log-softmax, read on the host for an accuracy metric. Loss and gradients
are finite, yet the mask's maker was an ORIGIN in every clean step, at L1
(``masked_fill``) and L0 (the Cell that masks); auto checks wrote an
``outside`` record in every watched step. The -inf leaves the computation
beside a finite loss and finite gradients: no overflow, at L1, where the
maker is a call that writes -inf on purpose. At L0 any Cell returning
-inf only is a maker, and a mask returned so looks like a float16 head
overflowing to -inf (a review's finding): recorded. A real overflow in
the auxiliary output (a float16 head at unmasked places) is recorded at
both levels."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
#: class 2 is masked out in every row
VALID = np.array([[True, True, False]] * 2)
LABELS = np.array([[0], [1]], np.int32)


class _MaskHead(nn.Cell):
    """Logits with the invalid classes set to -inf."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3, weight_init="ones", bias_init="zeros")

    def construct(self, x, valid):
        return ops.masked_fill(self.fc(x), ~valid, float("-inf"))


class _Classifier(nn.Cell):
    """A body, then the masking head as a sub-Cell (at L0 the head is the maker)."""

    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Dense(4, 4), _MaskHead()

    def construct(self, x, valid):
        return self.head(ops.relu(self.body(x)), valid)


def _train(debugger, net, fn, inputs):
    """``fn(x, valid) -> (loss, logits)`` differentiated with ``has_aux``;
    the logits read on the host for an accuracy, one window a step."""
    optimizer = nn.SGD(net.trainable_params(), 0.01)
    grad_fn = ms.value_and_grad(fn, None, optimizer.parameters, has_aux=True)
    for x in inputs:
        debugger.start(net)
        (_, logits), grads = grad_fn(Tensor(x), Tensor(VALID))
        optimizer(grads)
        (logits.asnumpy().argmax(-1) == LABELS[:, 0]).mean()  # the metric
        debugger.stop()
        debugger.step()


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("model", [_MaskHead, _Classifier])
def test_a_mask_returned_as_an_auxiliary_output_is_no_overflow(tmp_path, monkeypatch, level, model):
    def scenario(debugger):
        net = model()

        def fn(x, valid):
            logits = net(x, valid)
            return -ops.gather_elements(ops.log_softmax(logits, -1), 1, Tensor(LABELS)).mean(), logits

        _train(debugger, net, fn, [np.full((2, 4), 0.5, np.float32)] * 3)

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level):
        _assert_judged(records, level, model)


def _assert_judged(records, level, model):
    """L1: nothing recorded. L0: the Cell that masks, an origin in step 0
    (nothing after it showed its -inf was used as a mask)."""
    if level == "L1":
        assert records == [], records
        return
    assert records and records[0][0] == 0 and records[0][1]["origin"] is True, records
    masker = "_MaskHead" if model is _MaskHead else "Cell.head._MaskHead"
    assert masker in records[0][1]["name"], records


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_mask_the_loss_never_takes_returned_as_an_auxiliary_output_is_no_overflow(tmp_path, monkeypatch, level):
    """The loss is computed from other values (features): the masked
    logits only leave the computation, for the metric."""
    def scenario(debugger):
        net = _Classifier()

        def fn(x, valid):
            return (net.body(x) ** 2).mean(), net(x, valid)

        _train(debugger, net, fn, [np.full((2, 4), 0.5, np.float32)] * 3)

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level):
        _assert_judged(records, level, _Classifier)


class _HalfHead(nn.Cell):
    """Features for the loss, and masked float16 logits for the metric only."""

    def __init__(self):
        super().__init__()
        self.body = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.head = nn.Dense(4, 3, weight_init="ones", bias_init="zeros").to_float(ms.float16)

    def construct(self, x, valid):
        return self.body(x), ops.masked_fill(self.head(x), ~valid, float("-inf"))


@pytest.mark.parametrize("level, sign", [("L1", 1.0), ("L1", -1.0), ("L0", 1.0), ("L0", -1.0)])
def test_a_real_overflow_in_an_auxiliary_output_is_recorded(tmp_path, monkeypatch, level, sign):
    """The float16 head overflows at the unmasked classes in step 1
    (4 * 30000 > 65504); the loss and the gradients stay finite. At L0 the
    -inf-only overflow (``sign`` -1) was taken for a mask and the run got
    an all-clear saying later code turned it finite (a review's finding)."""
    def scenario(debugger):
        net = _HalfHead()

        def fn(x, valid):
            features, logits = net(x, valid)
            return (features ** 2).mean(), logits

        _train(debugger, net, fn, [np.full((2, 4), value, np.float32) for value in (0.5, sign * 30000.0, 0.5)])

    name = "Primitive.MatMul.1.forward" if level == "L1" else "Cell.head.Dense.forward.0"
    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level):
        if level == "L0":  # the mask made in the model's own construct is recorded in every step (above)
            assert {step for step, _ in records} == {0, 1, 2}, records
            records = [record for record in records if record[0] == 1]
        assert records and {step for step, _ in records} == {1}, records
        assert (records[0][1]["name"], records[0][1]["origin"]) == (name, True), records
