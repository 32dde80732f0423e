"""Level L2 on MindSpore's CPU backend, end to end (issue 35): graph-mode
training scripts (``l2_scenarios.py``) that overflow in step 3, each run in
a subprocess in its own folder (a failed compile writes ``rank_0/`` into
the working folder), checked by ``PrecisionDebugger`` at L2; the records,
``probe report``'s verdict, and training bit-identical to a run without
the tool."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
pytest.importorskip("mindspore")

from runtime_support import LAUNCHER_VARIABLES, write_runtime_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = Path(__file__).with_name("l2_scenarios.py")


def run(folder: Path, scenario: str, config: object, steps: int = 5) -> tuple[dict, str]:
    """Run ``scenario`` in ``folder`` (config ``None``: without the tool);
    returns its losses and Parameter digest, and its stderr."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES + ("MINDSPORE_DUMP_CONFIG",)}
    env["PYTHONPATH"] = str(ROOT)
    env["TMPDIR"] = str(folder)  # the replay's scratch dump folder, removed at exit
    out = folder / f"{scenario}-{'plain' if config is None else 'checked'}.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), scenario, str(config or "none"), str(out), str(steps)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stderr


def records(dump: Path, step: int) -> list:
    return json.loads((dump / f"step{step}" / "rank" / "overflow.json").read_text())


def report_last_line(dump: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "msprobe_lint", "report", str(dump)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def run_script(folder: Path, name: str, text: str, *args: object) -> subprocess.CompletedProcess:
    """``text`` written to ``folder/name`` and run there with ``args``
    (the project on PYTHONPATH, no launcher variables, the replay's scratch
    dump under ``folder``); asserts it exits 0."""
    script = folder / name
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES + ("MINDSPORE_DUMP_CONFIG",)}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(folder))
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


#: scenario -> (the origin kernel's type, its scope's tail, the source line in l2_scenarios.py that made it)
ORIGINS = {
    "exp": ("Exp", "_backbone-ExpNet/Exp-op", "return self.fc2(ops.exp(self.fc1(x)))"),
    "fp16": ("Cast", "_backbone-Half/Cast-op", "return self.fc2(self.fc1(x).astype(ms.float32))"),
    "log0": ("Log", "_loss_fn-LogLoss/Log-op", "return -ops.log(ops.abs(pred * label)).mean()"),
    # the optimizer's code is all MindSpore's: the step's call (a fresh user's finding: nn/optim/sgd.py:241)
    "update": ("ApplyMomentum", "optimizer-Momentum/ApplyMomentum-op", "loss = train(x, y)"),
    "model": ("Exp", "_backbone-ExpNet/Exp-op", "return self.fc2(ops.exp(self.fc1(x)))"),
}


def line_of(text: str, last: bool = False) -> int:
    lines = SCRIPT.read_text().splitlines()
    found = [i for i, line in enumerate(lines, 1) if line.strip() == text]
    return found[-1] if last else found[0]


@pytest.mark.parametrize("scenario", sorted(ORIGINS))
def test_the_first_kernel_is_named_with_its_source_line(tmp_path, scenario):
    dump = tmp_path / "dump"
    checked, stderr = run(tmp_path, scenario, write_runtime_config(tmp_path, level="L2", nums=1))
    assert sorted(p.name for p in dump.iterdir() if p.name.startswith("step")) == ["step3"]  # overflow_nums 1
    found = records(dump, 3)
    first = found[0]
    op, scope, source = ORIGINS[scenario]
    assert first["origin"] is True and first["name"].startswith(f"{op}.") and scope in first["name"], first
    assert first["kind"] == "forward" and first["step"] == 3 and first["rank"] is None
    if source is not None:
        assert first["where"] == f"{SCRIPT}:{line_of(source, last=scenario == 'update')}", first
    assert all(not r["origin"] for r in found[1:])
    dump_json = json.loads((dump / "step3" / "rank" / "dump.json").read_text())
    assert dump_json["level"] == "L2" and set(dump_json["data"]) == {r["name"] for r in found}
    assert dump_json["data"][first["name"]]["kernel"]["type"] == op
    saved = sorted(os.listdir(dump / "step3" / "rank" / "dump_tensor_data"))
    prefix = first["name"].replace("/", "_")
    assert saved and all(name.startswith(prefix + ".") for name in saved)  # the origin's tensors only
    last = report_last_line(dump)
    assert f"Overflow started in step3/rank: {first['name']} (kernel, forward)" in last, last
    assert not list(tmp_path.glob("probe_l2_*"))  # the replay's scratch dump is gone at exit
    assert not (tmp_path / "rank_0").exists()


def test_a_kernel_gets_the_line_of_its_own_graph(tmp_path):
    """A fresh user's finding: two Cells compiled apart each hold a Mul
    named alike in their own graph; the overflowing one (Score's) was
    given the line of the other graph's Mul (Prep's). Lines are looked up
    in the .ir of the graph the kernel ran in."""
    run(tmp_path, "twocells", write_runtime_config(tmp_path, level="L2", nums=1))
    first = records(tmp_path / "dump", 3)[0]
    assert first["origin"] is True and first["name"].startswith("Mul."), first
    assert first["where"] == f"{SCRIPT}:{line_of('z = y * y')}", first


def test_training_is_bit_identical_with_and_without_the_tool(tmp_path):
    """Nothing overflows: the same losses and Parameters, bit for bit; and
    the all-clear says what the CPU cannot see."""
    plain, _ = run(tmp_path, "clean", None)
    checked, stderr = run(tmp_path, "clean", write_runtime_config(tmp_path, level="L2"))
    assert checked == plain
    assert "no overflow found in 5 checked step(s)" in stderr and "saturation mode" in stderr
    assert not list((tmp_path / "dump").glob("step*"))


def test_an_overflowing_step_is_replayed_without_changing_training(tmp_path):
    """The replay starts from the state before the step and its result is
    kept: training goes on as without the tool."""
    plain, _ = run(tmp_path, "exp", None)
    checked, _ = run(tmp_path, "exp", write_runtime_config(tmp_path, level="L2", nums=1))
    assert checked == plain


