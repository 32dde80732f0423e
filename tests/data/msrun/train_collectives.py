"""Multi-rank jobs for tests/runtime/test_msrun_collectives.py, launched by msrun on CPU.

Each worker joins the job with mindspore.communication.init() (CPU: MCCL over
loopback) and runs the scenarios named on the command line one after the
other, each with its own PrecisionDebugger built from ``cfg_<scenario>.json``
in the current folder (else from PROBE_CONFIG, as ``probe run`` sets it), for two steps (0 and 1); what overflows does so in
step 1, on the rank named below (rank 1 of 2; with 4 ranks rank 2).

  dp        data parallel: rank 1's batch makes exp overflow; ops.AllReduce
            averages the gradients by hand (rank 0 receives them)
  reducer   data parallel with nn.DistributedGradReducer; rank 1's loss is 0/0
  tp        tensor parallel in float16: a row-parallel layer whose finite
            partial sums (40000 on each rank) overflow in the AllReduce
  allgather ops.AllGather carries rank 1's inf
  inplace   mint.distributed.all_reduce(x) (in place) carries rank 1's inf
  backward  the backward of an AllReduce carries rank 1's NaN gradient (sqrt(y * 0)
            there: finite forward, NaN backward) to rank 0
  tpgroups  4 ranks: two tensor-parallel groups of 2 (tp0 = 0-1, tp1 = 2-3);
            the float16 sum of tp1 overflows, then a world AllReduce carries it
            to ranks 0-1

A scenario name is one of these, optionally followed by ``-`` and anything
(``dp-rank0``: the scenario ``dp`` with the config ``cfg_dp-rank0.json``);
the config decides the level.
"""
import os
import sys

import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, nn, ops
from mindspore.communication import create_group, get_group_size, get_rank, init

from probe_runtime import PrecisionDebugger

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
init()
RANK, SIZE = get_rank(), get_group_size()
BAD = SIZE // 2  #: the rank whose batch overflows


class Expo(nn.Cell):
    def construct(self, x):
        return ops.exp(x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.expo = Expo()
        self.fc = nn.Dense(4, 2, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc(self.expo(x))


def batch(step, bad_rank=BAD):
    big = 100.0 if (step, RANK) == (1, bad_rank) else 0.5
    return Tensor(np.full((2, 4), big, np.float32)), Tensor(np.zeros((2, 2), np.float32))


def debugger_for(name):
    """The scenario's debugger (from cfg_<name>.json, else PROBE_CONFIG as
    `probe run` sets it) and its level."""
    path = f"cfg_{name}.json"
    debugger = PrecisionDebugger(config_path=path if os.path.exists(path) else None)
    return debugger, debugger.level


def dp(name, bad_rank=BAD):
    debugger, level = debugger_for(name)
    net = Net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    loss_fn = nn.MSELoss()
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)
    allreduce = ops.AllReduce()
    for step in range(2):
        debugger.start(net) if level == "L0" else debugger.start()
        x, y = batch(step, bad_rank)
        loss, grads = grad_fn(x, y)
        grads = tuple(allreduce(g) / SIZE for g in grads)  # averaged by hand
        optimizer(grads)
        debugger.stop()
        debugger.step()


def reducer(name):
    debugger, level = debugger_for(name)
    net = Net()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    loss_fn = nn.MSELoss()
    grad_reducer = nn.DistributedGradReducer(optimizer.parameters, mean=True, degree=SIZE)

    def forward(x, y, scale):
        return loss_fn(net(x), y) * scale / scale

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    for step in range(2):
        debugger.start(net) if level == "L0" else debugger.start()
        x, y = batch(step, bad_rank=-1)
        scale = Tensor(0.0 if (step, RANK) == (1, BAD) else 1.0, ms.float32)  # step 1: loss 0/0 there
        loss, grads = grad_fn(x, y, scale)
        grads = grad_reducer(grads)
        optimizer(grads)
        debugger.stop()
        debugger.step()


class RowParallel(nn.Cell):
    """y = AllReduce(x_r * w_r): each rank holds a slice of the reduction."""

    def __init__(self, group=None):
        super().__init__()
        self.weight = ms.Parameter(Tensor(np.full((4,), 200.0, np.float16)), name="weight")
        self.allreduce = ops.AllReduce(group=group) if group else ops.AllReduce()

    def construct(self, x):
        return self.allreduce(x * self.weight)


class TpNet(nn.Cell):
    def __init__(self, group=None):
        super().__init__()
        self.row = RowParallel(group)

    def construct(self, x):
        return self.row(x) + 1.0


def tp(name):
    debugger, level = debugger_for(name)
    net = TpNet()
    for step in range(2):
        debugger.start(net) if level == "L0" else debugger.start()
        value = 200.0 if step == 1 else 1.0  # 200 * 200 = 40000 per rank: finite; summed over 2 ranks: inf
        out = net(Tensor(np.full((4,), value, np.float16)))
        debugger.stop()
        debugger.step()
    return out


def tpgroups(name):
    group = f"tp{RANK // 2}"
    create_group(group, [2 * (RANK // 2), 2 * (RANK // 2) + 1])
    try:  # MindSpore 2.7.0's CPU AllReduce runs on the world group only
        ops.AllReduce(group=group)(Tensor(np.ones(1, np.float32))).asnumpy()
    except RuntimeError as err:
        print(f"rank {RANK}: {name} skipped: MindSpore {ms.__version__}: {str(err).strip().splitlines()[0]}",
              flush=True)
        return None
    debugger, level = debugger_for(name)
    net = TpNet(group)
    world = ops.AllReduce()
    for step in range(2):
        debugger.start(net) if level == "L0" else debugger.start()
        value = 200.0 if (step == 1 and RANK >= 2) else 1.0  # only group tp1 overflows
        out = net(Tensor(np.full((4,), value, np.float16)))
        total = world(out.astype(ms.float32))
        debugger.stop()
        debugger.step()
    return total


def backward(name):
    debugger, level = debugger_for(name)
    net = TpNet()
    for step in range(2):
        debugger.start(net) if level == "L0" else debugger.start()
        zero = (step, RANK) == (1, BAD)

        def forward(x):
            return ops.sqrt(net(x) * (0.0 if zero else 1.0)).sum()

        grads = ms.grad(forward)(Tensor(np.full((4,), 0.5, np.float16)))
        debugger.stop()
        debugger.step()
    return grads


def allgather(name):
    debugger, _ = debugger_for(name)
    gather = ops.AllGather()
    for step in range(2):
        debugger.start()
        x, _ = batch(step)
        h = ops.exp(x)  # allgather: rank 1 overflows here
        everything = gather(h)
        total = everything.sum()
        debugger.stop()
        debugger.step()
    return total


def inplace(name):
    debugger, _ = debugger_for(name)
    for step in range(2):
        debugger.start()
        x, _ = batch(step)
        h = ops.exp(x)  # inplace: rank 1 overflows here
        result = mint.distributed.all_reduce(h)  # in place: h holds the sum; returns None
        assert result is None
        total = h.mean()
        debugger.stop()
        debugger.step()
    return total


SCENARIOS = {"dp": dp, "reducer": reducer, "tp": tp, "tpgroups": tpgroups, "allgather": allgather, "backward": backward,
             "inplace": inplace}

for scenario in sys.argv[1:]:
    SCENARIOS[scenario.split("-")[0]](scenario)
    print(f"rank {RANK}: {scenario} done", flush=True)
print(f"worker rank {RANK} of {SIZE} done", flush=True)
