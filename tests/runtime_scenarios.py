"""Training loops the way users write them, shared by the runtime tests and
the runtime cases under ``tests/data/runtime_cases`` (whose ``run.py``
calls :func:`run_scenario`): gradient accumulation, ``Model.train`` with the
step callback, a ``TrainOneStepCell`` loop, float16 with
``mindspore.amp.DynamicLossScaler``, dropout with BatchNorm, and AMP O2
whose float32 loss overflows outside the model (issue 26).

Each scenario trains ``steps`` steps under ``debugger`` (started with the
net at L0) and overflows in a later step than the first, except
``loss_scale`` (its first steps overflow until the scale is small enough);
it returns the losses and the Parameters as numpy arrays, for bit-identity
checks.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops


class Boom(nn.Cell):
    """``x * exp(x * scale)``: the identity while ``scale`` is 0, an
    overflow in ``exp`` once it is large."""

    def __init__(self):
        super().__init__()
        self.scale = 0.0

    def construct(self, x):
        return x * ops.exp(x * self.scale)


def _params(net: Any) -> list:
    return [p.asnumpy().copy() for p in net.get_parameters()]


def _window(debugger: Any, level: str, net: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    """(open, close) of one checked step, doing nothing without a debugger."""
    if debugger is None:
        return (lambda: None), (lambda: None)

    def open_() -> None:
        debugger.start(net) if level == "L0" else debugger.start()

    def close() -> None:
        debugger.stop()
        debugger.step()

    return open_, close


def accumulation(debugger: Any = None, level: str = "L1", steps: int = 2, micro: int = 4, bad: int = 2) -> tuple:
    """Gradients of ``micro`` batches summed, then one SGD step; in the last
    step micro batch ``bad`` holds inf (a bad sample). Exact checks count
    the calls of the micro batches before it: the first record is the
    third batch's first ``MatMul`` (L1) or ``Dense`` call (L0)."""
    ms.set_seed(11)
    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 1)])
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    grad_fn = ms.value_and_grad(lambda x: (net(x) ** 2).mean(), None, optimizer.parameters)
    rng = np.random.default_rng(3)
    opened, closed = _window(debugger, level, net)
    losses = []
    for step in range(steps):
        opened()
        total = None
        for m in range(micro):
            x = rng.normal(size=(2, 4)).astype(np.float32)
            if step == steps - 1 and m == bad:
                x[0, 1] = np.inf
            loss, grads = grad_fn(Tensor(x))
            total = grads if total is None else tuple(a + g for a, g in zip(total, grads))
            losses.append(loss.asnumpy())
        optimizer(total)
        closed()
    return losses, _params(net)


def _classifier(dropout: bool = False) -> Any:
    cells = [nn.Dense(4, 16), nn.BatchNorm1d(16), nn.ReLU()]
    if dropout:
        cells.append(nn.Dropout(p=0.3))
    return nn.SequentialCell(cells + [nn.Dense(16, 3)])


def _batches(count: int, bad_at: Optional[int]) -> list:
    rng = np.random.default_rng(5)
    out = []
    for i in range(count):
        x = rng.normal(size=(6, 4)).astype(np.float32)
        if i == bad_at:
            x[2, 3] = np.inf
        out.append((x, rng.integers(0, 3, size=(6,)).astype(np.int32)))
    return out


def model_train(debugger: Any = None, level: str = "L1", steps: int = 3) -> tuple:
    """``Model.train`` (no dataset sink) with ``OverflowCheckCallback``
    around each step; the last batch holds inf."""
    import mindspore.dataset as ds
    from mindspore.train import Model

    ms.set_seed(7)
    net = _classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    batches = _batches(steps, bad_at=steps - 1)
    dataset = ds.NumpySlicesDataset({"x": np.stack([b[0] for b in batches]),
                                     "y": np.stack([b[1] for b in batches])}, shuffle=False)
    callbacks = []
    if debugger is not None:
        from probe_runtime import OverflowCheckCallback

        callbacks.append(OverflowCheckCallback(debugger, model=net))
    Model(net, loss_fn, optimizer).train(1, dataset, callbacks=callbacks, dataset_sink_mode=False)
    if debugger is not None:
        debugger.stop()
    return [], _params(net)


def train_one_step(debugger: Any = None, level: str = "L1", steps: int = 3, dropout: bool = False) -> tuple:
    """A ``TrainOneStepCell(WithLossCell(net, loss), optimizer)`` loop; the
    last batch holds inf. ``dropout``: the net has ``nn.Dropout`` after its
    BatchNorm (random masks and moving statistics both change per step)."""
    ms.set_seed(9)
    net = _classifier(dropout)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Adam(net.trainable_params(), learning_rate=0.01)
    step_cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    step_cell.set_train()
    opened, closed = _window(debugger, level, net)
    losses = []
    for x, y in _batches(steps, bad_at=steps - 1):
        opened()
        losses.append(step_cell(Tensor(x), Tensor(y)).asnumpy())
        closed()
    return losses, _params(net)


