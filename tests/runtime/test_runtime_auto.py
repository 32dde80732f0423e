"""Auto checks (``checks="auto"``): the same first record as exact checks,
training bit-identical to a run without the debugger, and what a replay
refuses or cannot reproduce said, with exact checks in the next window.

The comparisons discover what they compare: every runtime case folder
(``tests/data/runtime_cases``, and ``../shared/cases/runtime`` when it is
there), every family of ``tests/runtime_families.py`` with each overflow
kind in a later step than the first, and every scenario of
``tests/runtime_scenarios.py``; a case added there later is compared too.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from conftest import DATA, REPO, SHARED_CASES
from runtime_support import (PatchedState, assert_origin_invariant, assert_same_training, isolate, train_mlp,
                             write_runtime_config)

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from msprobe_lint.report import main as report_main  # noqa: E402
from probe_runtime import PrecisionDebugger  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_families import FAMILIES, train  # noqa: E402
from runtime_scenarios import SCENARIOS  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
OWN_CASES = DATA / "runtime_cases"
#: case or scenario id -> why auto checks give a different first record than exact checks (docs/checks.md,
#: "Auto checks"); an entry whose difference no longer happens fails the test, so none goes stale
DOCUMENTED: dict[str, str] = {}


def first_records(steps: dict) -> dict:
    """step folder -> what the comparison holds equal of its first record:
    name, origin, kind and where the overflow came in."""
    out = {}
    for step, records in steps.items():
        if records:
            first = records[0]
            out[step] = (first["name"], first["origin"], first.get("kind"), (first.get("entered") or {}).get("message"))
    return out


def compare(case: str, exact: dict, auto: dict) -> None:
    """Auto checks gave the same first record in every step as exact checks,
    or ``case`` names the documented reason they differ."""
    same = first_records(exact) == first_records(auto)
    if case in DOCUMENTED:
        assert not same, f"{case}: documented as differing ({DOCUMENTED[case]}) but auto and exact now agree"
        return
    assert same, f"{case}: exact {first_records(exact)} != auto {first_records(auto)}"


def recorded(dump) -> dict:
    """step folder -> overflow.json items, under ``dump``."""
    return {p.parent.parent.name: read_json(str(p)) for p in sorted(dump.glob("step*/rank/overflow.json"))}


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    made = []

    def make(level="L1", checks="auto", name=None, **changes):
        folder = tmp_path / (name or f"{checks}-{len(made)}")
        folder.mkdir()
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(folder, level=level, **changes)),
                                     checks=checks)
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
        assert_origin_invariant(debugger.dump_path)
    ORIGINAL.assert_untouched(parked_ok=True)


# -- the comparisons ------------------------------------------------------------------------
def _case_dirs(root) -> list:
    return sorted(p for p in root.iterdir() if (p / "run.py").exists()) if root.is_dir() else []


def _run_cases(tmp_path, checks: str, cases: list) -> dict:
    out = tmp_path / f"{checks}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK", "PROBE_CONFIG")}
    env.update(PROBE_CHECKS=checks, PYTHONPATH=str(REPO / "tests") + os.pathsep + env.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "runtime_case_runs.py"), str(out),
                           str(tmp_path / checks), *map(str, cases)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=1500, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def _compare_cases(tmp_path, cases: list) -> None:
    assert cases
    exact, auto = _run_cases(tmp_path, "exact", cases), _run_cases(tmp_path, "auto", cases)
    for case in exact:
        assert exact[case]["error"] is None and auto[case]["error"] is None, (exact[case]["error"],
                                                                             auto[case]["error"])
        assert exact[case]["steps"], f"{case} recorded nothing under exact checks"
        compare(case, exact[case]["steps"], auto[case]["steps"])
        from pathlib import Path

        assert_origin_invariant(Path(auto[case]["dump"]))


def test_every_own_runtime_case_gives_the_first_record_of_exact_checks(tmp_path):
    _compare_cases(tmp_path, _case_dirs(OWN_CASES))


@pytest.mark.shared
def test_every_shared_runtime_case_gives_the_first_record_of_exact_checks(tmp_path):
    _compare_cases(tmp_path, _case_dirs(SHARED_CASES / "runtime"))


FAMILY_RUNS = [(f, k, lv) for f in FAMILIES for k in ("call", "data", "weight") for lv in ("L1", "L0")]


@pytest.mark.parametrize("family, kind, level", FAMILY_RUNS, ids=["-".join(r) for r in FAMILY_RUNS])
def test_families_overflowing_after_the_first_step(work, family, kind, level):
    """The overflow comes in step 1: step 0 runs exact checks in both
    modes, step 1 is a watched window under auto checks (a replay)."""
    tmp_path, make = work
    exact, auto = make(level, "exact"), make(level, "auto")
    trained_exact = train(family, kind, exact, level, steps=2)
    trained_auto = train(family, kind, auto, level, steps=2)
    assert_same_training(trained_exact, trained_auto)
    got = recorded(tmp_path / "auto-1" / "dump")
    compare(f"{family}-{kind}-{level}", recorded(tmp_path / "exact-0" / "dump"), got)
    assert list(got) == ["step1"] and all(r.get("replay") for r in got["step1"])


SCENARIO_RUNS = [(s, lv) for s in SCENARIOS for lv in ("L1", "L0")]


@pytest.mark.parametrize("scenario, level", SCENARIO_RUNS, ids=["-".join(r) for r in SCENARIO_RUNS])
def test_scenarios_give_the_first_record_of_exact_checks_and_train_the_same(work, scenario, level):
    tmp_path, make = work
    plain = SCENARIOS[scenario](None, level)
    exact = SCENARIOS[scenario](make(level, "exact"), level)
    auto = SCENARIOS[scenario](make(level, "auto"), level)
    for got in (exact, auto):
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(plain[0] + plain[1], got[0] + got[1]))
    compare(f"{scenario}-{level}", recorded(tmp_path / "exact-0" / "dump"), recorded(tmp_path / "auto-1" / "dump"))


# -- bit-identity -----------------------------------------------------------------------------
@pytest.mark.parametrize("overflow", [False, True])
def test_dropout_and_batchnorm_train_bit_identically(work, overflow):
    """Random masks (nn.Dropout keeps its own state per primitive,
    ops.dropout draws from the op-seed table) and BatchNorm's moving
    statistics: a replay changes none of them for the training."""
    tmp_path, make = work
    plain = SCENARIOS["dropout_boom"](None, "L1", steps=4, overflow=overflow)
    debugger = make("L1", "auto")
    probed = SCENARIOS["dropout_boom"](debugger, "L1", steps=4, overflow=overflow)
    assert len(plain[1]) == len(probed[1]) == 8  # the BatchNorm moving statistics are among the Parameters
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(plain[0] + plain[1], probed[0] + probed[1]))
    got = recorded(tmp_path / "auto-0" / "dump")
    if overflow:
        assert list(got) == ["step3"] and got["step3"][0]["name"] == "Functional.exp.0.forward"
        assert got["step3"][0]["replay"] == scenario_line("dropout_boom", "loss, grads = grad_fn(")
    else:
        assert not got


# -- the windows --------------------------------------------------------------------------------
def test_windows_exact_first_then_watched_and_exact_after_one_without_gradients(work, caplog):
    _, make = work
    debugger = make()
    w = ms.Parameter(Tensor(np.ones(2, np.float32)), name="w")
    grad_fn = ms.grad(lambda x: (x * w).sum(), None, [w])
    kinds = []
    for step in range(5):
        debugger.start()
        kinds.append(debugger.window)
        if step != 2:  # step 2: evaluation only
            grad_fn(Tensor(np.ones(2, np.float32)))
        else:
            ops.exp(Tensor(np.ones(2, np.float32)))
        debugger.stop()
        debugger.step()
    assert kinds == ["exact", "watched", "watched", "exact", "watched"]
    said = [r.getMessage() for r in caplog.records if "computed no gradients" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("probe_runtime: step 2 computed no gradients, so auto checks")


@pytest.mark.parametrize("given, distributed, expected", [
    (None, False, "exact"), (None, True, "exact"), ("auto", True, "auto"), ("sentinel", True, "sentinel"),
    ("env:auto", True, "auto"), ("env:auto", False, "auto")])
def test_the_default_is_exact_checks_and_a_choice_is_kept(work, monkeypatch, given, distributed, expected):
    """The default is exact checks (issue 33: auto checks' first record
    differs from theirs where an overflow never reaches a gradient
    computation's result); a choice made by argument or PROBE_CHECKS is
    kept, in one process or in a job of several ranks."""
    _, make = work
    if given == "env:auto":
        monkeypatch.setenv("PROBE_CHECKS", "auto")
    debugger = make(checks=None if given in (None, "env:auto") else given)
    debugger.windows.exact.distributed = lambda: distributed
    debugger.start()
    debugger.stop()
    assert debugger.checks == expected


def test_a_watched_window_patches_only_the_gradient_and_optimizer_entry_points(work):
    """No API wrapper, no Cell hook, no synchronous switch in a watched
    window: what auto checks cost while nothing overflows."""
    _, make = work
    debugger = make("L0")
    net = nn.Dense(2, 1)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    add, call = Tensor.__add__, nn.SGD.__call__
    seen = []
    for _ in range(2):
        debugger.start(net)
        seen.append((debugger.window, bool(ms.get_context("pynative_synchronize")), Tensor.__add__ is add,
                     bool(net._forward_pre_hook), nn.SGD.__call__ is call))
        _, grads = grad_fn(Tensor(np.ones((1, 2), np.float32)))
        optimizer(grads)
        debugger.stop()
        debugger.step()
    assert seen == [("exact", True, True, True, False), ("watched", False, True, False, False)]


def test_a_clean_run_writes_nothing_and_says_so(work, capfd):
    tmp_path, make = work
    debugger = make()
    plain = train_mlp(steps=4, overflow=lambda step: False)
    assert_same_training(plain, train_mlp(debugger, steps=4, overflow=lambda step: False))
    debugger.finish()
    assert not list((tmp_path / "auto-0" / "dump").glob("step*"))
    err = capfd.readouterr().err
    assert "no overflow found in 4 checked step(s) (1 with exact checks, 3 watched by auto checks, which judge " \
        "only what the gradient computations return: " in err
    assert "made in code outside them such as an evaluation pass, is not seen there)" in err


def test_a_replay_that_does_not_reproduce_falls_back(work):
    """The inf depends on Python state the replay changes (a call counter):
    today's sentinel record says why, and the next window runs exact checks."""
    tmp_path, make = work
    debugger = make()
    calls = [0]

    def loss(x):
        calls[0] += 1
        return ops.exp(x * (1.0e4 if calls[0] == 2 else 0.0)).sum()

    grad_fn = ms.grad(loss)
    kinds = []
    for _ in range(3):
        debugger.start()
        kinds.append(debugger.window)
        grad_fn(Tensor(np.ones(2, np.float32)))
        debugger.stop()
        debugger.step()
    assert kinds == ["exact", "watched", "exact"]
    (record,) = recorded(tmp_path / "auto-0" / "dump")["step1"]
    assert record["kind"] == "sentinel" and not record["origin"]
    assert "did not reproduce it" in record["message"] and "exact L1 checks run from the next start()" in \
        record["message"]
    assert record["nonfinite"] == ["forward output 0", "gradient w.r.t. input 0"]


class _ExpCell(nn.Cell):
    """``exp(x * w)`` summed, its float16 compute set by ``to_float`` (a
    mixed-precision type pushed while it runs)."""

    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(Tensor(np.ones(2, np.float32)), name="w")
        self.exp = ops.Exp()

    def construct(self, x):
        return self.exp(x * self.w).astype(ms.float32).sum()


@pytest.mark.parametrize("differentiated", ["function", "cell"])
def test_a_replay_stops_before_a_collective_and_falls_back(work, monkeypatch, differentiated):
    """A replay never issues a collective: the primitive refuses before it
    runs (Exp stands in for AllReduce here, in one process), the training
    is the same as without the debugger, the record says why, and what
    the interrupted forward pass opened in the executor is closed (later
    PyNative code, here tensor indexing under grad, still runs)."""
    import probe_runtime.grad.replay as replay
    import runtime_families

    tmp_path, make = work
    exp_class = type(ops.Exp())
    monkeypatch.setattr(replay, "collective_classes", lambda: [exp_class])
    calls = []
    original_call = exp_class.__call__
    monkeypatch.setattr(exp_class, "__call__", lambda self, *a: calls.append(1) or original_call(self, *a))

    def run(debugger):
        if differentiated == "cell":
            ms.set_seed(2)
            net = _ExpCell().to_float(ms.float16)
            grad_fn = ms.value_and_grad(net, None, [net.w])
        else:
            w = ms.Parameter(Tensor(np.ones(2, np.float32)), name="w")
            grad_fn = ms.value_and_grad(lambda x: ops.Exp()(x * w).sum(), None, [w])
        out = []
        for step in range(2):
            if debugger:
                debugger.start()
            loss, grads = grad_fn(Tensor(np.full(2, 200.0 if step else 0.5, np.float32)))
            out.append((loss.asnumpy(), grads[0].asnumpy()))
            if debugger:
                debugger.stop()
                debugger.step()
        return out

    plain = run(None)
    before = len(calls)
    probed = run(make())
    assert all(np.array_equal(a, b, equal_nan=True) for p, q in zip(plain, probed) for a, b in zip(p, q))
    assert len(calls) - before == before  # the replay called no Exp (the stand-in collective) of its own
    (record,) = recorded(tmp_path / "auto-0" / "dump")["step1"]
    assert record["kind"] == "sentinel"
    assert "its replay stopped before the collective Exp: a replay never issues a collective" in record["message"]
    assert_same_training(runtime_families.train("lstm_batchnorm", "data", None, "L1", steps=2),
                         runtime_families.train("lstm_batchnorm", "data", None, "L1", steps=2))


def test_an_optimizer_step_that_makes_inf_is_recorded_at_its_line(work):
    """Finite gradients, an update that overflows (a huge learning rate):
    the Parameters are checked right after the optimizer step."""
    tmp_path, make = work
    debugger = make()
    ms.set_seed(1)
    net = nn.Dense(2, 1)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=1.0e38)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    kinds = []
    for step in range(3):
        debugger.start()
        kinds.append(debugger.window)
        _, grads = grad_fn(Tensor(np.full((1, 2), 100.0, np.float32)))
        if step == 1:
            optimizer(grads)  # the line the record names
        debugger.stop()
        debugger.step()
    assert kinds == ["exact", "watched", "exact"]
    (record,) = recorded(tmp_path / "auto-0" / "dump")["step1"]
    assert record["kind"] == "update" and record["name"] == "update"
    assert record["where"] == f"{__file__}:{_line('            optimizer(grads)  # the line the record names')}"
    assert record["nonfinite"][0].startswith("Parameter ") and "SGD" in record["message"]


