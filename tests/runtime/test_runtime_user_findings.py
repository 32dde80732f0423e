"""Runtime problems found by a user test (each test fails without its fix).

1. backward entries computed from non-finite forward values carry the
   overflow (L1 and L0, parameters_grad too), they are not origins;
2. dump_path is created with the debugger, a run without overflow says so
   at exit and ``probe report`` then says "nothing found" (exit 1);
3. a second run into a dump_path holding an earlier run's dump of this
   rank is refused (PL411) and the earlier dump is left as it was;
4. L0: an overflow in the top Cell's own ``construct`` is pointed out.
"""
from __future__ import annotations

import io
import os
import logging
import weakref
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from probe_runtime import ConfigLintError, lifecycle  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_support import assert_origin_invariant, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
HINT = "overflow inside MLP.construct itself (not in a sub-Cell): use level L1 to see the API"


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def make(level: str = "L1", nums: int = -1, dump: str = "dump"):
        path = write_runtime_config(tmp_path, level=level, nums=nums, dump=tmp_path / dump)
        debugger = PrecisionDebugger(config_path=str(path))
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
        debugger.windows.summary.said = True  # no "no overflow found" line from these at interpreter exit
        assert_origin_invariant(debugger.dump_path)


def records(tmp_path, step=0):
    index = tmp_path / "dump" / f"step{step}" / "rank" / "overflow.json"
    return {r["name"]: r["origin"] for r in read_json(str(index))} if index.exists() else {}


class MLP(nn.Cell):
    def __init__(self, exp_at: str = ""):
        super().__init__()
        # fixed weights: with random ones exp(out * 1000) was sometimes finite and its gradient overflowed
        # in fc2's weight gradient instead (a true origin there), so the test's answer depended on the draw
        self.fc1 = nn.Dense(4, 8, weight_init="ones", bias_init="zeros")
        self.fc2 = nn.Dense(8, 3, weight_init="ones", bias_init="zeros")
        self.exp_at = exp_at

    def construct(self, x):
        h = self.fc1(x)  # no ReLU: it turns NaN into 0 on CPU
        if self.exp_at == "middle":
            h = ops.exp(h * 1000.0)  # overflows in MLP's own code, between two sub-Cells
        out = self.fc2(h)
        if self.exp_at == "end":
            out = ops.exp(out * 1000.0)
        return out


def nan_weights(*layers):
    """The state after an overflow step: these layers' weights are NaN."""
    for layer in layers:
        layer.weight.set_data(Tensor(np.full(layer.weight.shape, np.nan, np.float32)))


# -- 1. backward of a non-finite forward carries -------------------------------------
def test_l1_backward_of_nan_forward_is_carried(work):
    tmp_path, make = work
    net = MLP()
    nan_weights(net.fc1)
    labels = Tensor(np.array([0, 1]), ms.int32)
    grad_fn = ms.value_and_grad(lambda x: ops.cross_entropy(net(x), labels), None, net.trainable_params())
    debugger = make("L1")
    debugger.start()
    grad_fn(Tensor(np.ones((2, 4), np.float32)))
    debugger.stop()
    found = records(tmp_path)
    # dloss = 1.0 flows in finite; the gradient is NaN because the saved forward inputs are
    assert found["Functional.cross_entropy.0.forward"] is False
    assert found["Functional.cross_entropy.0.backward"] is False
    backward_origins = [n for n, origin in found.items() if origin and n.endswith(".backward")]
    assert backward_origins == []


def test_l0_cell_backward_and_parameters_grad_of_nan_forward_are_carried(work):
    tmp_path, make = work
    net = MLP()
    nan_weights(net.fc1, net.fc2)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
    debugger = make("L0")
    debugger.start(net)
    grad_fn(Tensor(np.ones((2, 4), np.float32)))
    debugger.stop()
    found = records(tmp_path)
    # the gradient w.r.t. fc2's output is finite (ones): fc2's weight gradient is NaN
    # because its forward input was, its input gradient because its weights were
    assert found["Cell.fc2.Dense.parameters_grad"] is False
    assert found["Cell.fc2.Dense.backward.0"] is False
    assert not any(found.values()), found