def dropout_boom(debugger: Any = None, level: str = "L1", steps: int = 3, overflow: bool = True) -> tuple:
    """``value_and_grad`` over a net with BatchNorm, ``nn.Dropout``, a
    functional ``ops.dropout`` and ``Boom``, Adam; in the last step (with
    ``overflow``) ``Boom``'s ``exp`` overflows."""
    ms.set_seed(13)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 8)
            self.bn = nn.BatchNorm1d(8)
            self.drop = nn.Dropout(p=0.5)
            self.boom = Boom()
            self.out = nn.Dense(8, 1)

        def construct(self, x):
            return self.out(self.boom(ops.dropout(self.drop(self.bn(self.fc(x))), p=0.3)))

    net = Net()
    net.set_train()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=0.01)
    grad_fn = ms.value_and_grad(lambda x: (net(x) ** 2).mean(), None, optimizer.parameters)
    rng = np.random.default_rng(1)
    opened, closed = _window(debugger, level, net)
    losses = []
    for step in range(steps):
        net.boom.scale = 1.0e4 if overflow and step == steps - 1 else 0.0
        opened()
        loss, grads = grad_fn(Tensor(rng.normal(size=(6, 4)).astype(np.float32)))
        optimizer(grads)
        closed()
        losses.append(loss.asnumpy())
    return losses, _params(net)


def loss_scale(debugger: Any = None, level: str = "L1", steps: int = 4) -> tuple:
    """A float16 MLP trained with ``mindspore.amp.DynamicLossScaler``
    (scale 2**16, halved after each overflow): the scaled gradients
    overflow float16 in the first steps, which are skipped, until the
    scale is small enough."""
    from mindspore.amp import DynamicLossScaler, all_finite

    ms.set_seed(17)
    net = nn.SequentialCell([nn.Dense(8, 32), nn.ReLU(), nn.Dense(32, 1)])
    net.to_float(ms.float16)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    scaler = DynamicLossScaler(scale_value=2.0 ** 16, scale_factor=4, scale_window=1000)

    def forward(x, y):
        loss = ((net(x).astype(ms.float32) - y) ** 2).mean()
        return scaler.scale(loss)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    rng = np.random.default_rng(2)
    opened, closed = _window(debugger, level, net)
    losses = []
    for _ in range(steps):
        x = Tensor((rng.normal(size=(16, 8)) * 30).astype(np.float16))
        y = Tensor(rng.normal(size=(16, 1)).astype(np.float32))
        opened()
        loss, grads = grad_fn(x, y)
        grads = scaler.unscale(grads)
        finite = all_finite(grads)
        scaler.adjust(finite)
        if bool(finite.asnumpy()):
            optimizer(grads)
        closed()
        losses.append(loss.asnumpy())
    return losses, _params(net)


def amp_o2_loss(debugger: Any = None, level: str = "L0", steps: int = 2) -> tuple:
    """AMP O2 (``amp_level="O2"``: float16 layers): every layer output is
    finite, but in the last step the float32
    ``SparseSoftmaxCrossEntropyWithLogits`` loss is inf (the label's
    probability underflows). At L0 with ``start(net)`` the loss Cell is
    outside the model."""
    ms.set_seed(19)
    net = ms.amp.auto_mixed_precision(nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 3)]), "O2")
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.SGD(net.trainable_params(), learning_rate=1e-6)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x).astype(ms.float32), y), None, optimizer.parameters)
    opened, closed = _window(debugger, level, net)
    losses = []
    for step in range(steps):
        scale = 3000.0 if step == steps - 1 else 1.0
        x = Tensor(np.array([[1.0, -1.0, 0.6667, -0.3333]], np.float32) * scale)
        opened()
        loss, grads = grad_fn(x, Tensor(np.array([1], np.int32)))
        optimizer(grads)
        closed()
        losses.append(loss.asnumpy())
    return losses, _params(net)


#: scenario name -> function (debugger, level, ...) -> (losses, Parameters)
SCENARIOS = {
    "accumulation": accumulation,
    "model_train": model_train,
    "train_one_step": train_one_step,
    "dropout_boom": dropout_boom,
    "loss_scale": loss_scale,
    "amp_o2_loss": amp_o2_loss,
}


def run_scenario(config_path: str, name: str) -> None:
    """A runtime case: scenario ``name`` under a debugger made from
    ``config_path`` (its level decides how it is started)."""
    import json

    from probe_runtime import PrecisionDebugger

    ms.set_context(mode=ms.PYNATIVE_MODE)
    with open(config_path, encoding="utf-8") as f:
        level = json.load(f).get("level", "L1")
    SCENARIOS[name](PrecisionDebugger(config_path=config_path), level)
