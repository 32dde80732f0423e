"""The execution mode is checked again at every ``start()`` (a user's finding).

The gate judges the level against the mode when the debugger is built. A
script that builds it first and calls ``set_context(mode=GRAPH_MODE)``
afterwards got: at L1, "no overflow found in 3 checked step(s)" of a run
whose loss went inf (L1 sees nothing in a compiled graph); at L0, its
training killed by MindSpore (``Unsupported statement 'Try'`` compiling the
tool's Cell hooks); at L2 (built in PyNative), a refusal whose hint led to
that false all-clear. Now nothing is installed in a step whose mode does not
fit the level, one error says why and the fix, the summary says those steps
were NOT checked, and training runs as without the tool.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_support import LAUNCHER_VARIABLES, isolate, write_runtime_config

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[2]
#: the user's script: the debugger built (config given) before set_context(GRAPH_MODE); an Exp overflows in
#: step 1; then the same training again on a fresh network without the tool, for comparison
SCRIPT = r'''
import json, sys
import numpy as np
import mindspore as ms
from mindspore import nn, ops
how, level, config, out = sys.argv[1:5]
from probe_runtime import OverflowCheckCallback, PrecisionDebugger
debugger = PrecisionDebugger(config_path=config)  # PyNative mode now: the gate lets L0/L1 through
ms.set_context(mode=ms.GRAPH_MODE)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.fc2 = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc2(ops.exp(self.fc1(x)))


def batch(step):
    return (np.full((2, 4), 30.0 if step == 1 else 0.1, np.float32), np.ones((2, 1), np.float32))


def train(tool):
    net = Net()
    losses = []
    if how == "loop":
        step_cell = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 1e-6))
        for step in range(3):
            if tool:
                debugger.start(net if level == "L0" else None)
            losses.append(str(float(step_cell(*(ms.Tensor(a) for a in batch(step))).asnumpy())))
            if tool:
                debugger.stop()
                debugger.step()
    else:  # Model.train with the callback
        import mindspore.dataset as ds
        from mindspore.train import Model

        xs, ys = zip(*(batch(step) for step in range(3)))
        data = ds.NumpySlicesDataset({"x": np.concatenate(xs), "y": np.concatenate(ys)}, shuffle=False).batch(2)
        model = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 1e-6))
        callbacks = [OverflowCheckCallback(debugger, model=net)] if tool else []
        model.train(1, data, callbacks=callbacks, dataset_sink_mode=False)
    return {"losses": losses, "weights": [str(p.asnumpy().tolist()) for p in net.trainable_params()]}


checked = train(True)
json.dump({"checked": checked, "plain": train(False)}, open(out, "w"))
'''


def run(folder: Path, how: str, level: str) -> tuple[dict, str]:
    """Run the script (``how``: ``loop`` or ``model``) at ``level`` in
    ``folder``; returns its results (with the tool, without) and stderr."""
    config = write_runtime_config(folder, level=level)
    (folder / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES + ("MINDSPORE_DUMP_CONFIG",)}
    env["PYTHONPATH"] = str(ROOT)
    out = folder / "out.json"
    proc = subprocess.run([sys.executable, "train.py", how, level, str(config), str(out)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]  # the user's training is never killed by the tool
    return json.loads(out.read_text()), proc.stderr


def assert_said_not_checked(stderr: str, level: str, steps: str) -> None:
    errors = [line for line in stderr.splitlines() if "at start() of step 0, but the debugger was created" in line]
    assert len(errors) == 1, stderr[-3000:]  # once, not at every step
    assert (f"the execution mode is GRAPH_MODE at start() of step 0, but the debugger was created in PYNATIVE_MODE: "
            f"level {level} sees nothing in GRAPH_MODE") in errors[0]
    assert "Create PrecisionDebugger after mindspore.set_context(mode=...)" in errors[0]
    assert "checked step(s)" not in stderr.replace("in 0 checked step(s)", "")  # never counted as checked
    line = next(x for x in stderr.splitlines() if x.startswith("probe_runtime: no overflow found"))
    assert (f"{len(steps.split(', '))} step(s) started in GRAPH_MODE and were NOT checked (step {steps}): level "
            f"{level} sees nothing in GRAPH_MODE, and the debugger was created in PYNATIVE_MODE; create "
            "PrecisionDebugger after set_context(mode=...), with level L2 in GRAPH_MODE") in line, line


def test_l1_built_before_graph_mode_says_its_steps_were_not_checked(tmp_path):
    """The false all-clear: the loss went inf in step 1, and the tool said
    "no overflow found in 3 checked step(s)"."""
    result, stderr = run(tmp_path, "loop", "L1")
    assert result["checked"]["losses"][1] == "inf", result
    assert result["checked"] == result["plain"]
    assert_said_not_checked(stderr, "L1", "0, 1, 2")
    assert not list((tmp_path / "dump").glob("step*"))


def test_l0_built_before_graph_mode_leaves_training_alone(tmp_path):
    """start(net) hooked the Cells, and compiling them in GRAPH_MODE killed
    the user's training (RuntimeError: Unsupported statement 'Try')."""
    result, stderr = run(tmp_path, "loop", "L0")
    assert result["checked"] == result["plain"], result  # bit for bit the training without the tool
    assert result["checked"]["losses"][1] == "inf"
    assert "Unsupported statement" not in stderr
    assert_said_not_checked(stderr, "L0", "0, 1, 2")
    assert "level L0 checks what the Cells take and return" not in stderr  # no limits of checks that never ran