def test_the_step_filter_is_respected(tmp_path):
    checked, stderr = run(tmp_path, "log0", write_runtime_config(tmp_path, level="L2", step=[0, 1, 2]))
    assert not list((tmp_path / "dump").glob("step*"))
    assert "no overflow found in 3 checked step(s)" in stderr


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_the_kernel_inside_a_jit_region_is_named_at_l1_and_l0(tmp_path, level):
    """PyNative loop, loss -inf from ops.log(0) inside a @jit helper: the
    level sees only the region's boundary; the replay under the dump names
    the Log kernel inside it, with its line, before anything it fed."""
    dump = tmp_path / "dump"
    plain, _ = run(tmp_path, "jit", None)
    checked, _ = run(tmp_path, "jit", write_runtime_config(tmp_path, level=level, nums=-1))
    assert checked == plain  # the replay changes neither the gradients nor training
    first = records(dump, 3)[0]
    assert first["origin"] is True and first["name"].startswith("Log.Default/Log-op"), first
    assert first["inside"] == "Jit.scored_loss.0.forward"
    assert first["where"] == f"{SCRIPT}:{line_of('return -ops.log(ops.abs(label * pred)).mean()')}"
    last = report_last_line(dump)
    assert f"{first['name']} (kernel, forward) inside Jit.scored_loss.0.forward" in last, last
    # what the region's inf reached later in the step (its backward, the layers before it) is carried on: no
    # record says it came in from outside the window (a fresh user's finding)
    later = records(dump, 3)[1:]
    assert later and not any(r["origin"] or "entered" in r for r in later), later


def test_a_graph_compiled_before_the_debugger_is_said_not_hidden(tmp_path):
    """MindSpore reads its dump config at the first compile: a step compiled
    before PrecisionDebugger() replays without a dump. The record says so
    (kind outside), Parameters that stay inf/nan are said once, and no
    all-clear follows."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES + ("MINDSPORE_DUMP_CONFIG",)}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    config = write_runtime_config(tmp_path, level="L2", nums=1)
    proc = subprocess.run([sys.executable, str(SCRIPT.with_name("l2_late_compile.py")), str(config)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (first,) = records(tmp_path / "dump", 1)
    assert first["kind"] == "outside" and "compiled before PrecisionDebugger() was created" in first["message"]
    assert [r["kind"] for r in records(tmp_path / "dump", 2)] == ["outside"]
    assert "no overflow found" not in proc.stderr
    assert "Overflow outside the checked calls in step1/rank" in report_last_line(tmp_path / "dump")


def test_a_jit_region_that_writes_parameters_is_not_run_twice(tmp_path):
    """A whole @jit training step (its optimizer inside) returns an inf
    loss and writes inf/nan into the weights: it is never run again (that
    would update the Parameters twice) and training stays as without the
    tool; the Parameters it reaches are read before and after it, so that
    step's record names what the region wrote (a fresh user's finding:
    with a finite loss, the update's inf went unseen and the run was
    called clean), and the next step, which runs on those Parameters, is
    never said to have started the overflow."""
    plain, _ = run(tmp_path, "jitstep", None)
    checked, stderr = run(tmp_path, "jitstep", write_runtime_config(tmp_path, level="L1", nums=-1))
    assert checked == plain
    for path in (tmp_path / "dump").glob("step*/rank/overflow.json"):
        assert not any("inside" in r and r["inside"].startswith("Jit.train_step") for r in json.loads(path.read_text()))
    (first,) = records(tmp_path / "dump", 3)
    weights = ["Parameter bias", "Parameter moments.bias", "Parameter moments.weight", "Parameter weight"]
    assert first["kind"] == "outside" and first["nonfinite"] == ["output of Jit.train_step.0.forward"] + weights
    assert "wrote inf/nan into Parameter bias, Parameter moments.bias" in first["message"]
    assert "the overflow started inside it" in first["message"] and "no overflow found" not in stderr
    (second,) = records(tmp_path / "dump", 4)
    assert "while they held inf/nan: the overflow started before it" in second["message"]
    assert "started inside it" not in second["message"]
    assert report_last_line(tmp_path / "dump").startswith("2 records in 2 step/rank folders. Overflow outside the "
                                                          "checked calls in step3/rank: the mindspore.jit region")


def test_a_jit_step_whose_update_alone_overflows_is_never_called_clean(tmp_path, monkeypatch):
    """The update inside a whole @jit training step writes inf into the
    weights while the loss it returns is finite: before, nothing the region
    returned held inf/nan and the run ended "no overflow found"."""
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    from probe_runtime import PrecisionDebugger

    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = nn.Dense(2, 1, weight_init="ones", has_bias=False)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=1e38)

    def forward(x):
        return net(x).sum()

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    @ms.jit
    def train_step(x):
        loss, grads = grad_fn(x)
        optimizer(grads)
        return loss

    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    losses = []
    for step, value in enumerate((1e-30, 1e1)):  # step 1: gradient 10, lr * 10 = 1e39 > float32 max
        debugger.start()
        losses.append(float(train_step(ms.Tensor(np.full((1, 2), value, np.float32))).asnumpy()))
        debugger.stop()
        debugger.step()
    assert all(np.isfinite(losses)) and not np.isfinite(net.weight.asnumpy()).all()
    assert not (tmp_path / "dump" / "step0" / "rank" / "overflow.json").exists()
    (record,) = records(tmp_path / "dump", 1)
    assert record["kind"] == "outside" and record["nonfinite"] == ["Parameter weight"], record
    assert "wrote inf/nan into Parameter weight, finite when it started" in record["message"]


DROPOUT_STEP = """
import sys, hashlib, numpy as np, mindspore as ms
from mindspore import nn, ops, Tensor
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
debugger = None
if sys.argv[1] != "none":
    from probe_runtime import PrecisionDebugger
    debugger = PrecisionDebugger(config_path=sys.argv[1])
ms.set_seed(1)
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dp = nn.Dropout(p=0.5)
        self.fc = nn.Dense(8, 8)
    def construct(self, x):
        # the loss holds NaN at step 1 (exp(x) is inf there), kept out of the gradient: the update stays finite
        return self.dp(self.fc(x)).sum() * 1e-3 + ops.stop_gradient(ops.exp(x).max()) * 0.0
net = Net()
train = nn.TrainOneStepCell(net, nn.Momentum(net.trainable_params(), 0.1, 0.9))
train.set_train(True)
for step in range(3):
    x = Tensor(np.arange(16, dtype=np.float32).reshape(2, 8) / 16 + (100.0 if step == 1 else 0.0))
    if debugger: debugger.start()
    loss = train(x)
    if debugger: debugger.stop(); debugger.step()
    digest = hashlib.sha256(b"".join(p.asnumpy().tobytes() for p in train.get_parameters())).hexdigest()[:16]
    print("step", step, repr(float(loss.asnumpy())), digest)
