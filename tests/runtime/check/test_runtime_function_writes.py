"""Functions that write their arguments in place: ``ops.batch_norm``.

``ops.batch_norm(x, running_mean, running_var, weight, bias, training=True)``
updates ``running_mean`` and ``running_var`` (CPU, MindSpore 2.7.0 and
2.10); a batch of one writes nan into ``running_var`` (the unbiased
variance of one sample) while its result stays finite. A custom Cell
holding the statistics as Parameters without gradient got "carried ...
Parameter rv held inf/nan when first used" from L1 (the call wrote it) and
"no overflow found" from L0 (a false all-clear). Each run is its own
process (a fresh dump folder, the default and the exact checks).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.mindspore
pytest.importorskip("mindspore")

SCRIPT = """\
import os
import numpy as np
import mindspore as ms
from mindspore import nn, ops, Tensor, Parameter
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE)
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4)
        self.rm = Parameter(Tensor(np.zeros(4, np.float32)), name="rm", requires_grad=False)
        self.rv = Parameter(Tensor(np.ones(4, np.float32)), name="rv", requires_grad=False)
        self.g = Parameter(Tensor(np.ones(4, np.float32)), name="g")
        self.b = Parameter(Tensor(np.zeros(4, np.float32)), name="b")
    def construct(self, x):
        return ops.batch_norm(self.fc(x), self.rm, self.rv, self.g, self.b, training=True)  # LINE_CALL
net = Net()
level = os.environ["LEVEL"]
d = PrecisionDebugger(task="overflow_check", dump_path=os.path.abspath("dump"), level=level,
                      checks=os.environ["CHECKS"])
grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
for step in range(3):
    x = Tensor(np.random.RandomState(step).randn(1 if step == 1 else 3, 4).astype(np.float32))
    d.start(net if level == "L0" else None)
    loss, grads = grad_fn(x)
    d.stop()
    d.step()
    print("step", step, "loss finite", bool(np.isfinite(loss.asnumpy())), "rv finite",
          bool(np.isfinite(net.rv.asnumpy()).all()))
"""


def run(tmp_path: Path, level: str, checks: str) -> tuple[list, Path, str]:
    script = tmp_path / "fbn.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBE_") and k != "MINDSPORE_DUMP_CONFIG"}
    env.update(LEVEL=level, CHECKS=checks, PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-4000:]
    assert "step 1 loss finite True rv finite False" in proc.stdout, proc.stdout  # the user's run, untouched
    records = []
    for path in sorted((tmp_path / "dump").glob("step*/rank/overflow.json")):
        step = int(path.parent.parent.name[4:])
        records += [dict(r, step=step) for r in json.loads(path.read_text())]
    return records, script, proc.stderr


def test_l1_batch_norm_is_the_origin_of_nan_it_wrote_into_its_running_variance(tmp_path):
    """(auto checks' watched windows of L1 judge what the gradient
    computations return: finite here; see docs/checks.md)"""
    records, script, _ = run(tmp_path, "L1", "exact")
    assert records, "no record"
    first = records[0]
    assert first["step"] == 1
    assert first["name"] == "Functional.batch_norm.0.forward" and first["origin"] is True, first
    assert first["written"] == ["rv"], first
    line = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "LINE_CALL" in text)
    assert first["where"] == f"{script}:{line}"


@pytest.mark.parametrize("checks", ["exact", "auto"])
def test_l0_names_the_state_a_cells_own_code_wrote_no_all_clear(tmp_path, checks):
    records, _, stderr = run(tmp_path, "L0", checks)
    assert "no overflow found" not in stderr
    assert records, "no record"
    first = records[0]
    assert first["step"] == 1 and first["origin"] is False, first
    assert first["nonfinite"] == ["Parameter rv"], first
    assert "Cell.Net" in first["message"] and "use level L1" in first["message"], first


def test_the_sweep_watches_frozen_state_and_the_writers_parameters_only():
    """What ``l0.state_sweep`` reads: Parameters without gradient of any
    Cell, and every own Parameter of a Cell whose construct names
    ``batch_norm``; not the trainable weights of other Cells."""
    import numpy as np
    from mindspore import Parameter, Tensor, nn, ops

    from probe_runtime.l0.state_sweep import watched_state

    class Writer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.rm = Parameter(Tensor(np.zeros(2, np.float32)), name="rm", requires_grad=False)
            self.rv = Parameter(Tensor(np.ones(2, np.float32)), name="rv", requires_grad=False)
            self.g = Parameter(Tensor(np.ones(2, np.float32)), name="g")

        def construct(self, x):
            return ops.batch_norm(x, self.rm, self.rv, self.g, self.g, training=True)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.frozen = nn.Dense(2, 2)
            self.frozen.weight.requires_grad = False
            self.fc = nn.Dense(2, 2)
            self.w = Writer()

        def construct(self, x):
            return self.w(self.fc(self.frozen(x)))

    watched = {(name.split(".")[-1], owner) for name, owner, _ in watched_state(Net(), False)}
    assert watched == {("weight", "Cell.frozen.Dense"), ("rm", "Cell.w.Writer"), ("rv", "Cell.w.Writer"),
                       ("g", "Cell.w.Writer")}, watched
