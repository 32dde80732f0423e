"""Graph-mode training scripts for the L2 tests (run as a subprocess).

    python l2_scenarios.py SCENARIO CONFIG_OR_NONE OUT.json [STEPS]

Scenarios (each overflows at step 3 only, from its data, unless "clean"):
``exp`` (ops.exp of a large activation), ``fp16`` (a float16 Dense whose
MatMul result exceeds float16), ``log0`` (log of 0 in the loss),
``update`` (an optimizer update that goes inf), ``clean`` (no overflow),
``model`` (``Model.train`` with the callback, the ``exp`` network),
``jit`` (PyNative loop, a ``@mindspore.jit`` helper in the loss: log of 0),
``jitstep`` (PyNative, a whole ``@mindspore.jit`` training step with its
optimizer: log of 0 in the loss), ``graphjit`` (the same functional step in
GRAPH_MODE, which level L2 does not see: no Cell is called from Python),
``twocells`` (two Cells compiled apart, ``Prep`` then ``Score``, each with
a ``Mul`` named ``Default/Mul-op0`` in its own graph; Score's overflows),
``loop`` (a forward Cell whose graph ``while`` loop multiplies by 10 six
times: its 4th multiplication passes float32's maximum), ``mask`` (a
forward Cell given a -inf attention mask, which a softmax consumes, and
whose ``(x * 1e37).sum()`` passes float32's maximum), ``shared`` (the
``update`` network trained with SGD, and the network itself called after
each step, as an evaluation sharing its weight; before step 5 the weight
is set back to 1 and step 5 overflows again).
With CONFIG ``none`` no debugger is created (the reference run). OUT gets
the losses and a digest of the final Parameters.
"""
from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

import mindspore as ms
from mindspore import nn, ops

SCENARIO, CONFIG, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 5
BAD_STEP = 3
ms.set_context(mode=ms.PYNATIVE_MODE if SCENARIO.startswith("jit") else ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(1)
debugger = None
if CONFIG != "none":
    from probe_runtime import PrecisionDebugger

    debugger = PrecisionDebugger(config_path=CONFIG)


class ExpNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 4, weight_init="ones")
        self.fc2 = nn.Dense(4, 1, weight_init="zeros")

    def construct(self, x):
        return self.fc2(ops.exp(self.fc1(x)))


class Half(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 4, weight_init="ones").to_float(ms.float16)
        self.fc2 = nn.Dense(4, 1, weight_init="zeros")

    def construct(self, x):
        return self.fc2(self.fc1(x).astype(ms.float32))


class LogLoss(nn.Cell):
    """-log(y * sigmoid-free score): log of 0 when the score is 0."""

    def construct(self, pred, label):
        return -ops.log(ops.abs(pred * label)).mean()


class MeanLoss(nn.Cell):
    def construct(self, pred, label):
        return (pred * label).mean()


def data(step):
    big = step == BAD_STEP
    if SCENARIO in ("exp", "model"):
        return np.full((2, 4), 30.0 if big else 0.1, np.float32), np.ones((2, 1), np.float32)
    if SCENARIO == "fp16":
        return np.full((2, 4), 2e4 if big else 0.5, np.float32), np.ones((2, 1), np.float32)
    if SCENARIO in ("log0", "jit", "jitstep", "graphjit"):
        return np.full((2, 4), 0.5, np.float32), np.full((2, 1), 0.0 if big else 1.0, np.float32)
    if SCENARIO in ("update", "shared"):  # the gradient (3e38) is finite, lr * it is not
        big = big or (SCENARIO == "shared" and step == BAD_STEP + 2)
        return np.full((1, 1), 3e38 if big else 1.0, np.float32), np.full((1, 1), 1.0 if big else 0.0, np.float32)
    return np.full((2, 4), 0.1 + 0.01 * step, np.float32), np.ones((2, 1), np.float32)


def build():
    if SCENARIO == "fp16":
        return Half(), nn.MSELoss()
    if SCENARIO in ("log0", "jit", "jitstep", "graphjit"):
        return nn.Dense(4, 1, weight_init="ones", bias_init="zeros"), LogLoss()
    if SCENARIO in ("update", "shared"):
        return nn.Dense(1, 1, weight_init="ones", has_bias=False), MeanLoss()
    return ExpNet(), nn.MSELoss()