"""


def test_a_replayed_step_with_dropout_keeps_its_own_result(tmp_path):
    """A fresh user's finding: the replay of a compiled step holding a
    training-mode Dropout drew a new mask, and its result and update were
    what training got, so the step's output and weights changed under the
    tool. The step's own result is returned and the Parameters put back to
    what the step left (weights, momentum), so that step matches a run
    without the tool; that the replay drew random numbers again (later
    draws differ) is said."""
    script = tmp_path / "dropout_step.py"
    script.write_text(DROPOUT_STEP)
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES + ("MINDSPORE_DUMP_CONFIG",)}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    outputs = {}
    for config in ("none", str(write_runtime_config(tmp_path, level="L2", nums=-1))):
        proc = subprocess.run([sys.executable, str(script), config], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs[config] = ([line for line in proc.stdout.splitlines() if line.startswith("step ")], proc.stderr)
    (plain, _), (checked, stderr) = outputs.values()
    assert checked[:2] == plain[:2], (plain, checked)  # the overflowing step 1 included: loss and every Parameter
    assert "nan" in checked[1]
    assert "ran its random kernels (" in stderr and "Dropout" in stderr
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].startswith("Exp."), first


NOISY_REGION = """
import sys, numpy as np, mindspore as ms
from mindspore import ops
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
debugger = PrecisionDebugger(config_path=sys.argv[1])  # before the first compile: MindSpore reads its dump config then

@ms.jit
def noisy(x):
    return ops.dropout(x, 0.5).sum(), ops.exp(x).max()

for step in range(2):
    debugger.start()
    noisy(ms.Tensor(np.full((2, 4), 100.0 * step, np.float32)))
    debugger.stop()
    debugger.step()
"""


def test_a_jit_region_replay_that_draws_random_numbers_says_so(tmp_path):
    """A fresh user's finding: the replay of a @jit region holding a dropout
    draws again, so later steps' draws differ from a run without the tool;
    what the region returned is kept, and stderr says so, once."""
    proc = run_script(tmp_path, "noisy.py", NOISY_REGION, str(write_runtime_config(tmp_path, level="L1", nums=-1)))
    first = records(tmp_path / "dump", 1)[0]
    assert first["name"].startswith("Exp.") and first["inside"] == "Jit.noisy.0.forward", first
    said = [line for line in proc.stderr.splitlines() if "ran its random kernels" in line]
    assert len(said) == 1 and "Jit.noisy.0.forward" in said[0] and "Dropout" in said[0], proc.stderr[-3000:]


def test_a_jit_region_whose_replay_dump_names_no_kernel_is_never_called_clean(tmp_path, monkeypatch):
    """A fresh user's finding: under load MindSpore failed to write the
    replay's dump ("CreatePrefixPath failed"), the scan named no kernel,
    the region's inf got no record and the run ended "no overflow found".
    The region is now named as where the overflow started."""
    import mindspore as ms
    import numpy as np
    from mindspore import ops

    from probe_runtime import PrecisionDebugger
    from probe_runtime.l2 import jit

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(jit, "scan", lambda *args, **kwargs: [])  # the dump held nothing
    ms.set_context(mode=ms.PYNATIVE_MODE)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level="L1", nums=-1)))

    @ms.jit
    def peak(x):
        return x.sum(), ops.exp(x).max()

    for step in range(2):
        debugger.start()
        _, top = peak(ms.Tensor(np.full((2, 4), 100.0 * step, np.float32)))  # step 1: exp(100) = inf
        debugger.stop()
        debugger.step()
    assert np.isinf(top.asnumpy())
    assert not (tmp_path / "dump" / "step0").exists()
    (record,) = records(tmp_path / "dump", 1)
    assert record["kind"] == "outside" and record["nonfinite"] == ["output of Jit.peak.0.forward"], record
    assert "returned inf/nan from finite inputs: the overflow started inside it" in record["message"]
    assert "named no kernel" in record["message"]
    assert "compiled before" not in record["message"]


def test_a_functional_jit_step_at_l2_is_never_called_checked(tmp_path):
    """A fresh user's finding: in GRAPH_MODE a functional @jit training step
    (no Cell called from Python) is not seen by L2, and the all-clear said
    "no overflow found in 5 checked step(s)" of a run whose loss went inf.
    Those steps are now said not to be checked, and why."""
    checked, stderr = run(tmp_path, "graphjit", write_runtime_config(tmp_path, level="L2", nums=-1))
    assert checked["losses"][3] == "inf", checked
    line = next(x for x in stderr.splitlines() if x.startswith("probe_runtime: no overflow found"))
    assert line.startswith("probe_runtime: no overflow found in 0 checked step(s)"), line
    assert "5 step(s) called no Cell between start() and stop() and were not checked (step 0, 1, 2, 3, 4)" in line
    assert "not a functional mindspore.jit training step" in line


def test_overflow_nums_counts_kernel_records_as_l1_counts_calls(tmp_path):
    """A fresh user's finding: with overflow_nums 1, L2 wrote 13 records
    (the origin and the kernels that carried it on); overflow_nums counts
    records, as at L1: the one record is the origin."""
    run(tmp_path, "log0", write_runtime_config(tmp_path, level="L2", nums=1))
    (only,) = records(tmp_path / "dump", 3)
    assert only["origin"] is True and only["name"].startswith("Log."), only
    assert not list((tmp_path / "dump").glob("step4"))


def test_a_kernel_in_a_graph_loop_is_named_by_its_first_overflowing_run(tmp_path):
    """A tester's finding: a ``while`` loop's ``h = h * 10.0`` ran six
    times, each run dumped under one name; the runs were read as one kernel
    with the last-listed run's files (finite), and the ReduceSum after the
    loop, whose loop-carried input MindSpore did not write, was called the
    origin. Each run is judged: the Mul's 4th run is the origin."""
    run(tmp_path, "loop", write_runtime_config(tmp_path, level="L2", nums=-1), steps=4)
    found = records(tmp_path / "dump", 3)
    assert found[0]["origin"] is True and found[0]["name"].startswith("Mul."), found
    # MindSpore 2.7.0 lists the loop body's expanded Mul without a source line in its .ir; it then has
    # none (it used to get the line of the kernel before it, the loop's condition: another kernel's)
    assert found[0]["where"] in (f"{SCRIPT}:{line_of('h = h * 10.0')}", None)
    assert "run 4 of 6" in found[0]["message"]
    assert not any(r["origin"] for r in found[1:]), found
    # the ReduceSum after the loop has a loop-carried input MindSpore did not write: the named origin is not denied
    assert not any("where the overflow started is not known" in r.get("message", "") for r in found), found


def test_a_minus_inf_mask_given_to_the_step_leaves_the_origin_named(tmp_path):
    """A reviewer's finding: a -inf attention mask among the step's
    arguments (a softmax consumes it) made every kernel whose inputs
    MindSpore did not all write "never the origin", and ReduceSum's axis
    (a tuple, never written) counted as such an input: the step's overflow,
    ``(x * 1e37).sum()``, got no origin at all. Inputs whose ``.ir`` type
    cannot hold inf/nan do not count."""
    dump = tmp_path / "dump"
    run(tmp_path, "mask", write_runtime_config(tmp_path, level="L2", nums=-1), steps=4)
    found = records(dump, 3)
    origins = [r for r in found if r["origin"]]
    assert [r["name"].split(".")[0] for r in origins] == ["ReduceSum"], found
    assert "Overflow started in step3/rank: ReduceSum." in report_last_line(dump)