# -- 2. dump_path created; a run without overflow says so ----------------------------------
def test_the_all_clear_counts_the_steps_outside_the_step_filter(tmp_path, monkeypatch, capsys):
    """A step filter that leaves steps unchecked while the loss turns NaN
    in them: the all-clear does not read as a bare 'no overflow found', it
    says how many steps ran outside the filter and were not checked."""
    isolate(monkeypatch, tmp_path)
    path = write_runtime_config(tmp_path, step=[0, 1])
    debugger = PrecisionDebugger(config_path=str(path))
    for step in range(6):
        debugger.start()
        value = 100.0 if step >= 3 else 1.0  # exp overflows float32 from step 3 on: outside the filter
        ops.exp(Tensor(np.full(3, value, np.float32)))
        debugger.stop()
        debugger.step()
    capsys.readouterr()
    lifecycle.at_exit(weakref.ref(debugger))
    err = capsys.readouterr().err
    assert "no overflow found in 2 checked step(s)" in err
    assert ("4 step(s) ran outside the config's step filter and were not checked (step 2-5): an overflow there "
            "is not seen") in err
    assert not list((tmp_path / "dump").glob("step*"))


def test_reaching_overflow_nums_says_which_later_steps_were_not_checked(tmp_path, monkeypatch, capsys):
    """A fresh user's finding: with overflow_nums 1 (msprobe's default) the
    step-0 record stopped detection, a real overflow in step 2 went unseen,
    and nothing said so at exit. The steps that ran after it are named;
    with no limit nothing is added."""
    for nums, said in ((1, True), (-1, False)):
        (tmp_path / str(nums)).mkdir()
        isolate(monkeypatch, tmp_path / str(nums))
        path = write_runtime_config(tmp_path / str(nums), nums=nums)
        debugger = PrecisionDebugger(config_path=str(path))
        for step in range(4):
            debugger.start()
            ops.exp(Tensor(np.full(3, 100.0 if step in (0, 2) else 1.0, np.float32)))
            debugger.stop()
            debugger.step()
        capsys.readouterr()
        lifecycle.at_exit(weakref.ref(debugger))
        err = capsys.readouterr().err
        line = ("probe_runtime: overflow_nums=1 reached in step 0, so detection stopped there: 3 later step(s) ran "
                "and were not checked (step 1, 2, 3); set overflow_check.overflow_nums higher (-1: no limit) to "
                "check them")
        assert (line in err) is said and "no overflow found" not in err, err
        steps = sorted(p.name for p in (tmp_path / str(nums) / "dump").glob("step*"))
        assert steps == (["step0"] if said else ["step0", "step2"])


