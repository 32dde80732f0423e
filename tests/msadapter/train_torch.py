"""PyTorch-style training on MindSpore (MSAdapter: mindnlp's mindtorch),
overflowing from a later step; the MSAdapter tests run it in their own
environment (tools/make-msadapter-env.sh), one case per process.

Environment variables:
    CASE: ``exp`` (float16 exp of a large value: inf), ``log0`` (log of 0:
        -inf), ``div0`` (0/0: nan) or ``none`` (nothing overflows).
    BAD_STEP: the first step that overflows (default 3); STEPS (default 5).
    LEVEL: ``L1`` or ``L0`` to run under probe_runtime's PrecisionDebugger
        (unset: no debugger at all); DUMP: its dump_path; CHECKS: ``exact``
        or ``auto``; CONFIG: a config.json instead of DUMP (LEVEL still
        overrides its level).

Prints ``step N loss <value> <its bytes in hex>`` per step and, last,
``params <sha256 of every weight's bytes>``, so two runs compare bit for bit.

On this layer ``loss.backward()`` leaves ``.grad`` None on CPU and
``torch.optim`` has no CPU kernel, so the step is
``torch.autograd.value_and_grad`` (which fills ``.grad``) and a
hand-written SGD update.
"""
import hashlib
import os

import numpy as np

import mindtorch  # noqa: F401  (after it, `import torch` loads mindtorch)
import torch
import torch.nn as nn
import torch.nn.functional as F

CASE = os.environ.get("CASE", "exp")
BAD_STEP = int(os.environ.get("BAD_STEP", "3"))
STEPS = int(os.environ.get("STEPS", "5"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x, bad):
        h = F.relu(self.fc1(x))
        if CASE == "exp":      # float16 exp of a large value: inf
            h = torch.exp(h.half() * (1 + 999 * bad)).float()
        elif CASE == "log0":   # log(0): -inf
            h = h + torch.log(h * 0 + 1 - bad)
        elif CASE == "div0":   # 0/0: nan
            h = h + (h * 0) / (h * 0 + 1 - bad)
        return self.fc2(h)


def make_debugger():
    level = os.environ.get("LEVEL")
    if not level:
        return None
    from probe_runtime import PrecisionDebugger

    checks = os.environ.get("CHECKS") or None
    if os.environ.get("CONFIG"):
        return PrecisionDebugger(config_path=os.environ["CONFIG"], level=level, checks=checks)
    return PrecisionDebugger(task="overflow_check", dump_path=os.path.abspath(os.environ["DUMP"]), level=level,
                             checks=checks)


def main():
    rs = np.random.RandomState(0)  # data and weights from numpy: the same in every run
    net = Net()
    params = list(net.parameters())
    with torch.no_grad():
        for p in params:
            p.copy_(torch.tensor((rs.randn(*p.shape) * 0.3).astype(np.float32)))
    x = torch.tensor(rs.randn(4, 8).astype(np.float32))
    y = torch.tensor([0, 1, 2, 3])

    def loss_fn(x, y, bad):
        return F.cross_entropy(net(x, bad), y)

    grad_fn = torch.autograd.value_and_grad(loss_fn, params)
    debugger = make_debugger()
    for step in range(STEPS):
        if debugger is not None:
            debugger.start(net if os.environ["LEVEL"] == "L0" else None)
        bad = torch.tensor(1.0 if step >= BAD_STEP else 0.0)
        loss = grad_fn(x, y, bad)
        with torch.no_grad():
            for p in params:
                p.copy_(p - 0.1 * p.grad)
                p.grad = None
        if debugger is not None:
            debugger.stop()
            debugger.step()
        print("step", step, "loss", float(loss), loss.asnumpy().tobytes().hex())
    print("params", hashlib.sha256(b"".join(p.asnumpy().tobytes() for p in params)).hexdigest())


if __name__ == "__main__":
    main()