FLOAT16_EXP = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger
debugger = PrecisionDebugger(config_path=sys.argv[1])
causal = ms.Tensor(np.triu(np.full((4, 4), -np.inf, np.float32), 1))


class Attn(nn.Cell):  # masked attention weights, and a float16 exp returned as is
    def construct(self, x, mask):
        weights = ops.softmax(x.astype(ms.float32) + mask, -1)
        return weights, ops.exp(x)


net = Attn()
for step in range(2):
    x = np.full((4, 4), 12.0 if step == 1 else 0.5, np.float16)  # exp(12) = 162755: inf in float16
    debugger.start()
    net(ms.Tensor(x), causal)
    debugger.stop()
    debugger.step()
"""


def test_a_float16_exp_the_step_returns_is_named_beside_a_mask_given_to_it(tmp_path):
    """A helper's finding: the CPU runs a float16 ``Exp`` in float32 and
    dumps its output as float32 data under a float16 header (162755); no
    Cast after it was dumped, since the step returns it, so it was never
    named: the step's only record was the ``Add`` of the -inf mask given to
    the step, carried, and ``probe report`` said where the overflow started
    was not known. The Exp is the origin, and the Add's record says the
    -inf entered with the step's arguments."""
    run_script(tmp_path, "float16_exp.py", FLOAT16_EXP, write_runtime_config(tmp_path, level="L2"))
    found = records(tmp_path / "dump", 1)
    assert [(r["name"].split(".")[0], r["origin"]) for r in found] == [("Exp", True), ("Add", False)], found
    assert found[0]["where"].endswith("float16_exp.py:13"), found[0]
    assert found[1]["entered"]["source"] == "outside", found[1]
    assert "argument 1 held -inf on entry" in found[1]["entered"]["message"], found[1]
    assert "Overflow started in step1/rank: Exp." in report_last_line(tmp_path / "dump")


def test_parameters_spoiled_by_a_recorded_step_are_traced_to_it_from_any_cell(tmp_path):
    """A reviewer's finding: the step that left Parameters inf/nan was
    remembered per Cell, and once: an evaluation Cell sharing the trained
    Cell's weight, called after the step-3 overflow, was told "the overflow
    happened before this step, outside what was checked", and after the
    user set the weight back and step 5 overflowed again, no record named
    step 5 as where the inf/nan came from."""
    dump = tmp_path / "dump"
    run(tmp_path, "shared", write_runtime_config(tmp_path, level="L2", nums=-1), steps=7)
    evaluation = f"{SCRIPT}:{line_of('score = net(ms.Tensor(np.ones((1, 1), np.float32)))')}"
    for step in (3, 5):
        found = records(dump, step)
        assert found[0]["origin"] is True and found[0]["name"].startswith("SGD."), found
        (note,) = [r for r in found if not r["origin"]]
        assert note["where"] == evaluation, note
        assert f"since the overflow recorded in step {step}" in note["message"], note
    assert not any("outside what was checked" in r.get("message", "") for s in (3, 5) for r in records(dump, s))


#: a worker of a distributed job as `msrun` starts it, reduced to what the refusal depends on:
#: the launcher's variables (given by the test) and the hook mindspore.communication.init() installs
#: (it tells the cluster this worker failed, then hands the exception to Python's own hook)
WORKER = """
import sys
import mindspore as ms
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger
def cluster_hook(kind, value, tb, _python=sys.excepthook):
    sys.stderr.write("cluster told\\n")
    _python(kind, value, tb)
sys.excepthook = cluster_hook
PrecisionDebugger(config_path=sys.argv[1])
print("not refused")
"""