def test_the_all_clear_says_when_the_rank_filter_leaves_this_process_out(tmp_path, monkeypatch, capsys):
    """A single process (rank 0) with "rank": [3] (its PL304 turned off in
    the project): every step overflows and none is checked; the all-clear
    said "no overflow found in 0 checked step(s)" and nothing of why."""
    isolate(monkeypatch, tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nignore = ["PL303", "PL304"]\n')
    path = write_runtime_config(tmp_path, rank=[3])
    debugger = PrecisionDebugger(config_path=str(path))
    for _ in range(2):
        debugger.start()
        ops.exp(Tensor(np.full(3, 100.0, np.float32)))
        debugger.stop()
        debugger.step()
    capsys.readouterr()
    lifecycle.at_exit(weakref.ref(debugger))
    err = capsys.readouterr().err
    assert "no overflow found in 0 checked step(s)" in err
    assert "rank 0 is not in the config's rank filter [3], so no step of this process was checked" in err


def test_no_overflow_leaves_empty_dump_path_and_says_so(work, capsys):
    tmp_path, make = work
    debugger = make("L1")
    dump = tmp_path / "dump"
    assert dump.is_dir() and not dump.is_symlink() and (dump.stat().st_mode & 0o777) == 0o750
    for _ in range(2):
        debugger.start()
        ops.exp(Tensor(np.ones(3, np.float32)))
        debugger.stop()
        debugger.step()
    capsys.readouterr()
    lifecycle.at_exit(weakref.ref(debugger))
    lifecycle.at_exit(weakref.ref(debugger))  # atexit after SIGTERM: said once
    err = capsys.readouterr().err
    assert err.count("probe_runtime:") == 1
    assert f"probe_runtime: no overflow found in 2 checked step(s); dump_path: {dump}" in err
    from msprobe_lint import report

    out, err_stream = io.StringIO(), io.StringIO()
    assert report.main(str(dump), out=out, err=err_stream) == 1
    assert "no such file" not in out.getvalue() + err_stream.getvalue()
    assert "no dump found" in out.getvalue() + err_stream.getvalue()


def test_nothing_said_without_start_or_with_a_record(work, capsys):
    tmp_path, make = work
    idle = make("L1", dump="idle")
    busy = make("L1", dump="busy")
    busy.start()
    ops.exp(Tensor(np.full(3, 100.0, np.float32)))
    busy.stop()
    capsys.readouterr()
    for debugger in (idle, busy):
        lifecycle.at_exit(weakref.ref(debugger))
    assert "no overflow found" not in capsys.readouterr().err


# -- 3. a second run into the same dump_path ------------------------------------------------
def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def test_second_run_into_an_earlier_dump_is_refused(work, monkeypatch):
    tmp_path, make = work
    first = make("L1")
    first.start()
    ops.exp(Tensor(np.full(3, 100.0, np.float32)))
    first.stop()
    dump = tmp_path / "dump"
    assert (dump / "step0" / "rank" / "overflow.json").is_file()
    before = snapshot(dump)
    # the first run ends (what exit runs): built again with the same arguments while it was
    # running, PrecisionDebugger would return it, as msprobe's singleton does (test_debugger.py)
    first.finish()
    with pytest.raises(ConfigLintError) as caught:
        make("L1")
    assert "PL411" in str(caught.value) and "step0/rank" in str(caught.value)
    assert snapshot(dump) == before
    # a worker of a distributed job counts a single process's folder ("rank") as an earlier run's too
    monkeypatch.setenv("RANK_ID", "1")
    with pytest.raises(ConfigLintError):
        make("L1")
    assert snapshot(dump) == before


@pytest.mark.parametrize("nested, rank_id", [("rank/step0", None), ("rank0/step2", None), ("rank1/step0", "1"),
                                             ("rank/step0", "1")])
def test_an_earlier_dump_nested_rank_first_is_refused(work, monkeypatch, nested, rank_id):
    """`probe report` reads ``rank{R}/step{N}`` as a dump too: a run into
    a dump_path holding one of this process's rank (or a single process's
    ``rank``) would be read with it as one run. The gate counted only
    ``step*/rank*`` and let it in."""
    tmp_path, make = work
    earlier = tmp_path / "dump" / nested
    earlier.mkdir(parents=True)
    (earlier / "overflow.json").write_text("[]")
    os.chmod(tmp_path / "dump", 0o750)
    before = snapshot(tmp_path / "dump")
    if rank_id is not None:
        monkeypatch.setenv("RANK_ID", rank_id)
    with pytest.raises(ConfigLintError) as caught:
        make("L1")
    assert "PL411" in str(caught.value) and f"({nested})" in str(caught.value), str(caught.value)
    assert snapshot(tmp_path / "dump") == before


def test_sibling_rank_folders_block_a_single_process_not_a_worker(work, monkeypatch):
    """Workers of one job write step*/rank0, rank1 ... side by side: a
    worker is not blocked by its siblings' folders, but a later
    single-process run (folder "rank") into that dump_path would be mixed
    with them and is refused (a user found it started)."""
    tmp_path, make = work
    monkeypatch.setenv("RANK_ID", "0")
    first = make("L1", dump="job")
    first.start()
    ops.exp(Tensor(np.full(3, 100.0, np.float32)))
    first.stop()
    dump = tmp_path / "job"
    assert (dump / "step0" / "rank0" / "overflow.json").is_file()
    monkeypatch.setenv("RANK_ID", "1")
    make("L1", dump="job")  # a sibling worker (its writer marker, .probe-writer-rank1.lock, is its only trace)
    before = snapshot(dump)
    monkeypatch.delenv("RANK_ID")
    with pytest.raises(ConfigLintError) as caught:
        make("L1", dump="job")
    assert "PL411" in str(caught.value) and "step0/rank0" in str(caught.value)
    assert snapshot(dump) == before


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="as root, for whom os.access lets /proc through (else PL407 says it is not writable)")
def test_a_dump_path_that_cannot_be_created_is_refused(work):
    """Permission checks pass for root anywhere; creating the folder is
    the test that cannot be fooled (a user's /proc/dump started and ran
    with detection off, exit 0)."""
    tmp_path, _ = work
    path = write_runtime_config(tmp_path, dump=Path("/proc/probe-dump"))
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(config_path=str(path))
    # the lint's own PL407 (it makes a folder there too) comes before the runtime's attempt
    assert "PL407" in str(caught.value) and "dump_path /proc/probe-dump: no folder can be created in its nearest " \
        "existing parent /proc" in str(caught.value)