net, loss_fn = build()
lr = 10.0 if SCENARIO in ("update", "shared") else 0.01
optimizer = nn.Momentum(net.trainable_params(), lr, 0.9)
losses = []

if SCENARIO == "model":
    from mindspore.dataset import GeneratorDataset
    from mindspore.train import Model

    from probe_runtime import OverflowCheckCallback

    dataset = GeneratorDataset([data(i) for i in range(STEPS)], ["x", "y"], shuffle=False)
    model = Model(net, loss_fn, optimizer)
    callbacks = [OverflowCheckCallback(debugger)] if debugger else []
    model.train(1, dataset, callbacks=callbacks, dataset_sink_mode=False)
elif SCENARIO == "jit":
    @ms.jit
    def scored_loss(pred, label):
        return -ops.log(ops.abs(label * pred)).mean()

    def forward(x, y):
        return scored_loss(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    for step in range(STEPS):
        x, y = (ms.Tensor(a) for a in data(step))
        if debugger:
            debugger.start(net)  # L0 checks the Cells of net; L1 ignores it
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
elif SCENARIO == "twocells":
    class Prep(nn.Cell):
        def construct(self, x, t):
            return x * t

    class Score(nn.Cell):
        def construct(self, y):
            z = y * y
            return z.sum()

    prep, score = Prep(), Score()
    for step in range(STEPS):
        x = ms.Tensor(np.full((2, 4), 1e20 if step == BAD_STEP else 1.0, np.float32))
        if debugger:
            debugger.start()
        loss = score(prep(x, ms.Tensor(np.ones((2, 4), np.float32))))
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
elif SCENARIO == "loop":
    class Loop(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")

        def construct(self, x, n):
            h = self.fc(x)
            i = ms.Tensor(0, ms.int32)
            while i < n:
                h = h * 10.0
                i = i + 1
            return h.sum()

    loop = Loop()
    for step in range(STEPS):
        x = ms.Tensor(np.full((2, 4), 1e34 if step == BAD_STEP else 1.0, np.float32))
        if debugger:
            debugger.start()
        loss = loop(x, ms.Tensor(6, ms.int32))
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
elif SCENARIO == "mask":
    class Masked(nn.Cell):
        def construct(self, x, mask):
            p = ops.softmax(x + mask, -1)
            s = (x * 1e37).sum()
            return p.sum() + s

    masked = Masked()
    mask = ms.Tensor(np.array([[0, -np.inf, 0, 0]] * 2, np.float32))
    for step in range(STEPS):
        x = ms.Tensor(np.full((2, 4), 10.0 if step == BAD_STEP else 1.0, np.float32))
        if debugger:
            debugger.start()
        loss = masked(x, mask)
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
elif SCENARIO == "shared":
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), nn.SGD(net.trainable_params(), lr))
    for step in range(STEPS):
        if step == BAD_STEP + 2:  # the user sets the weight back (unchecked), and the step overflows again
            ops.assign(net.weight, ms.Tensor(np.ones((1, 1), np.float32)))
        x, y = (ms.Tensor(a) for a in data(step))
        if debugger:
            debugger.start()
        loss = train(x, y)
        # an evaluation sharing the trained weight
        score = net(ms.Tensor(np.ones((1, 1), np.float32)))
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
elif SCENARIO in ("jitstep", "graphjit"):
    def step_forward(x, y):
        return loss_fn(net(x), y)

    step_grad = ms.value_and_grad(step_forward, None, optimizer.parameters)

    @ms.jit
    def train_step(x, y):
        loss, grads = step_grad(x, y)
        optimizer(grads)
        return loss

    for step in range(STEPS):
        x, y = (ms.Tensor(a) for a in data(step))
        if debugger:
            debugger.start(net)
        loss = train_step(x, y)
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))
else:
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    for step in range(STEPS):
        x, y = (ms.Tensor(a) for a in data(step))
        if debugger:
            debugger.start()
        loss = train(x, y)
        if debugger:
            debugger.stop()
            debugger.step()
        losses.append(float(loss.asnumpy()))

digest = hashlib.sha256()
for parameter in net.get_parameters():
    digest.update(parameter.name.encode() + parameter.asnumpy().tobytes())
with open(OUT, "w", encoding="utf-8") as f:
    json.dump({"losses": [repr(v) for v in losses], "parameters": digest.hexdigest()}, f)