@pytest.mark.parametrize("launcher, said", [
    ({"MS_WORKER_NUM": "2", "RANK_ID": "1"}, "PL205 error: probe_runtime runs level L2 (kernel) on the CPU backend in "
                                             "a single process only, not in a distributed job of 2 processes"),
    ({"RANK_ID": "1"}, "probe_runtime refuses to start: level L2 on the CPU backend does not run in a distributed "
                       "job (this process is rank 1)"),
])
def test_l2_in_a_worker_of_a_distributed_job_is_refused_in_one_message(tmp_path, launcher, said):
    """A fresh user's finding: under msrun each worker died with an
    L2Unavailable traceback in its log (mindspore.communication.init()
    replaces sys.excepthook, so the debugger's hook no longer said a
    refusal alone). The gate now refuses L2 on the CPU backend in a job of
    more than one process (PL205), and either refusal is one message, exit
    1, with the hook init() installed still called."""
    config = write_runtime_config(tmp_path, level="L2")
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES + ("MINDSPORE_DUMP_CONFIG",)}
    env.update(launcher, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", WORKER, str(config)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    err = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith(("[WARNING]", "[INFO]")))
    assert proc.returncode == 1 and "not refused" not in proc.stdout, err
    assert "Traceback" not in err and said in err and "level L1 or L0 in PyNative mode" in err, err
    assert err.startswith("cluster told\n"), err
    if "MS_WORKER_NUM" in launcher:
        assert not (tmp_path / "dump").exists()  # the gate refused it: nothing written


HUNT_CASES = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops, Parameter
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
case, config = sys.argv[1], sys.argv[2]
debugger = None
if config != "none":
    from probe_runtime import PrecisionDebugger
    debugger = PrecisionDebugger(config_path=config)
calls = Parameter(ms.Tensor(np.zeros((1,), np.float32)), name="calls")  # module-level, written in the graph


class Masked(nn.Cell):  # a causal mask kept as a frozen Parameter of -inf, by design
    def __init__(self):
        super().__init__()
        self.mask = Parameter(ms.Tensor(np.triu(np.full((4, 4), -np.inf, np.float32), 1)), name="mask",
                              requires_grad=False)
        self.fc = nn.Dense(4, 4, weight_init="ones")

    def construct(self, x):
        return ops.softmax(x + self.mask, -1).sum() + ops.exp(self.fc(x)).sum()


class Counting(nn.Cell):  # writes a Parameter it is given and a module-level one
    def construct(self, total, x):
        ops.assign_add(total, ops.ones((1,), ms.float32))
        ops.assign_add(calls, ops.ones((1,), ms.float32))
        return x * 1e30


def bump(x):  # a function the Cell calls writes the module-level Parameter
    ops.assign_add(calls, ops.ones((1,), ms.float32))
    return x * 1e30


class Helped(nn.Cell):  # writes a Parameter it is given, and one through a function it calls
    def construct(self, total, x):
        ops.assign_add(total, ops.ones((1,), ms.float32))
        return bump(x)


class Outer(nn.Cell):  # the counting Cell inside another, as a user's network inside a TrainOneStepCell
    def __init__(self):
        super().__init__()
        self.inner = Counting()

    def construct(self, total, x):
        return self.inner(total, x)


class TwoOrigins(nn.Cell):  # a second overflow from finite inputs after the first
    def construct(self, x, y):
        h = ops.mul(x, 1e30)
        safe = ops.where(ops.isfinite(h), h, ops.zeros_like(h))
        return safe.sum() + ops.exp(ops.add(y, safe)).sum()


VALID = ms.Tensor(np.array([[True, True, False]] * 4))
CAUSAL = ms.Tensor(np.triu(np.ones((4, 4), bool), 1))
DIAGONAL = ms.Tensor(np.eye(4, dtype=np.float32))


class Policy(nn.Cell):  # returns logits masked with -inf by design (consumed after it) and a value head
    def __init__(self):
        super().__init__()
        self.pi = nn.Dense(4, 3, weight_init="ones", bias_init="zeros")
        self.v = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return ops.masked_fill(self.pi(x), ops.logical_not(VALID), float("-inf")), ops.exp(self.v(x))


class Scores(nn.Cell):  # a dict output: the loss and the masked scores
    def construct(self, x):
        s = ops.masked_fill(x * 0.01, CAUSAL, float("-inf"))
        return {"loss": (ops.softmax(s, -1) * x).mean() * ops.exp(x * 2.0).mean(), "scores": s}


class Spoiling(nn.Cell):  # -exp overflows on the diagonal: -inf only beside finite values, written into a Parameter
    def __init__(self):
        super().__init__()
        self.acc = Parameter(ms.Tensor(np.zeros((4, 4), np.float32)), name="acc")

    def construct(self, x):
        y = -ops.exp(x * DIAGONAL)
        ops.assign(self.acc, y)
        return y


class NegLog(nn.Cell):  # log of 0: a scalar -inf is no mask
    def construct(self, x):
        return ops.log(ops.relu(5.0 - x)).mean()


class Tracked(nn.Cell):  # a frozen running statistic that the step overflows from finite to -inf
    def __init__(self):
        super().__init__()
        self.stat = Parameter(ms.Tensor(np.ones((1,), np.float32)), name="stat", requires_grad=False)

    def construct(self, x):
        ops.assign(self.stat, -ops.abs(self.stat) * x.max() * 1e36)
        return x.mean()


class Plain(nn.Cell):  # the data may hold inf
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return ops.relu(self.fc(x)).sum()


total = Parameter(ms.Tensor(np.zeros((1,), np.float32)), name="total")
net = {"mask": Masked, "count": Counting, "outer": Outer, "helper": Helped, "two": TwoOrigins, "policy": Policy,
       "scores": Scores, "spoiling": Spoiling, "neglog": NegLog, "tracked": Tracked, "data": Plain}[case]()
for step in range(3):
    big = step == 1
    if debugger is not None:
        debugger.start()
    if case == "mask":
        net(ms.Tensor(np.full((4, 4), 30.0 if big else 0.1, np.float32)))
    elif case in ("count", "outer", "helper"):
        net(total, ms.Tensor(np.full((2,), 1e10 if big else 1.0, np.float32)))
    elif case in ("policy", "scores", "spoiling", "neglog", "tracked"):
        net(ms.Tensor(np.full((4, 4), 100.0 if big else 0.5 + step, np.float32)))
    elif case == "data":
        x = np.full((2, 4), 0.1, np.float32)
        x[0, 2] = np.inf if big else 0.1
        net(ms.Tensor(x))
    else:
        net(ms.Tensor(np.full((2,), 1e10 if big else 1.0, np.float32)), ms.Tensor(np.full((2,), 100.0, np.float32)))
    if debugger is not None:
        debugger.stop()
        debugger.step()
print("state", total.asnumpy().tolist(), calls.asnumpy().tolist())
"""


def _hunt_case(tmp_path, case: str, config: str):
    return run_script(tmp_path, "hunt_cases.py", HUNT_CASES, case, config)


def test_a_frozen_minus_inf_mask_parameter_is_by_design_at_l2(tmp_path):
    """A hunt's finding: a causal mask kept as a frozen Parameter of -inf
    made every step "held inf/nan before the compiled step": step 0, clean,
    was flagged, and step 1's Exp was never named."""
    _hunt_case(tmp_path, "mask", str(write_runtime_config(tmp_path, level="L2", nums=-1)))
    assert not (tmp_path / "dump" / "step0").exists()
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].startswith("Exp."), first


@pytest.mark.parametrize("case", ["count", "outer", "helper"])
def test_the_replay_puts_back_parameters_the_cell_does_not_own(tmp_path, case):
    """A hunt's finding: the replay of the overflowing step ran its
    assign_add a second time on a Parameter passed in and on a
    module-level one (training changed under the tool); a review's: also
    when the Cell naming it is inside the one called, or a function its
    construct calls writes it."""
    plain = _hunt_case(tmp_path, case, "none").stdout
    checked = _hunt_case(tmp_path, case, str(write_runtime_config(tmp_path, level="L2", nums=-1))).stdout
    assert "state [3.0] [3.0]" in plain and "state [3.0] [3.0]" in checked, (plain, checked)
    assert records(tmp_path / "dump", 1)[0]["origin"] is True


def test_a_second_independent_origin_in_a_replay_is_recorded(tmp_path):
    """A hunt's finding: only the first origin of a replay was written; an
    Exp that overflowed later from finite inputs left no trace."""
    _hunt_case(tmp_path, "two", str(write_runtime_config(tmp_path, level="L2", nums=-1)))
    found = [(r["name"].split(".")[0], r["origin"]) for r in records(tmp_path / "dump", 1)]
    assert found[:2] == [("Mul", True), ("Exp", True)], found


JIT_MASKS = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops, Parameter
from probe_runtime import PrecisionDebugger
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
debugger = PrecisionDebugger(config_path=sys.argv[2])
case = sys.argv[1]
causal = np.triu(np.full((3, 3), -np.inf, np.float32), 1)


class Held(nn.Cell):  # the mask kept as a frozen Parameter of a compiled Cell
    def __init__(self):
        super().__init__()
        self.mask = Parameter(ms.Tensor(causal), name="mask", requires_grad=False)

    @ms.jit
    def construct(self, x):
        return ops.softmax(x + self.mask, -1).sum() + ops.exp(x * 3.0).sum()


@ms.jit
def given(x, mask):  # the mask passed to a compiled function
    return ops.softmax(x + mask, -1).sum() + ops.exp(x * 3.0).sum()


@ms.jit
def passed_on(x, mask):  # returns the masked scores: -inf by design, consumed after it
    return x * 2.0 + mask


class HeldPassedOn(nn.Cell):  # the same with the mask a frozen Parameter of the compiled Cell
    def __init__(self):
        super().__init__()
        self.mask = Parameter(ms.Tensor(causal), name="mask", requires_grad=False)

    @ms.jit
    def construct(self, x):
        return x * 2.0 + self.mask