def _line(text: str) -> int:
    return open(__file__).read().splitlines().index(text) + 1


def scenario_line(function: str, text: str) -> str:
    """``file:line`` of the first line holding ``text`` in scenario
    ``function`` of tests/runtime_scenarios.py."""
    import inspect

    import runtime_scenarios

    lines, start = inspect.getsourcelines(SCENARIOS[function])
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{runtime_scenarios.__file__}:{start + offset}"


@pytest.mark.parametrize("checks", ["exact", "auto"])
def test_an_inf_loss_outside_the_model_is_said_at_l0(work, checks, capfd):
    """Issue 26 item 3: AMP O2, every float16 layer output finite, the
    float32 loss inf; at L0 the loss Cell is outside the model given to
    start(): never "no overflow found", but a record at the gradient
    computation's line saying where to look."""
    tmp_path, make = work
    debugger = make("L0", checks)
    SCENARIOS["amp_o2_loss"](debugger, "L0", steps=2)
    debugger.finish()
    (record,) = recorded(tmp_path / f"{checks}-0" / "dump")["step1"]
    assert record["kind"] == "outside" and not record["origin"]
    assert record["nonfinite"][0] == "forward output 0"
    assert record["where"] == scenario_line("amp_o2_loss", "loss, grads = grad_fn(")
    assert "use level L1, or pass the loss Cell to start()" in record["message"]
    assert "no overflow found" not in capfd.readouterr().err
    out = io.StringIO()
    assert report_main(str(tmp_path / f"{checks}-0" / "dump"), out=out, err=io.StringIO()) == 0
    assert f"Overflow outside the checked calls in step1/rank: {record['message']}." in out.getvalue()


