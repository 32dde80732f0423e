"""The MSAdapter scenario (issue #36): PyTorch code on MindSpore, checked.

Runs ``train_torch.py`` (PyTorch-style training on mindnlp 0.5.1's
mindtorch) in the environment ``tools/make-msadapter-env.sh`` builds
(``.mindspore-envs/msadapter``, or ``MSADAPTER_PYTHON``), one case per
process: the layer changes MindSpore's Tensor methods and what ``str``
reads on its dtypes for the whole process. Skipped, with the reason, when
that environment is absent (a plain clone); .ci/run builds it.

Each case checks what a user reads: the first record (name, origin,
``where`` at the user's line), dump.json's ``framework``, and the last line
of ``probe report``; a run where nothing overflows must train bit for bit
as without the debugger.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional

import pytest

from conftest import REPO, probe_command

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "train_torch.py"
#: the user's line of each case's overflowing call in train_torch.py
CASES = {
    "exp": ("Torch.exp.0.forward", "torch.exp("),
    "log0": ("Torch.log.0.forward", "torch.log("),
    "div0": ("Tensor.__truediv__.0.forward", "/ (h * 0 + 1 - bad)"),
}


def env_python() -> Path:
    """The MSAdapter environment's python, or skip saying why."""
    given = os.environ.get("MSADAPTER_PYTHON")
    python = Path(given) if given else REPO / ".mindspore-envs" / "msadapter" / "bin" / "python"
    if not python.exists():
        pytest.skip("no MSAdapter environment (MindSpore 2.7.0 + mindnlp 0.5.1's mindtorch): build it with "
                    "tools/make-msadapter-env.sh (or point MSADAPTER_PYTHON at one); .ci/run does")
    probe = subprocess.run([str(python), "-c", "import mindtorch, torch, mindspore, probe_runtime; "
                            "assert isinstance(torch.tensor(0.0), mindspore.Tensor); print(probe_runtime.__file__)"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot import mindtorch and probe_runtime: rebuild it with "
                    f"tools/make-msadapter-env.sh ({probe.stderr.strip()[-300:]})")
    if not Path(probe.stdout.strip().splitlines()[-1]).resolve().is_relative_to(REPO.resolve()):
        pytest.skip(f"{python} runs another checkout's probe_runtime: rebuild it here with tools/make-msadapter-env.sh")
    return python


@pytest.fixture(scope="module")
def python() -> Path:
    return env_python()


def run(python: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """train_torch.py in its own process, in ``cwd`` (a failed graph
    compile writes rank_0/ into the current folder)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("PROBE_")}
    full.update(env)
    proc = subprocess.run([str(python), str(SCRIPT)], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return proc


def losses(proc: subprocess.CompletedProcess) -> list[str]:
    """The ``step``/``params`` lines (bytes of each loss, hash of the weights)."""
    return [line for line in proc.stdout.splitlines() if line.startswith(("step ", "params "))]


def first_record(dump: Path) -> Optional[dict]:
    """The first record of overflow.json over the steps, in step order."""
    steps = sorted(dump.glob("step*/rank/overflow.json"), key=lambda p: int(p.parent.parent.name[4:]))
    for path in steps:
        records = json.loads(path.read_text())
        if records:
            return dict(records[0], step=int(path.parent.parent.name[4:]))
    return None


def report_last_line(dump: Path) -> str:
    proc = subprocess.run([*probe_command(), "report", str(dump)], capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, proc.stdout + proc.stderr
    return lines[-1]


def user_line(snippet: str) -> int:
    """The line of train_torch.py holding ``snippet``."""
    for number, line in enumerate(SCRIPT.read_text().splitlines(), 1):
        if snippet in line:
            return number
    raise AssertionError(snippet)


@pytest.mark.parametrize("checks", ["exact", "auto"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_l1_names_the_torch_call_that_overflowed(python, tmp_path, case, checks):
    proc = run(python, tmp_path, CASE=case, LEVEL="L1", DUMP=str(tmp_path / "dump"), CHECKS=checks)
    assert proc.returncode == 0, proc.stderr[-4000:]
    record = first_record(tmp_path / "dump")
    name, snippet = CASES[case]
    assert record is not None, proc.stderr[-4000:]
    assert record["step"] == 3
    assert record["name"] == name and record["origin"] is True
    assert record["where"] == f"{SCRIPT}:{user_line(snippet)}"
    header = json.loads((tmp_path / "dump" / "step3" / "rank" / "dump.json").read_text())
    assert header["framework"] == "mindtorch" and header["level"] == "L1"
    assert name in header["data"]
    assert report_last_line(tmp_path / "dump").startswith("1 record in 1 step/rank folder. Overflow started in "
                                                          f"step3/rank: {name} (API, forward)")


def test_l1_records_follow_msprobes_names(python, tmp_path):
    """Every record of the overflowing step (overflow_nums -1), named as
    msprobe 8.3.3 names them on this layer: the torch call first, then what
    carried it (``Tensor.float``, ``Functional.cross_entropy``), backward
    records too; Primitive calls run nested inside those and are not
    entries of their own."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "level": "L1",
                                  "step": [3], "overflow_check": {"overflow_nums": -1}}))
    proc = run(python, tmp_path, CASE="exp", LEVEL="L1", CONFIG=str(config), CHECKS="exact")
    assert proc.returncode == 0, proc.stderr[-4000:]
    records = json.loads((tmp_path / "dump" / "step3" / "rank" / "overflow.json").read_text())
    names = [r["name"] for r in records]
    assert names[:4] == ["Torch.exp.0.forward", "Tensor.float.0.forward", "Functional.linear.1.forward",
                         "Functional.cross_entropy.0.forward"]
    assert "Functional.cross_entropy.0.backward" in names and "Torch.exp.0.backward" in names
    assert not [n for n in names if n.startswith(("Primitive.", "Functional.exp", "Mint"))]
    assert [r["origin"] for r in records].count(True) == 1