stat = Parameter(ms.Tensor(np.ones((1,), np.float32)), name="stat", requires_grad=False)


@ms.jit
def tracked(x):  # a frozen running statistic its assign overflows from finite to -inf in step 1
    ops.assign(stat, -ops.abs(stat) * x.max() * 1e37)
    return x.sum()


held, held_passed_on = Held(), HeldPassedOn()
for step in range(2):
    x = ms.Tensor(np.full((3, 3), 40.0 if step == 1 else 0.5, np.float32))
    debugger.start()
    if case == "held":
        held(x)
    elif case == "given":
        given(x, ms.Tensor(causal))
    elif case == "held_passed_on":
        ops.softmax(held_passed_on(x), -1).sum()
    elif case == "tracked":
        tracked(x)
    else:
        ops.softmax(passed_on(x, ms.Tensor(causal)), -1).sum()
    debugger.stop()
    debugger.step()
"""


@pytest.mark.parametrize("case", ["held", "given", "passed_on", "held_passed_on"])
def test_a_jit_region_given_a_minus_inf_mask_is_still_replayed(tmp_path, case):
    """A hunt's finding: a mindspore.jit region whose mask (a frozen
    Parameter of -inf, or an argument) held -inf was never replayed: "ran
    on Parameter mask while they held inf/nan" or a carried record with no
    region named, its Exp never named. A region that only passes the mask
    on gets no record."""
    config = write_runtime_config(tmp_path, level="L1", nums=-1)
    proc = run_script(tmp_path, "jit_masks.py", JIT_MASKS, case, str(config))
    if case in ("passed_on", "held_passed_on"):  # (a review's finding: the held one got a record every step)
        assert not (tmp_path / "dump" / "step0").exists() and not (tmp_path / "dump" / "step1").exists(), \
            proc.stderr[-2000:]
        return
    assert not (tmp_path / "dump" / "step0").exists()
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].startswith("Exp.") and "inside" in first, first


JIT_MASK_MAKER = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger
debugger = PrecisionDebugger(config_path=sys.argv[2])
case = sys.argv[1]
net = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")


@ms.jit
def make_mask(valid):  # an additive mask built from finite inputs: 0 where valid, -inf elsewhere
    zeros = ops.zeros(valid.shape, ms.float32)
    if case == "where":
        return ops.where(valid, zeros, zeros - float("inf"))
    return ops.masked_fill(zeros, ops.logical_not(valid), float("-inf"))


def forward(x, valid, bad):
    scores = net(x) + make_mask(valid)
    weights = ops.softmax(scores, -1)
    if bad:  # the -inf reaches the loss: -inf * 0 is NaN
        return (scores * weights).sum()
    return (weights * x).sum()


opt = nn.SGD(net.trainable_params(), 1e-3)
grad_fn = ms.value_and_grad(forward, None, opt.parameters)
valid = ms.Tensor(np.array([[True, True, False, True]] * 2))
for step in range(2):
    debugger.start(net)
    loss, grads = grad_fn(ms.Tensor(np.full((2, 4), 0.5, np.float32)), valid, case == "bad" and step == 1)
    opt(grads)
    if case == "also" and step == 0:  # an unrelated NaN, recorded: the mask must still be said at exit
        ops.sqrt(ms.Tensor(-1.0))
    debugger.stop()
    debugger.step()
"""


@pytest.mark.parametrize("case", ["masked_fill", "where"])
def test_a_jit_region_making_a_mask_a_softmax_consumes_is_not_recorded(tmp_path, case):
    """A helper's finding: a @jit function building an additive -inf mask
    from finite inputs (``masked_fill`` or ``where`` of -inf), consumed by
    a softmax after it (loss and gradients finite), got a "MaskedFill ...
    (carried) inside Jit.make_mask.0.forward" record in every clean step
    at L1, where the same mask built outside jit is judged by design. Such
    a region is deferred as a mask maker now."""
    proc = run_script(tmp_path, "jit_mask_maker.py", JIT_MASK_MAKER, case, write_runtime_config(tmp_path, level="L1"))
    assert not (tmp_path / "dump" / "step0").exists() and not (tmp_path / "dump" / "step1").exists(), \
        proc.stderr[-2000:]
    assert "no overflow found in 2 checked step(s)" in proc.stderr, proc.stderr[-2000:]
    # the all-clear names the region it took for a mask, as L0's names such a Cell
    assert "1 mindspore.jit region(s) returned -inf only" in proc.stderr, proc.stderr[-2000:]
    assert "taken for a mask made by design (not recorded): Jit.make_mask;" in proc.stderr, proc.stderr[-2000:]


def test_a_jit_region_taken_for_a_mask_is_said_after_other_records(tmp_path):
    """A review's finding: the regions taken for a mask were named in the
    all-clear only; a run with any other record never said them."""
    proc = run_script(tmp_path, "jit_mask_maker.py", JIT_MASK_MAKER, "also", write_runtime_config(tmp_path, level="L1"))
    assert [r["name"] for r in records(tmp_path / "dump", 0)] == ["Functional.sqrt.0.forward"], proc.stderr[-2000:]
    last = [line for line in proc.stderr.splitlines() if line.startswith("probe_runtime:")][-1]
    assert last.startswith("probe_runtime: records were written to "), last
    assert "taken for a mask made by design (not recorded): Jit.make_mask;" in last, last


JIT_AUX_HEAD = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger
debugger = PrecisionDebugger(config_path=sys.argv[1])
body = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
w = ms.Tensor(np.array([[1.0, 1.0, -4.0]] * 4, np.float32))


@ms.jit
def head(x, w):  # float16 logits for a metric only: 4 * -4 * 6000 = -96000 is -inf in float16
    return ops.matmul(x.astype(ms.float16), w.astype(ms.float16))


def forward(x):
    return (body(x) ** 2).mean(), head(x, w)


opt = nn.SGD(body.trainable_params(), 1e-3)
grad_fn = ms.value_and_grad(forward, None, opt.parameters, has_aux=True)
for step, value in enumerate((0.5, 6000.0)):
    debugger.start(body)
    (loss, logits), grads = grad_fn(ms.Tensor(np.full((2, 4), value, np.float32)))
    logits.asnumpy().argmax(-1)  # the metric
    opt(grads)
    debugger.stop()
    debugger.step()