def test_the_model_train_callback_starts_no_window_in_graph_mode(tmp_path):
    """``OverflowCheckCallback``'s step begin is ``start(model)``: the same check."""
    result, stderr = run(tmp_path, "model", "L0")
    assert result["checked"] == result["plain"], result
    assert "Unsupported statement" not in stderr
    assert_said_not_checked(stderr, "L0", "0, 1, 2")


# -- in this process -------------------------------------------------------------------------------------
@pytest.fixture
def pynative(tmp_path, monkeypatch):
    """A folder to build debuggers in; PyNative mode before and after."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    isolate(monkeypatch, tmp_path)
    made: list = []
    yield tmp_path, made
    ms.set_context(mode=ms.PYNATIVE_MODE)
    for debugger in made:
        debugger.stop()
        debugger.windows.summary.said = True  # no line at interpreter exit from these


def test_the_mode_is_read_at_every_start(pynative, caplog):
    """A step in GRAPH_MODE is not checked, a later one in PyNative mode is;
    the error is said once."""
    from mindspore import Tensor, ops

    from probe_runtime import PrecisionDebugger

    tmp_path, made = pynative
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path)))
    made.append(debugger)
    caplog.set_level(logging.ERROR, logger="probe_runtime")
    for step, mode in enumerate((ms.GRAPH_MODE, ms.GRAPH_MODE, ms.PYNATIVE_MODE)):
        ms.set_context(mode=mode)
        debugger.start()
        assert debugger.window is (None if mode == ms.GRAPH_MODE else "exact"), step
        ops.exp(Tensor(np.full(3, 100.0, np.float32)))  # inf: seen only in PyNative mode
        debugger.stop()
        debugger.step()
    said = [r.getMessage() for r in caplog.records if "the debugger was created in" in r.getMessage()]
    assert len(said) == 1 and "at start() of step 0" in said[0], said
    assert not (tmp_path / "dump" / "step0").exists() and not (tmp_path / "dump" / "step1").exists()
    assert (tmp_path / "dump" / "step2" / "rank" / "overflow.json").exists()
    line = debugger.windows.summary.line(auto=False)
    assert "no overflow found in 1 checked step(s)" in line
    assert "2 step(s) started in GRAPH_MODE and were NOT checked (step 0, 1)" in line


def test_l2_in_pynative_mode_after_construction_is_not_checked():
    """Level L2 built in GRAPH_MODE, then a step in PyNative mode: no
    compiled step to check (:class:`probe_runtime.gate.ModeWatch`)."""
    from probe_runtime.gate import ModeWatch
    from probe_runtime.state import RunState
    from probe_runtime.windows.summary import Summary

    summary = Summary("L2", "/d", frozenset({0}))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        watch = ModeWatch("L2", summary)
        assert watch.fits(RunState(steps=None, ranks=None, rank=None, overflow_nums=1))
        ms.set_context(mode=ms.PYNATIVE_MODE)
        state = RunState(steps=frozenset({0}), ranks=None, rank=None, overflow_nums=1)
        summary.started(0)
        assert not watch.fits(state)
        state.next_step()
        summary.started(1)
        assert not watch.fits(state)  # outside the step filter: said as such, not as a mode change
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    line = summary.line(auto=False)
    assert line.startswith("probe_runtime: no overflow found in 0 checked step(s); dump_path: /d"), line
    assert ("1 step(s) started in PYNATIVE_MODE and were NOT checked (step 0): level L2 sees nothing in "
            "PYNATIVE_MODE, and the debugger was created in GRAPH_MODE; create PrecisionDebugger after "
            "set_context(mode=...), with level L1 or L0 in PYNATIVE_MODE") in line
    assert "1 step(s) ran outside the config's step filter and were not checked (step 1)" in line


def test_l2_refused_in_pynative_mode_says_to_build_the_debugger_after_set_context(pynative):
    """The refusal's hint said only "use level L1 or L0", which led to the
    false all-clear when the script switches to GRAPH_MODE later."""
    from probe_runtime import ConfigLintError, PrecisionDebugger

    tmp_path, _ = pynative
    with pytest.raises(ConfigLintError) as refused:
        PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L2")))
    message = str(refused.value)
    assert "PL201" in message and "not in PyNative mode" in message
    assert ("if the script switches to GRAPH_MODE later, create PrecisionDebugger after "
            "set_context(mode=GRAPH_MODE) instead") in message