def test_a_nested_gradient_computation_is_covered_by_the_outer_replay(work):
    """grad of grad: the inner computation returns inf inside the outer
    one's forward pass; the outer replay runs it again too, so the records
    name its call, as exact checks do."""
    tmp_path, make = work
    exact, auto = make("L1", "exact"), make("L1", "auto")

    def run(debugger):
        inner = ms.grad(lambda t: ops.exp(t * t).sum())
        outer = ms.grad(lambda t: inner(t).sum())
        for step in range(2):
            debugger.start()
            outer(Tensor(np.full(2, 30.0 if step else 0.1, np.float32)))
            debugger.stop()
            debugger.step()

    run(exact)
    run(auto)
    found = recorded(tmp_path / "exact-0" / "dump")
    first = found["step1"][0]
    assert (first["name"], first["origin"]) == ("Functional.exp.0.forward", True)  # the inner exp(900)
    compare("nested", found, recorded(tmp_path / "auto-1" / "dump"))


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_grad_of_grad_runs_under_exact_checks_and_gives_the_same_values(work, level):
    """A gradient of a gradient (a gradient penalty): no backward hooks go
    on the inner computation's calls or Cells (MindSpore 2.7.0 cannot
    differentiate through HookBackward twice), so the code runs as without
    the debugger, with the same values, on every release."""
    _, make = work

    class Square(nn.Cell):
        def construct(self, t):
            return ops.exp(t * t).sum()

    def run(debugger):
        net = Square()
        inner = ms.grad(net)
        outer = ms.grad(lambda t: inner(t).sum())
        out = []
        for step in range(2):
            if debugger is not None:
                debugger.start(net) if level == "L0" else debugger.start()
            out.append(outer(Tensor(np.full(2, 0.5 + step, np.float32))).asnumpy())
            if debugger is not None:
                debugger.stop()
                debugger.step()
        return out

    plain = run(None)
    checked = run(make(level, "exact"))
    assert all(np.array_equal(a, b) for a, b in zip(plain, checked)) and np.isfinite(plain).all()


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_an_inf_weight_masked_before_the_loss_is_found_before_the_optimizer_step(work, level, monkeypatch):
    """An inf in an LSTM input weight saturates its gates: the loss and the
    gradients stay finite, so the watch sees nothing; the optimizer's
    Parameters, read before its step, hold inf, so the window's computation
    runs again under exact checks, which name the call that used it, as
    exact checks do (and no update record blames the optimizer)."""
    import runtime_families

    monkeypatch.setitem(FAMILIES, "lstm_batchnorm", (runtime_families.LstmBatchNormNet,
                                                     runtime_families._float_batch, "lstm.weight_ih_l0", "lstm"))
    tmp_path, make = work
    exact, auto = make(level, "exact"), make(level, "auto")
    assert_same_training(train("lstm_batchnorm", "weight", exact, level, steps=2),
                         train("lstm_batchnorm", "weight", auto, level, steps=2))
    got = recorded(tmp_path / "auto-1" / "dump")
    compare(f"masked-weight-{level}", recorded(tmp_path / "exact-0" / "dump"), got)
    assert "already held inf/nan at start()" in got["step1"][0]["entered"]["message"]
    assert not [r for r in got["step1"] if r["kind"] == "update"]