"""


@pytest.mark.parametrize("checks", ["exact", "auto"])
def test_a_jit_head_overflowing_to_minus_inf_in_an_auxiliary_output_is_recorded(tmp_path, monkeypatch, checks):
    """A review's finding: a @jit float16 head whose -inf-only overflow is
    returned as an auxiliary output (for a metric; loss and gradients
    finite) was taken for a mask by exact checks (an all-clear) while auto
    checks recorded it. Nothing after it turned the -inf finite: a region
    returning -inf only may as well have overflowed, so it is recorded."""
    monkeypatch.setenv("PROBE_CHECKS", checks)
    proc = run_script(tmp_path, "jit_aux_head.py", JIT_AUX_HEAD, write_runtime_config(tmp_path, level="L1"))
    assert not (tmp_path / "dump" / "step0").exists(), proc.stderr[-2000:]
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["inside"] == "Jit.head.0.forward", first
    assert "no overflow found" not in proc.stderr, proc.stderr[-2000:]


def test_a_jit_region_making_a_mask_that_reaches_the_loss_is_the_origin(tmp_path):
    """The other direction: the region's -inf reaches the loss (NaN) in
    step 1: the region is replayed then, its kernel the step's origin
    (before, the same record, carried, and no origin at all)."""
    proc = run_script(tmp_path, "jit_mask_maker.py", JIT_MASK_MAKER, "bad", write_runtime_config(tmp_path, level="L1"))
    assert not (tmp_path / "dump" / "step0").exists(), proc.stderr[-2000:]
    first = records(tmp_path / "dump", 1)[0]
    assert first["name"].startswith("MaskedFill.") and first["origin"] is True, first
    assert first["inside"] == "Jit.make_mask.0.forward", first


BYTECODE = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger
debugger = PrecisionDebugger(config_path=sys.argv[1])
net = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")
try:
    decorate = ms.jit(capture_mode="bytecode")
except TypeError:  # a release without capture modes
    print("no capture_mode")
    sys.exit(0)


@decorate
def log_score(p, y):
    return ops.log(ops.abs(p * y))


opt = nn.SGD(net.trainable_params(), 1e-3)
grad_fn = ms.value_and_grad(lambda x, y: log_score(net(x), y).mean(), None, opt.parameters)
for step in range(3):
    debugger.start(net)
    loss, grads = grad_fn(ms.Tensor(np.full((2, 4), 0.5, np.float32)),
                          ms.Tensor(np.full((2, 1), 0.0 if step == 2 else 1.0, np.float32)))
    opt(grads)
    debugger.stop()
    debugger.step()
"""


def test_a_bytecode_jit_region_keeps_detection_on(tmp_path):
    """A hunt's finding: in a ``jit(capture_mode="bytecode")`` function a
    frame's line number is None; it reached the dump writer, which turned
    detection off ("cannot write the dump (TypeError ...)"), and the run
    ended with no record of the log(0) in step 2."""
    config = write_runtime_config(tmp_path, level="L1", nums=1)
    proc = run_script(tmp_path, "bytecode.py", BYTECODE, str(config))
    if "no capture_mode" in proc.stdout:
        pytest.skip("this MindSpore release has no jit capture_mode")
    assert "detection turned off" not in proc.stderr, proc.stderr[-3000:]
    first = records(tmp_path / "dump", 2)[0]
    assert first["origin"] is True and "log" in first["name"].lower(), first


@pytest.mark.parametrize("case", ["policy", "scores"])
def test_a_compiled_step_returning_a_minus_inf_mask_is_not_recorded(tmp_path, case):
    """A hunt's finding: a policy Cell returning its logits masked with -inf
    (by design: a softmax after the step consumes them) got a MaskedFill
    record in step 0 ("where it started is not known"), and with
    overflow_nums 1 the Exp of step 1 was never checked; a dict output
    holding the masked scores likewise. A step whose non-finite outputs hold
    -inf only beside finite values, with its Parameters finite, is taken for
    a mask: not recorded, and the run's last line names it."""
    proc = _hunt_case(tmp_path, case, str(write_runtime_config(tmp_path, level="L2", nums=1)))
    assert not (tmp_path / "dump" / "step0").exists(), proc.stderr[-2000:]
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].startswith("Exp."), first
    assert "in step 0: taken for a mask made by design" in proc.stderr, proc.stderr[-2000:]


SPOILED_POLICY = """
import sys, numpy as np, mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger
debugger = PrecisionDebugger(config_path=sys.argv[1])
VALID = ms.Tensor(np.array([[True, True, False]] * 4))


class Policy(nn.Cell):  # logits masked with -inf by design
    def __init__(self):
        super().__init__()
        self.pi = nn.Dense(4, 3, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return ops.masked_fill(self.pi(x), ops.logical_not(VALID), float("-inf"))


net = Policy()
for step in range(3):
    if step == 1:  # a weight spoiled outside the checked steps (a bad checkpoint)
        net.pi.weight.set_data(ms.Tensor(np.full((3, 4), np.nan, np.float32)))
    debugger.start()
    net(ms.Tensor(np.full((4, 4), 0.5, np.float32)))
    debugger.stop()
    debugger.step()
"""


def test_a_step_taken_for_a_mask_is_in_the_last_line_after_a_record_naming_no_kernel(tmp_path):
    """A helper's finding: a record of kind ``outside`` (Parameters that
    held inf/nan before the step, set outside the checked steps) marked the
    exit line as said, so the run's last line was that record's repetition
    and step 0, taken for a mask, was named only in the warning of step 0.
    The line after the records names it, as it does after kernel records."""
    proc = run_script(tmp_path, "spoiled_policy.py", SPOILED_POLICY, write_runtime_config(tmp_path, level="L2"))
    assert records(tmp_path / "dump", 1)[0]["kind"] == "outside", proc.stderr[-2000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("probe_runtime: ")]
    assert said[-1].startswith(f"probe_runtime: records were written to {tmp_path / 'dump'}; besides them, the "
                               "compiled step at "), said
    assert "(output) returned -inf only, beside finite values, with its Parameters finite, in step 0: taken for a " \
           "mask made by design" in said[-1], said


@pytest.mark.parametrize("case", ["spoiling", "neglog"])
def test_a_minus_inf_only_overflow_that_is_no_mask_is_recorded(tmp_path, case):
    """Not taken for a mask: a step whose -inf only output came with a
    Parameter it wrote -inf into, and a scalar -inf (log of 0, no finite
    value beside it)."""
    proc = _hunt_case(tmp_path, case, str(write_runtime_config(tmp_path, level="L2", nums=1)))
    assert not (tmp_path / "dump" / "step0").exists(), proc.stderr[-2000:]
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].split(".")[0] in ("Exp", "Log", "Neg"), first
    assert "taken for a mask" not in proc.stderr


def test_a_frozen_parameter_made_minus_inf_by_the_step_is_recorded(tmp_path):
    """A hunt's finding: a frozen Parameter (a running statistic) finite
    before the step and -inf after it was taken for a mask kept as a
    Parameter, and the run said "no overflow found"; a mask is -inf
    before the step too."""
    proc = _hunt_case(tmp_path, "tracked", str(write_runtime_config(tmp_path, level="L2", nums=1)))
    assert "no overflow found" not in proc.stderr, proc.stderr[-2000:]
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].startswith("Mul."), first


