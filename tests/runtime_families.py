"""Model families the detector was not tuned on, shared by
``runtime/check/test_runtime_truth.py`` and the runtime cases under
``tests/data/runtime_cases`` (whose ``run.py`` calls :func:`run_case`).

Each family trains with SGD; the last step overflows one of three ways
(``kind``): ``call`` (a known call, ``Boom``'s ``exp``), ``data`` (the batch
holds inf) or ``weight`` (a Parameter holds inf before ``start()``).
"""
from __future__ import annotations

import math
from typing import Any, Optional

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops
from runtime_support import sgd_step


class Boom(nn.Cell):
    """``x * exp(x * scale)``: the identity while ``scale`` is 0, an
    overflow in ``exp`` (the known call) once it is large."""

    def __init__(self):
        super().__init__()
        self.scale = 0.0

    def construct(self, x):
        return x * ops.exp(x * self.scale)


class GruNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8, batch_first=True)
        self.boom = Boom()
        self.fc = nn.Dense(8, 2)

    def construct(self, x):
        out, _ = self.rnn(x)
        return self.fc(self.boom(out[:, -1, :]))


class LstmBatchNormNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)
        self.bn = nn.BatchNorm1d(8)
        self.boom = Boom()
        self.fc = nn.Dense(8, 2)

    def construct(self, x):
        out, _ = self.lstm(x)
        return self.fc(self.boom(self.bn(out[:, -1, :])))


class AttentionNet(nn.Cell):
    """Embedding plus float position features (the data), one head of
    self-attention, mean pooling, a Dense head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.query = nn.Dense(8, 8)
        self.key = nn.Dense(8, 8)
        self.value = nn.Dense(8, 8)
        self.boom = Boom()
        self.fc = nn.Dense(8, 2)

    def construct(self, ids, position):
        h = self.embed(ids) + position
        scores = ops.matmul(self.query(h), ops.transpose(self.key(h), (0, 2, 1))) / math.sqrt(8.0)
        mixed = ops.matmul(ops.softmax(scores, -1), self.value(h))
        return self.fc(self.boom(mixed.mean(1)))


class TiedNet(nn.Cell):
    """A language-model head whose output projection is the embedding
    table itself (weight tying)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.mix = nn.Dense(8, 8, activation="tanh")
        self.boom = Boom()

    def construct(self, ids, position):
        h = self.boom(self.mix(self.embed(ids) + position))
        return ops.matmul(h, ops.transpose(self.embed.embedding_table, (1, 0)))


def _float_batch(rng, bad):
    x = rng.normal(size=(4, 5, 4)).astype(np.float32)
    if bad:
        x[1, 0, 2] = np.inf
    return (Tensor(x),)


def _token_batch(rng, bad):
    ids = rng.integers(0, 20, size=(4, 5)).astype(np.int32)
    position = (rng.normal(size=(4, 5, 8)) * 0.1).astype(np.float32)
    if bad:
        position[2, 1, 3] = np.inf
    return Tensor(ids), Tensor(position)


#: family -> (model class, batch maker, the Parameter made non-finite, its owner Cell's path)
FAMILIES = {
    "gru": (GruNet, _float_batch, "fc.weight", "fc"),
    "lstm_batchnorm": (LstmBatchNormNet, _float_batch, "bn.gamma", "bn"),
    "attention": (AttentionNet, _token_batch, "query.weight", "query"),
    "tied": (TiedNet, _token_batch, "embed.embedding_table", "embed"),
}


def train(family: str, kind: Optional[str], debugger: Any = None, level: str = "L1", steps: int = 2,
          optimizer_api: str = "nn") -> tuple:
    """(losses, gradients) of ``steps`` SGD steps of ``family`` (a key of
    :data:`FAMILIES`) under ``debugger`` (started with the net at L0); the
    last step overflows the ``kind`` way (``None``: never). ``optimizer_api``:
    ``nn`` (``nn.SGD``) or ``mint`` (``mindspore.mint.optim.SGD``)."""
    model_class, batch, weight_name, _ = FAMILIES[family]
    ms.set_seed(5)
    net = model_class()
    params = {p.name: p for p in net.get_parameters()}
    if optimizer_api == "mint":
        from mindspore import mint

        optimizer = mint.optim.SGD(net.trainable_params(), lr=0.05)
    else:
        optimizer = nn.SGD(net.trainable_params(), learning_rate=0.05)

    def loss_fn(*inputs):
        return (net(*inputs) ** 2).mean()

    grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
    rng = np.random.default_rng(7)
    losses, grads_seen = [], []
    try:
        for step in range(steps):
            bad = kind is not None and step == steps - 1
            inputs = batch(rng, bad and kind == "data")
            net.boom.scale = 1.0e4 if bad and kind == "call" else 0.0
            if bad and kind == "weight":
                value = params[weight_name].asnumpy().copy()
                value.reshape(-1)[1] = np.inf
                params[weight_name].set_data(Tensor(value))
            sgd_step(debugger, level, net, grad_fn, optimizer, inputs, losses, grads_seen)
    finally:
        if debugger:
            debugger.stop()
    return losses, grads_seen


def run_case(config_path: str, family: str, kind: str, steps: int = 2) -> None:
    """A runtime case: ``family`` trained ``steps`` steps under a debugger
    made from ``config_path`` (its level decides how it is started)."""
    import json

    from probe_runtime import PrecisionDebugger

    ms.set_context(mode=ms.PYNATIVE_MODE)
    with open(config_path, encoding="utf-8") as f:
        level = json.load(f).get("level", "L1")
    train(family, kind, PrecisionDebugger(config_path=config_path), level, steps)