@pytest.mark.parametrize("micro, expected", [(5, "Functional.exp.4.forward"), (11, "sentinel")])
def test_a_replay_numbers_calls_as_the_step_or_says_why_it_cannot(tmp_path, monkeypatch, micro, expected):
    """Gradient accumulation under auto checks, the last micro-batch
    overflowing in a watched step: with every computation of the step held,
    the replay runs them all and names the call with the step's index;
    with more than a window holds, it names no call (a sentinel record
    saying why, exact checks next) rather than a wrong index (issue 33)."""
    from runtime_support import isolate, write_runtime_config

    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, nums=-1)), checks="auto")
    w = ms.Parameter(Tensor(np.ones(2, np.float32)), name="w")
    grad_fn = ms.value_and_grad(lambda x: ops.exp(x * w).sum(), None, [w])
    for step in range(2):
        debugger.start()
        for index in range(micro):
            grad_fn(Tensor(np.full(2, 200.0 if step and index == micro - 1 else 0.5, np.float32)))
        debugger.stop()
        debugger.step()
    debugger.windows.summary.said = True
    records = json.loads((tmp_path / "dump" / "step1" / "rank" / "overflow.json").read_text())
    assert records[0]["name"] == expected, [r["name"] for r in records]
    if expected == "sentinel":
        assert "could not number its calls as the step does" in records[0]["message"]