def test_an_argument_holding_inf_on_entry_is_named(tmp_path):
    """A hunt's finding: data holding inf gave "First recorded overflow in
    step1: MatMul...; where it started is not known". As at L1, the record
    says the step's argument held inf/nan on entry."""
    _hunt_case(tmp_path, "data", str(write_runtime_config(tmp_path, level="L2", nums=1)))
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is False and first["entered"]["source"] == "outside", first
    assert "argument 0 held inf/nan on entry" in first["entered"]["message"], first
    last = report_last_line(tmp_path / "dump")
    assert last.startswith("1 record in 1 step/rank folder. Overflow entered in step1/rank: non-finite input "
                           "entered with the arguments of the compiled step at"), last


def test_a_jit_region_turning_a_frozen_parameter_minus_inf_is_recorded(tmp_path):
    """A hunt's finding: a @jit region whose ops.assign overflowed a frozen
    Parameter from finite to -inf was taken for a mask kept as a Parameter
    (by design), and the run said "no overflow found"."""
    config = write_runtime_config(tmp_path, level="L1", nums=-1)
    proc = run_script(tmp_path, "jit_masks.py", JIT_MASKS, "tracked", str(config))
    assert not (tmp_path / "dump" / "step0").exists(), proc.stderr[-2000:]
    (only,) = records(tmp_path / "dump", 1)
    assert only["kind"] == "outside" and "Parameter stat" in only["nonfinite"], only
    assert "wrote inf/nan into Parameter stat, finite when it started" in only["message"], only


JIT_TRACE = """
import sys, hashlib, numpy as np, mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
case, config = sys.argv[1], sys.argv[2]
debugger = None
if config != "none":
    from probe_runtime import PrecisionDebugger
    debugger = PrecisionDebugger(config_path=config)
try:
    decorate = ms.jit(capture_mode="trace")
except TypeError:  # a release without capture modes
    print("no capture_mode")
    sys.exit(0)
net = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")


@decorate
def log_score(p, y):  # log of 0 in step 1
    return ops.log(ops.abs(p * y))


@decorate
def scored(p, y):  # its second output overflows in step 1; the loss does not take it
    return p * 2.0, ops.exp(y * 100.0)


def forward(x, y):
    if case == "log":
        return log_score(net(x), y).mean()
    a, b = scored(net(x), y)
    return a.mean() + ops.where(ops.isinf(b), ops.zeros_like(b), b).mean() * 0.0


opt = nn.SGD(net.trainable_params(), 1e-3)
grad_fn = ms.value_and_grad(forward, None, opt.parameters)
losses = []
for step in range(3):
    big = step == 1
    y = np.full((2, 1), (0.0 if big else 1.0) if case == "log" else (10.0 if big else 0.01), np.float32)
    if debugger is not None:
        debugger.start(net)
    loss, grads = grad_fn(ms.Tensor(np.full((2, 4), 0.5, np.float32)), ms.Tensor(y))
    opt(grads)
    if debugger is not None:
        debugger.stop()
        debugger.step()
    losses.append(repr(float(loss.asnumpy())))
digest = hashlib.sha256(b"".join(p.asnumpy().tobytes() for p in net.get_parameters())).hexdigest()
print("state", losses, digest)
"""


def _jit_trace(tmp_path, case: str, config: str):
    proc = run_script(tmp_path, "jit_trace.py", JIT_TRACE, case, config)
    if "no capture_mode" in proc.stdout:
        pytest.skip("this MindSpore release has no jit capture_mode")
    return proc


@pytest.mark.parametrize("case, op", [("log", "Log."), ("kept", "Exp.")])
def test_a_trace_mode_jit_region_is_replayed_and_named(tmp_path, case, op):
    """A hunt's finding: a ``jit(capture_mode="trace")`` function does not
    run through ``_JitExecutor``, so its log(0) was reported as "non-finite
    input entered at the first checked call: input_args[0] of
    Tensor.mean.0.forward, made outside the checked window". Its begin and
    end are wrapped now: the kernel is named inside the region, as in ast
    mode, and the replay leaves training unchanged."""
    plain = _jit_trace(tmp_path, case, "none").stdout
    checked = _jit_trace(tmp_path, case, str(write_runtime_config(tmp_path, level="L1", nums=1)))
    assert plain.splitlines()[-1] == checked.stdout.splitlines()[-1], (plain, checked.stdout)
    assert not (tmp_path / "dump" / "step0").exists(), checked.stderr[-2000:]
    first = records(tmp_path / "dump", 1)[0]
    assert first["origin"] is True and first["name"].startswith(op), first
    assert first["inside"] == f"Jit.{'log_score' if case == 'log' else 'scored'}.0.forward", first


CARRIED_ON = """
import sys, numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn, ops, Tensor, Parameter
from mindspore.train import Model
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
from probe_runtime import PrecisionDebugger, OverflowCheckCallback
debugger = PrecisionDebugger(config_path=sys.argv[1])


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.full((4,), 0.5, np.float32)), name="w")
        self.fc = nn.Dense(4, 1)

    def construct(self, x):
        return self.fc(ops.sqrt(x * self.w))  # sqrt's backward is inf where x is 0


def batches():
    for i in range(5):
        yield np.full((4,), 0.0 if i == 2 else 1.0, np.float32), np.zeros((1,), np.float32)


net = Net()
model = Model(net, nn.MSELoss(), nn.Adam(net.trainable_params(), learning_rate=0.01))
data = ds.GeneratorDataset(batches, ["x", "y"], shuffle=False).batch(1)
model.train(1, data, callbacks=[OverflowCheckCallback(debugger)], dataset_sink_mode=False)
"""


def test_parameters_a_carried_overflow_spread_to_are_that_overflows(tmp_path):
    """A hunt's finding: step 2's SqrtGrad overflow (recorded) left ``w``
    NaN; step 3 carried it on into ``fc.weight`` and ``fc.bias``; step 4
    then said its Parameters held inf/nan "before this step, outside what
    was checked", though every step was checked. They are step 2's too."""
    config = write_runtime_config(tmp_path, level="L2", nums=-1)
    proc = run_script(tmp_path, "carried_on.py", CARRIED_ON, config)
    assert records(tmp_path / "dump", 2)[0]["name"].startswith("SqrtGrad."), proc.stderr[-2000:]
    for step in (3, 4):
        message = records(tmp_path / "dump", step)[0]["message"]
        assert "since the overflow recorded in step 2" in message, (step, message)
    # a review's finding: step 3 started from inf/nan Parameters and was not checked kernel by kernel, so an
    # overflow of its own that spread to fc.weight would look the same: said, not taken for step 2's
    assert "or an overflow of step 3, which started from inf/nan Parameters" in message, message
    assert "outside what was checked" not in proc.stderr, proc.stderr[-3000:]