def test_a_config_name_msprobe_refuses_is_refused(work):
    """msprobe's PrecisionDebugger refuses a config whose name does not end
    in lower-case '.json'; so does the drop-in (PL410), with the file kept."""
    tmp_path, _ = work
    path = write_runtime_config(tmp_path)
    renamed = path.rename(tmp_path / "Config.JSON")
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(config_path=str(renamed))
    assert "PL410" in str(caught.value) and "'Config.JSON'" in str(caught.value)
    assert renamed.is_file() and not (tmp_path / "dump").exists()


@pytest.mark.parametrize("given", ["path", "bytes"])
def test_a_config_path_that_is_no_string_is_refused_as_msprobe_does(work, given):
    """A pathlib.Path gave six "internal error in rule PL40x" lines, bytes a
    TypeError traceback; msprobe says config_path must be a string."""
    tmp_path, _ = work
    path = write_runtime_config(tmp_path)
    value = path if given == "path" else str(path).encode()
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(config_path=value)
    assert "config_path must be a string" in str(caught.value) and "internal error" not in str(caught.value)
    assert not (tmp_path / "dump").exists()


def test_an_uncaught_refusal_prints_its_message_without_a_traceback(tmp_path):
    import subprocess
    import sys

    path = write_runtime_config(tmp_path, dump=Path("relative"))
    proc = subprocess.run([sys.executable, "-c", "from probe_runtime import PrecisionDebugger; "
                           f"PrecisionDebugger(config_path={str(path)!r})"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("probe_runtime refuses to start; the config has errors:\n") and "PL401" in proc.stderr


def test_an_uncaught_usage_error_names_the_users_line_without_a_traceback(tmp_path):
    """start() without a model at L0 was a traceback through the tool's
    own frames; the mistake is the user's call, named by its line."""
    import subprocess
    import sys

    path = write_runtime_config(tmp_path, level="L0")
    script = tmp_path / "train.py"
    script.write_text("from probe_runtime import PrecisionDebugger\n"
                      f"debugger = PrecisionDebugger(config_path={str(path)!r})\n"
                      "debugger.start()\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{script}:3: level L0 checks the Cells of a model" in proc.stderr


def test_a_debugger_whose_start_was_refused_says_nothing_at_exit(work, capsys):
    tmp_path, make = work
    first, second = make("L1", dump="d"), make("L1", dump="d")
    first.start()
    second.start()  # refused: another debugger's window is open
    ops.exp(Tensor(np.full(3, 100.0, np.float32)))
    second.stop()
    first.stop()
    capsys.readouterr()
    for debugger in (first, second):
        lifecycle.at_exit(weakref.ref(debugger))
    assert "no overflow found" not in capsys.readouterr().err


# -- 4. L0: overflow in the top Cell's own code ------------------------------------------------
@pytest.mark.parametrize("exp_at, nums", [("middle", 1), ("end", -1)])
def test_l0_overflow_in_top_cell_code_is_pointed_out(work, caplog, exp_at, nums):
    tmp_path, make = work
    net = MLP(exp_at)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
    debugger = make("L0", nums=nums)
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        debugger.start(net)
        grad_fn(Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
    found = records(tmp_path)
    # the model's own code made it (between sub-Cells, or at the end): the model is the origin (issue 33)
    assert found.pop("Cell.MLP.forward.0") is True, found
    assert not any(found.values()), found  # the rest (with overflow_nums -1) carried
    assert [r.getMessage() for r in caplog.records].count("probe_runtime: " + HINT) == 1


class Scaled(nn.Cell):
    """A model with a Parameter of its own (as ``pos_embed`` or ``cls_token``), used in its own construct."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2, weight_init="ones", bias_init="zeros")
        self.scale = ms.Parameter(Tensor(np.ones(2, np.float32)), name="scale")

    def construct(self, x):
        return self.fc(x) * self.scale


@pytest.mark.parametrize("model", ["own parameter", "bare Dense"])
def test_l0_a_nan_parameter_of_the_model_itself_is_named_not_its_construct(work, caplog, model):
    """A fresh user's finding: inf/nan in a Parameter the model given to
    start() owns directly was blamed on its construct ("use level L1"),
    contradicting the record's own statistics. It is named as the Parameter,
    as it is for a nested Cell, and no L1 hint is given."""
    tmp_path, make = work
    net = Scaled() if model == "own parameter" else nn.Dense(4, 2)
    bad = net.scale if model == "own parameter" else net.weight
    bad.set_data(Tensor(np.full(bad.shape, np.inf, np.float32)))  # between windows: no checked code wrote it
    debugger = make("L0")
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        debugger.start(net)
        net(Tensor(np.ones((3, 4), np.float32)))
        debugger.stop()
    name = "Cell.Scaled.forward.0" if model == "own parameter" else "Cell.Dense.forward.0"
    assert records(tmp_path) == {name: False}
    record = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))[0]
    assert record["entered"]["source"] == "parameter", record
    assert record["entered"]["message"].startswith(f"Parameter {bad.name} already held inf/nan at start()")
    assert not any("construct itself" in r.getMessage() for r in caplog.records)


def test_l0_no_hint_when_a_sub_cell_is_the_origin(work, caplog):
    tmp_path, make = work
    net = MLP()
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        net.fc1.weight.set_data(Tensor(np.ones((8, 4), np.float32)))
        debugger = make("L0")
        debugger.start(net)
        net(Tensor(np.full((2, 4), 3e38, np.float32)))  # fc1 overflows from finite inputs
        debugger.stop()
    assert records(tmp_path)["Cell.fc1.Dense.forward.0"] is True
    assert not any("construct itself" in r.getMessage() for r in caplog.records)


def test_l1_a_gradient_sum_no_call_made_is_not_said_to_come_from_outside(work):
    """A fresh user's finding: a float16 tensor used twice gets 40000 from
    each use; MindSpore's autograd adds them (inf), which no API call does.
    No record is an origin, as it should be, but the first one said the inf
    was "made outside the checked window", which it was not."""
    tmp_path, make = work
    dense = nn.Dense(4, 4, weight_init="ones", bias_init="zeros").to_float(ms.float16)

    def forward(x, k):
        h = dense(x)
        a, b = h * 1.0, h * 1.0
        return (a.astype(ms.float32) * k).sum() + (b.astype(ms.float32) * k).sum()

    grad_fn = ms.value_and_grad(forward, None, dense.trainable_params())
    debugger = make("L1", nums=1)
    debugger.start()
    grad_fn(Tensor(np.ones((1, 4), np.float16)), Tensor(40000.0, ms.float32))
    debugger.stop()
    found = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    assert found and not any(r["origin"] for r in found)
    said = found[0]["entered"]["message"]
    assert "adding up the gradients of a tensor used more than once" in said, said


class InfBackward(nn.Cell):
    """A custom backward that builds its gradient on the host."""

    def construct(self, x):
        return x * 1.0

    def bprop(self, x, out, dout):
        return (Tensor(np.full(x.shape, np.inf, np.float32)),)


def test_l1_a_gradient_a_bprop_made_without_a_call_names_the_bprop_among_the_causes(work):
    """A hunt's finding: the carried record's causes (code outside the
    window, a jit region's backward, a gradient sum) left out the one that
    was true: a Cell's own ``bprop`` returning a tensor no checked call
    made."""
    tmp_path, make = work
    fc1, ste, fc2 = nn.Dense(4, 8), InfBackward(), nn.Dense(8, 2)
    grad_fn = ms.value_and_grad(lambda x: fc2(ste(ops.relu(fc1(x)))).sum(), None,
                                fc1.trainable_params() + fc2.trainable_params())
    debugger = make("L1", nums=1)
    debugger.start()
    grad_fn(Tensor(np.ones((2, 4), np.float32)))
    debugger.stop()
    found = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    assert found and not found[0]["origin"]
    assert "a Cell's own bprop returning a tensor no checked call made" in found[0]["entered"]["message"], found


class SqrtBlock(nn.Cell):
    """sqrt(fc(x)): finite forward at fc(x) = 0, inf gradient (its own code)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return ops.sqrt(self.fc(x))


class SqrtNet(nn.Cell):
    def __init__(self, pre: bool):
        super().__init__()
        self.use_pre = pre
        self.pre = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.b1 = SqrtBlock()
        self.head = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        if self.use_pre:
            x = self.pre(x)
        return self.head(self.b1(x)).sum()


@pytest.mark.parametrize("pre", [False, True], ids=["fed-with-data", "after-a-dense"])
@pytest.mark.parametrize("nums", [1, -1])
def test_l0_a_cells_own_backward_code_is_the_origin_and_comes_first(work, pre, nums):
    """A fresh user's finding: sqrt(0) in a Cell's own construct is finite
    forward, inf backward. The gradient its parent handed it was finite, so
    that Cell is where the overflow started (L1 names sqrt's backward). L0
    wrote its sub-Cell's carried records first (with overflow_nums 1 the
    only record), and when the Cell was fed with data never named it at
    all ("where it started is not known")."""
    tmp_path, make = work
    net = SqrtNet(pre)
    params = [p for p in net.trainable_params() if pre or not p.name.startswith("pre")]
    grad_fn = ms.value_and_grad(net, None, params)
    debugger = make("L0", nums=nums)
    debugger.start(net)
    grad_fn(Tensor(np.zeros((2, 4), np.float32)))
    debugger.stop()
    found = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    first = found[0]
    assert first["name"] == "Cell.b1.SqrtBlock.backward.0" and first["origin"] is True, found
    assert first["entered"]["source"] == "own-construct" and "SqrtBlock.construct itself, in the backward" \
        in first["entered"]["message"]
    assert [r["name"] for r in found].count("Cell.b1.SqrtBlock.backward.0") == 1
    assert not any(r["origin"] for r in found[1:])
    if nums == -1:
        assert "Cell.b1.fc.Dense.backward.0" in [r["name"] for r in found]


def test_l0_a_gradient_the_models_own_code_made_is_not_blamed_on_the_loss(work):
    """A fresh user's finding: a float16 gather in the model's own
    construct sums 8 x 10000 in its backward (inf) into the gradient of a
    Parameter the model owns itself. The record said the overflow lay "in
    the loss function, or other code outside the model"; it now names the
    model's own construct among the places to look."""
    tmp_path, make = work

    class MoE(nn.Cell):
        def __init__(self):
            super().__init__()
            self.table = ms.Parameter(Tensor(np.ones((4, 4)), ms.float16), name="experts")

        def construct(self, x):
            _, idx = ops.topk(x, 1)
            return ops.gather(self.table, idx.squeeze(-1), 0)

    net = MoE()
    grad_fn = ms.value_and_grad(lambda x: (net(x).astype(ms.float32) * 10000.0).sum(), None,
                                net.trainable_params())
    debugger = make("L0", nums=1)
    debugger.start(net)
    grad_fn(Tensor(np.eye(4, dtype=np.float32)[np.zeros(8, int)]))
    debugger.stop()
    (record,) = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    assert record["kind"] == "outside" and "gradient of experts" in record["message"]
    assert "in the model's own construct between its sub-Cells" in record["message"], record


def test_l0_a_sub_cell_returning_a_namedtuple_still_returns_one(work):
    """A fresh user's finding: under a gradient computation L0 handed the
    parent a plain tuple instead of the sub-Cell's namedtuple, and
    ``o.h`` raised AttributeError in the user's construct."""
    import collections

    tmp_path, make = work
    Out = collections.namedtuple("Out", ["h", "aux"])

    class Inner(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")

        def construct(self, x):
            h = self.fc(x)
            return Out(h, h * 2)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def construct(self, x):
            o = self.inner(x)
            return (o.h + o.aux).sum()

    net = Net()
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    x = Tensor(np.ones((2, 4), np.float32))
    plain_loss, plain_grads = grad_fn(x)
    debugger = make("L0")
    debugger.start(net)
    loss, grads = grad_fn(x)
    debugger.stop()
    assert float(loss.asnumpy()) == float(plain_loss.asnumpy())
    assert all((a.asnumpy() == b.asnumpy()).all() for a, b in zip(grads, plain_grads))


@pytest.mark.parametrize("made", ["data", "own"])
def test_l0_an_input_passed_by_keyword_is_an_input(work, made):
    """A fresh user's finding: ``self.blk(h, mask=m)`` with ``m`` holding
    inf. The keyword input was not part of Blk's entry (``input_kwargs``
    empty), so Blk was called the origin. It is carried: the inf came with
    the batch ("data") or from the model's own ``ops.exp`` ("own")."""
    tmp_path, make = work

    class Blk(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

        def construct(self, h, mask=None):
            return self.fc(h + mask)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.pre = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
            self.blk = Blk()

        def construct(self, x, m):
            h = self.pre(x)
            if made == "own":
                m = ops.exp(m)
            return self.blk(h, mask=m)

    net = Net()
    grad_fn = ms.value_and_grad(lambda x, m: net(x, m).sum(), None, net.trainable_params())
    debugger = make("L0")
    debugger.start(net)
    grad_fn(Tensor(np.ones((2, 4), np.float32)),
            Tensor(np.full((2, 4), np.inf if made == "data" else 100.0, np.float32)))
    debugger.stop()
    found = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    origins = [r["name"] for r in found if r["origin"]]
    assert "Cell.blk.Blk.forward.0" not in origins, found
    if made == "own":
        assert origins == ["Cell.Net.forward.0"] and found[0]["name"] == "Cell.Net.forward.0"
    else:
        assert origins == [] and "input_kwargs.mask of Cell.blk.Blk.forward.0" in found[0]["entered"]["message"]
    data = read_json(str(tmp_path / "dump" / "step0" / "rank" / "dump.json"))["data"]
    assert "mask" in data["Cell.blk.Blk.forward.0"]["input_kwargs"]


def test_l0_a_model_called_by_keyword_is_not_said_to_make_what_it_got(work):
    """A reviewer's finding: ``net(x, mask=m)`` with ``m`` holding inf; the
    model given to start() saw only its positional inputs, so its own
    construct was said to have made the inf it was handed."""
    tmp_path, make = work

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

        def construct(self, x, mask=None):
            return self.fc(x + mask)

    net = Net()
    grad_fn = ms.value_and_grad(lambda x, m: net(x, mask=m).sum(), None, net.trainable_params())
    debugger = make("L0")
    debugger.start(net)
    grad_fn(Tensor(np.ones((2, 4), np.float32)), Tensor(np.full((2, 4), np.inf, np.float32)))
    debugger.stop()
    found = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    assert not [r for r in found if r["origin"]], found
    assert "own-construct" not in [(r.get("entered") or {}).get("source") for r in found]


def test_l0_a_sub_cell_fed_through_a_list_keeps_its_parent_from_being_blamed(work):
    """A reviewer's finding: a sub-Cell that takes its tensor inside a list
    gets no gradient hook on it, so when its own backward makes the inf
    (sqrt at 0) nothing says so; the parent's output gradient was finite,
    and the parent must not then be named as the Cell whose own code made
    it."""
    tmp_path, make = work

    class ListSqrt(nn.Cell):
        def construct(self, items):
            return ops.sqrt(items[0])

    class Parent(nn.Cell):
        def __init__(self):
            super().__init__()
            self.a = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
            self.b = ListSqrt()

        def construct(self, x):
            return self.b([self.a(x)])

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.p = Parent()
            self.head = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

        def construct(self, x):
            return self.head(self.p(x)).sum()

    net = Net()
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    debugger = make("L0")
    debugger.start(net)
    grad_fn(Tensor(np.zeros((2, 4), np.float32)))
    debugger.stop()
    found = read_json(str(tmp_path / "dump" / "step0" / "rank" / "overflow.json"))
    assert found and not any(r["name"].startswith("Cell.p.Parent.backward") and r["origin"] for r in found), found