@pytest.mark.parametrize("checks", ["exact", "auto"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_l0_names_the_module_whose_own_code_overflowed(python, tmp_path, case, checks):
    """The overflowing call is in the model's own ``forward`` (between its
    Linear layers): L0 names that Module as the origin, at the user's line
    that called it (msprobe 8.3.3 skips the root Module and names
    ``Module.fc2.Linear`` first)."""
    proc = run(python, tmp_path, CASE=case, LEVEL="L0", DUMP=str(tmp_path / "dump"), CHECKS=checks)
    assert proc.returncode == 0, proc.stderr[-4000:]
    record = first_record(tmp_path / "dump")
    assert record is not None, proc.stderr[-4000:]
    assert record["step"] == 3
    assert record["name"] == "Module.Net.forward.0" and record["origin"] is True
    assert record["where"] == f"{SCRIPT}:{user_line('F.cross_entropy(net(x, bad), y)')}"
    assert "Net.forward itself (not in a sub-Module)" in proc.stderr
    header = json.loads((tmp_path / "dump" / "step3" / "rank" / "dump.json").read_text())
    assert header["framework"] == "mindtorch" and header["level"] == "L0"
    assert report_last_line(tmp_path / "dump").startswith(
        "1 record in 1 step/rank folder. Overflow started in step3/rank: Module.Net.forward.0 (Module, forward)")


def test_l0_records_follow_msprobes_names(python, tmp_path):
    """Module entries as msprobe names them: ``Module.<path>.<Class>``
    forward/backward with the call index last, ``parameters_grad`` from the
    layer's Parameters, in ``named_modules()`` order."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "level": "L0",
                                  "step": [3], "overflow_check": {"overflow_nums": -1}}))
    proc = run(python, tmp_path, CASE="exp", LEVEL="L0", CONFIG=str(config), CHECKS="exact")
    assert proc.returncode == 0, proc.stderr[-4000:]
    records = json.loads((tmp_path / "dump" / "step3" / "rank" / "overflow.json").read_text())
    assert [r["name"] for r in records] == [
        "Module.Net.forward.0", "Module.fc2.Linear.forward.0", "Module.fc2.Linear.parameters_grad",
        "Module.fc2.Linear.backward.0", "Module.fc1.Linear.parameters_grad", "Module.fc1.Linear.backward.0"]
    assert [r["origin"] for r in records].count(True) == 1


def test_nothing_overflowing_trains_bit_for_bit_as_without_the_debugger(python, tmp_path):
    plain = run(python, tmp_path, CASE="none")
    assert plain.returncode == 0, plain.stderr[-4000:]
    assert len(losses(plain)) == 6
    for level in ("L1", "L0"):
        for checks in ("exact", "auto"):
            dump = tmp_path / f"dump-{level}-{checks}"
            checked = run(python, tmp_path, CASE="none", LEVEL=level, DUMP=str(dump), CHECKS=checks)
            assert checked.returncode == 0, checked.stderr[-4000:]
            assert losses(checked) == losses(plain), (level, checks)
            assert first_record(dump) is None
            assert "no overflow found in 5 checked step(s)" in checked.stderr


def test_l0_refuses_a_model_that_is_not_a_module(python, tmp_path):
    script = tmp_path / "cell.py"
    script.write_text("import mindtorch, torch, mindspore\n"
                      "from probe_runtime import PrecisionDebugger\n"
                      f"d = PrecisionDebugger(task='overflow_check', dump_path={str(tmp_path / 'dump')!r}, "
                      "level='L0')\n"
                      "try:\n    d.start(mindspore.nn.Dense(2, 2))\n"
                      "except ValueError as err:\n    print('refused:', err)\n")
    proc = subprocess.run([str(python), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "refused: level L0 hooks Modules: debugger.start(model) needs a torch.nn.Module" in proc.stdout, \
        proc.stdout + proc.stderr[-3000:]


def test_mindtorch_imported_after_the_debugger_is_refused_at_start(python, tmp_path):
    script = tmp_path / "late.py"
    script.write_text("from probe_runtime import PrecisionDebugger\n"
                      f"d = PrecisionDebugger(task='overflow_check', dump_path={str(tmp_path / 'dump')!r})\n"
                      "import mindtorch, torch\n"
                      "try:\n    d.start()\n"
                      "except ValueError as err:\n    print('refused:', err)\n")
    proc = subprocess.run([str(python), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "refused: PyTorch code runs on MindSpore here (torch is mindtorch 0.5.1 (mindnlp) on MindSpore 2.7.0)" \
        in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert "import torch (and mindtorch) before building the debugger" in proc.stdout


def test_l1_names_an_overflow_a_torch_call_masked_inside_it(python, tmp_path):
    """``F.normalize`` of large float16 values: the norm it computes
    underneath overflows to inf and the division masks it (the result is
    finite zeros). Exact checks name the Primitive call inside the torch
    call, as they do for ``ops.clip_by_global_norm`` on MindSpore."""
    script = tmp_path / "masked.py"
    script.write_text("import numpy as np\nimport mindtorch, torch\nimport torch.nn.functional as F\n"
                      "from probe_runtime import PrecisionDebugger\n"
                      f"d = PrecisionDebugger(task='overflow_check', dump_path={str(tmp_path / 'dump')!r}, "
                      "level='L1', checks='exact')\n"
                      "x = torch.tensor(np.full((2, 4), 60000, np.float16))\n"
                      "d.start()\n"
                      "y = F.normalize(x, dim=1)\n"
                      "d.stop()\nd.step()\nprint('finite', bool(np.isfinite(y.asnumpy()).all()))\n")
    proc = subprocess.run([str(python), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "finite True" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    record = first_record(tmp_path / "dump")
    assert record is not None, proc.stderr[-3000:]
    assert record["name"].startswith("Primitive.") and record["origin"] is True
    assert record["inside"] == "Functional.normalize.0.forward"
    assert record["where"] == f"{script}:8"


#: a script for the tests below: a model with a BatchNorm1d; ``CASE``
#: ``bn1`` trains it on a batch of one at step 1 (mindtorch 0.5.1's CPU
#: batch_norm then writes nan into the layer's bias: the call's result stays
#: finite and the bias is not read again in the step), ``inf`` writes inf
#: into the first Linear's weight by hand after step 0 (outside the window)
STATE_SCRIPT = """\
import os
import numpy as np
import mindtorch, torch
import torch.nn as nn
from probe_runtime import PrecisionDebugger
CASE, LEVEL = os.environ["CASE"], os.environ["LEVEL"]
net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
with torch.no_grad():
    net[1].bias.copy_(torch.tensor(np.array([0.1, 0.2, 0.3, 0.4], np.float32)))
d = PrecisionDebugger(task='overflow_check', dump_path=os.path.abspath('dump'), level=LEVEL,
                      checks=os.environ['CHECKS'])
for step in range(2):
    x = torch.tensor(np.random.RandomState(0).randn(1 if CASE == 'bn1' and step == 1 else 4, 4).astype(np.float32))
    d.start(net if LEVEL == 'L0' else None)
    out = net(x)  # LINE_CALL
    d.stop()
    d.step()
    if CASE == 'inf':
        with torch.no_grad():
            net[0].weight.copy_(net[0].weight * 1e38 * 1e38)
    print('step', step, 'bias finite', bool(np.isfinite(net[1].bias.asnumpy()).all()))
"""


def run_case(python: Path, tmp_path: Path, name: str, text: str, case: str, level: str,
             checks: str) -> subprocess.CompletedProcess:
    """``text`` written to ``tmp_path/name`` and run there with CASE, LEVEL
    and CHECKS set (no PROBE_ variable of the caller's); it must succeed."""
    script = tmp_path / name
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBE_")}
    env.update(CASE=case, LEVEL=level, CHECKS=checks)
    proc = subprocess.run([str(python), str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return proc


def run_state(python: Path, tmp_path: Path, case: str, level: str, checks: str) -> tuple[dict, Path]:
    """STATE_SCRIPT in its own process; (its first record, the script)."""
    script = tmp_path / "state.py"
    proc = run_case(python, tmp_path, script.name, STATE_SCRIPT, case, level, checks)
    if case == "bn1":  # what the user's run does without the tool, untouched
        assert "step 1 bias finite False" in proc.stdout, proc.stdout
    record = first_record(tmp_path / "dump")
    assert record is not None, proc.stderr[-4000:]
    return record, script


def script_line(script: Path, snippet: str) -> int:
    return next(n for n, line in enumerate(script.read_text().splitlines(), 1) if snippet in line)


@pytest.mark.parametrize("checks", ["exact", "auto"])
def test_l1_names_batch_norm_as_the_origin_of_nan_it_wrote_into_a_weight(python, tmp_path, checks):
    """``F.batch_norm`` writes into its arguments (the running statistics;
    on mindtorch's CPU kernel, the weight and bias): what it leaves there
    is judged with its result, so the call that wrote nan into the bias is
    the origin, naming the bias by its Module name (not an input "made
    outside the checked window")."""
    record, script = run_state(python, tmp_path, "bn1", "L1", checks)
    assert record["step"] == 1
    assert record["name"] == "Functional.batch_norm.0.forward" and record["origin"] is True, record
    assert record["written"] == ["1.bias"]
    assert record["where"] == f"{script}:{script_line(script, 'LINE_CALL')}"


@pytest.mark.parametrize("checks", ["exact", "auto"])
def test_l0_judges_what_a_batchnorm_module_wrote_into_its_own_state(python, tmp_path, checks):
    """L0: the BatchNorm1d Module's forward wrote nan into its own
    (trainable) bias and nothing read it afterwards: the Module is the
    origin (no "no overflow found")."""
    record, _ = run_state(python, tmp_path, "bn1", "L0", checks)
    assert record["step"] == 1
    assert record["name"] == "Module.1.BatchNorm1d.forward.0" and record["origin"] is True, record
    assert record["written"] == ["1.bias"]


@pytest.mark.parametrize("level", ["L0", "L1"])
def test_a_weight_holding_inf_at_start_is_named_by_its_module_name(python, tmp_path, level):
    """A Parameter that already held inf at start() is reported as such, as
    for a MindSpore Cell, named by ``named_parameters()`` (``0.weight``),
    not by the UUID the layer gives ``Parameter.name``."""
    record, _ = run_state(python, tmp_path, "inf", level, "exact")
    assert record["step"] == 1 and record["origin"] is False
    entered = record["entered"]
    assert entered["source"] == "parameter" and entered["parameter"] == "0.weight", entered
    assert entered["at_start"] is True
    assert entered["message"].startswith("Parameter 0.weight already held inf/nan at start(); first used by ")


#: ``CASE`` ``fbn``: a custom Module calling ``F.batch_norm`` on its own
#: Parameters and buffers in ``forward`` (mindtorch's CPU kernel writes nan
#: into ``b`` for the batch of one of step 1); ``noaff``: a
#: ``BatchNorm1d(affine=False)``, whose ``F.batch_norm`` makes a zeros bias
#: inside the call that the kernel writes nan into (nothing the user holds)
WRITES_SCRIPT = """\
import os
import numpy as np
import mindtorch, torch
import torch.nn as nn
import torch.nn.functional as F
from probe_runtime import PrecisionDebugger
CASE, LEVEL = os.environ["CASE"], os.environ["LEVEL"]
class FBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.ones(4)); self.b = nn.Parameter(torch.zeros(4))
        self.register_buffer("rm", torch.zeros(4)); self.register_buffer("rv", torch.ones(4))
    def forward(self, x):
        return F.batch_norm(self.fc(x), self.rm, self.rv, self.w, self.b, training=True)
net = FBN() if CASE == "fbn" else nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, affine=False), nn.Linear(4, 2))
d = PrecisionDebugger(task='overflow_check', dump_path=os.path.abspath('dump'), level=LEVEL,
                      checks=os.environ['CHECKS'])
for step in range(2):
    x = torch.tensor(np.random.RandomState(0).randn(1 if step == 1 else 4, 4).astype(np.float32))
    d.start(net if LEVEL == 'L0' else None)
    out = net(x)
    d.stop()
    d.step()
    state = [t for t in list(net.parameters()) + list(net.buffers())]
    print('step', step, 'out finite', bool(np.isfinite(out.asnumpy()).all()), 'state finite',
          all(bool(np.isfinite(t.asnumpy()).all()) for t in state))
"""


def run_writes(python: Path, tmp_path: Path, case: str, level: str, checks: str) -> tuple[Optional[dict], str]:
    """WRITES_SCRIPT in its own process; (its first record or None, its output)."""
    proc = run_case(python, tmp_path, "writes.py", WRITES_SCRIPT, case, level, checks)
    return first_record(tmp_path / "dump"), proc.stdout + proc.stderr


@pytest.mark.parametrize("checks", ["exact", "auto"])
def test_l0_names_the_state_a_modules_own_f_batch_norm_wrote(python, tmp_path, checks):
    """A custom Module's own ``F.batch_norm`` wrote nan into its bias, its
    output finite: L0 does not read a plain Module's state after each call,
    but the state the window closes with is read once; a note names the
    bias and the Module (it said "no overflow found")."""
    record, out = run_writes(python, tmp_path, "fbn", "L0", checks)
    assert "step 1 out finite True state finite False" in out, out
    assert "no overflow found" not in out
    assert record is not None and record["step"] == 1 and record["origin"] is False, out[-3000:]
    assert record["nonfinite"] == ["Parameter b"], record
    assert "Module.FBN" in record["message"], record


def test_l1_a_temporary_batch_norm_made_is_not_an_origin(python, tmp_path):
    """``BatchNorm1d(affine=False)`` on a batch of one: mindtorch's
    ``F.batch_norm`` makes a zeros bias, and the CPU kernel writes nan into
    it; its result and the user's state stay finite. ``Primitive.Zeros``
    was named the origin of nan it never made; nothing the user holds
    overflowed."""
    record, out = run_writes(python, tmp_path, "noaff", "L1", "exact")
    assert "step 1 out finite True state finite True" in out, out
    assert record is None, record


def test_sentinel_names_gradients_by_their_module_names(python, tmp_path):
    """Sentinel checks (one finiteness check of what each gradient
    computation returns) label the gradients by ``named_parameters()``
    names, as exact records name them: a fresh user's finding was the
    layer's Parameter UUIDs (``gradient of 5fbfc544-...``), which appear
    nowhere in the user's code."""
    proc = run(python, tmp_path, CASE="exp", LEVEL="L1", DUMP=str(tmp_path / "dump"), CHECKS="sentinel")
    assert proc.returncode == 0, proc.stderr[-4000:]
    record = first_record(tmp_path / "dump")
    assert record is not None and record["kind"] == "sentinel" and record["step"] == 3, record
    assert record["nonfinite"] == ["forward output 0", "gradient of fc1.weight", "gradient of fc1.bias",
                                   "gradient of fc2.weight", "gradient of fc2.bias"], record
    assert "gradient of fc1.weight" in proc.stderr


INPLACE_SCRIPT = '''
import os, numpy as np
import mindtorch, torch
import torch.nn as nn
from probe_runtime import PrecisionDebugger


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0, self.fc1, self.fc2 = nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 1)
        for layer in (self.fc0, self.fc1, self.fc2):
            layer.weight.data.fill_(1.0)
            layer.bias.data.fill_(0.0)
        self.fc0.weight.data.copy_(torch.eye(2))

    def forward(self, x):
        h = self.fc1(self.fc0(x))  # fc1 the 2nd call: its check waits for the 3rd (the batch doubles)
        if os.environ["CASE"] == "clean":
            h[torch.isinf(h)] = 0.0  # hides the inf fc1 returned
        else:
            h[:, 0] = h[:, 0] * 1e38  # the parent's own code overflows, into fc1's output
        return self.fc2(h)


net = Net()
debugger = PrecisionDebugger(task="overflow_check", dump_path=os.path.abspath("dump"), level="L0")
with torch.no_grad():
    for step in range(2):
        x = torch.tensor(np.full((1, 2), 2e38 if os.environ["CASE"] == "clean" and step == 1 else 3.0, np.float32))
        debugger.start(net)
        net(x)
        debugger.stop()
        debugger.step()
'''


@pytest.mark.parametrize("case, expected", [("clean", ("Module.fc1.Linear.forward.0", 1)),
                                            ("write", ("Module.Net.forward.0", 0))])
def test_l0_in_place_writes_in_a_parent_forward_do_not_change_what_was_judged(python, tmp_path, case, expected):
    """A hunt's finding: with MSAdapter the L0 in-place guard was left off,
    so ``h[isinf(h)] = 0`` after a sub-Module gave "no overflow found" and
    ``h[:, 0] = h[:, 0] * 1e38`` blamed the sub-Module for its parent's inf."""
    run_case(python, tmp_path, "inplace.py", INPLACE_SCRIPT, case, "L0", "exact")
    record = first_record(tmp_path / "dump")
    assert record is not None and (record["name"], record["step"]) == expected and record["origin"] is True, record
