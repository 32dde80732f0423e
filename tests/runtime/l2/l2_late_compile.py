"""A graph-mode script that compiles its step before building the debugger
(MindSpore's dump config then comes too late): for the L2 tests.

    python l2_late_compile.py CONFIG
"""
from __future__ import annotations

import sys

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from probe_runtime import PrecisionDebugger

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 1, weight_init="ones")

    def construct(self, x):
        return self.fc(ops.exp(x))


net = Net()
train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.Momentum(net.trainable_params(), 0.01, 0.9))
y = ms.Tensor(np.ones((2, 1), np.float32))
train(ms.Tensor(np.ones((2, 4), np.float32)), y)  # compiled before the debugger
debugger = PrecisionDebugger(config_path=sys.argv[1])
for step in range(3):
    debugger.start()
    train(ms.Tensor(np.full((2, 4), 100.0 if step == 1 else 1.0, np.float32)), y)
    debugger.stop()
    debugger.step()
