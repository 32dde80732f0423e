"""Detection truth (issue 18) on model families the detector was not tuned on.

Each family (a GRU, an LSTM followed by BatchNorm, embedding + attention,
an embedding tied to the output projection) trains two steps with SGD under
the debugger, at L1 and L0; the second step overflows in one of three ways:

* ``call``: a known call overflows (``Boom``: ``exp`` of a scaled input);
  the report must name it as where the overflow started;
* ``data``: the data batch already holds inf; no record may be an origin
  and the report must say the non-finite input came in from outside, at
  the first checked call (L1) or Cell (L0) that took it;
* ``weight``: one Parameter holds inf before ``start()``; no record may be
  an origin and the report must name that Parameter as non-finite at
  ``start()``.

Every record written must also satisfy the origin invariant (checked by
:func:`assert_origin_invariant`, which the shared-case test uses too).
"""
from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import DATA, SHARED_CASES, SHARED_TOOLS

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from msprobe_lint.exit import ExitStatus  # noqa: E402
from msprobe_lint.report import main as report_main  # noqa: E402
from probe_runtime import PrecisionDebugger  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_families import FAMILIES, train  # noqa: E402
from runtime_support import (PatchedState, assert_origin_invariant, assert_same_training, isolate,  # noqa: E402
                             write_runtime_config)

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def make(level):
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level=level, nums=-1)))
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
    ORIGINAL.assert_untouched(parked_ok=True)


def _records(tmp_path, step):
    path = tmp_path / "dump" / f"step{step}" / "rank" / "overflow.json"
    return read_json(str(path)) if path.exists() else []


def _report(tmp_path):
    """(exit status, the JSON report, the text report) of the dump, every step shown."""
    pieces = []
    for fmt in ("json", "text"):
        out, err = io.StringIO(), io.StringIO()
        status = report_main(str(tmp_path / "dump"), fmt, out=out, err=err, show_all=True)
        assert status == ExitStatus.OK, err.getvalue()
        pieces.append(out.getvalue())
    return status, json.loads(pieces[0]), pieces[1]


def _overflow_step(work, family, kind, level):
    """Train ``family`` with its second step overflowing the ``kind`` way;
    the records of that step (the first has none), after the origin
    invariant is checked over the dump."""
    tmp_path, make = work
    train(family, kind, make(level), level)
    assert not _records(tmp_path, 0)
    records = _records(tmp_path, 1)
    assert records, "the overflow was not found"
    assert_origin_invariant(tmp_path / "dump")
    return records


EXPECTED_CALL = {"L1": "Functional.exp.0.forward", "L0": "Cell.boom.Boom.forward.0"}


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_known_call_is_named_origin(work, family, level):
    _overflow_step(work, family, "call", level)
    dump, payload, text = _report(work[0])
    assert payload["started"]["name"] == EXPECTED_CALL[level]
    assert f"Overflow started in step1/rank: {EXPECTED_CALL[level]}" in text
    assert payload["entered"] is None


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_bad_data_is_named_as_entering_from_outside(work, family, level):
    records = _overflow_step(work, family, "data", level)
    assert not [r["name"] for r in records if r["origin"]], "bad data is not an origin"
    entered = records[0]["entered"]
    assert entered["source"] == "outside"
    assert entered["entry"] == EXPECTED_DATA_ENTRY[level][family]
    assert entered["input"] == EXPECTED_DATA_INPUT[level][family]
    dump, payload, text = _report(work[0])
    assert payload["started"] is None
    assert payload["entered"]["entered"]["entry"] == entered["entry"]
    assert (f"Overflow entered in step1/rank: non-finite input entered at the first checked "
            f"{'call' if level == 'L1' else 'Cell'}: {entered['input']} of {entered['entry']}, made outside") in text


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_bad_weight_is_named_as_non_finite_at_start(work, family, level):
    records = _overflow_step(work, family, "weight", level)
    _, _, weight, owner = FAMILIES[family]
    assert not [r["name"] for r in records if r["origin"]], "a bad weight is not an origin"
    entered = records[0]["entered"]
    assert entered["source"] == "parameter" and entered["parameter"] == weight and entered["at_start"]
    if level == "L0":
        assert entered["entry"].startswith(f"Cell.{owner}.") and entered["entry"].endswith(".forward.0")
    dump, payload, text = _report(work[0])
    assert payload["started"] is None
    assert f"Parameter {weight} already held inf/nan at start()" in text


#: the first checked call (L1) or Cell (L0) that took the bad batch
EXPECTED_DATA_ENTRY = {
    "L1": {"gru": "Primitive.Transpose.0.forward", "lstm_batchnorm": "Primitive.Transpose.0.forward",
           "attention": "Tensor.__add__.0.forward", "tied": "Tensor.__add__.0.forward"},
    "L0": {"gru": "Cell.rnn.GRU.forward.0", "lstm_batchnorm": "Cell.lstm.LSTM.forward.0",
           "attention": "Cell.query.Dense.forward.0", "tied": "Cell.mix.Dense.forward.0"},
}
EXPECTED_DATA_INPUT = {
    "L1": {"gru": "input_args[0]", "lstm_batchnorm": "input_args[0]", "attention": "input_args[1]",
           "tied": "input_args[1]"},
    "L0": {family: "input_args[0]" for family in FAMILIES},
}


@pytest.mark.parametrize("optimizer_api", ["nn", "mint"])
def test_issue_lstm_views_of_weights_are_not_origins(work, optimizer_api):
    """The reported run: LSTM -> BatchNorm1d -> Dense, SGD, L1, overflow_nums
    -1, a batch holding inf at start(). The optimizer's update turned the
    weights nan after the step; views of those weights must not be judged
    (or described) on that memory (``nn.SGD``, and the torch-style
    ``mint.optim.SGD``, which is not an ``nn.Optimizer``)."""
    tmp_path, make = work
    train("lstm_batchnorm", "data", make("L1"), "L1", steps=3, optimizer_api=optimizer_api)
    records = _records(tmp_path, 2)
    names = [r["name"] for r in records]
    assert not [n for n in names if n.startswith("Tensor.view") and n.endswith(".forward")], names
    assert not [r for r in records if r["origin"]]
    assert not [n for n in names if n.startswith("Primitive.Primitive.")], names
    assert_origin_invariant(tmp_path / "dump")
    data = read_json(str(tmp_path / "dump" / "step2" / "rank" / "dump.json"))["data"]
    lstm = data["Primitive.LSTM.0.forward"]["input_args"]
    weights = lstm[3]  # the flattened weights: finite when the call was made
    assert math.isfinite(weights["Max"]) and math.isfinite(weights["Norm"])
    _, _, text = _report(tmp_path)
    assert ("non-finite input entered at the first checked call: input_args[0] of Primitive.Transpose.0.forward, "
            "made outside the checked window") in text


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_training_unchanged_by_the_debugger(work, level):
    tmp_path, make = work
    plain = train("lstm_batchnorm", "data")
    checked = train("lstm_batchnorm", "data", make(level), level)
    assert_same_training(plain, checked)


OWN_CASES = DATA / "runtime_cases"


def _case_dirs():
    """This repository's runtime cases, and the shared ones (an extra,
    marked ``shared``) when ../shared is present."""
    dirs = sorted(p for p in OWN_CASES.iterdir() if (p / "run.py").exists())
    if (SHARED_CASES / "runtime").is_dir():
        dirs += [pytest.param(p, marks=pytest.mark.shared)
                 for p in sorted((SHARED_CASES / "runtime").iterdir()) if (p / "run.py").exists()]
    return dirs


def _case_id(case):
    return f"{case.parent.parent.name}/{case.name}"


@pytest.mark.parametrize("case", _case_dirs(), ids=_case_id)
def test_origin_invariant_over_runtime_cases(tmp_path, case):
    """Every record a runtime case produces (the shared cases, at the level
    their config sets, and this repository's own at L1 and L0): origin =>
    every dumped input finite and some output not."""
    config = json.loads((case / "config.json").read_text())
    config["dump_path"] = str(tmp_path / "dump")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    os.chmod(path, 0o640)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK", "PROBE_CONFIG")}
    proc = subprocess.run([sys.executable, str(case / "run.py"), str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert assert_origin_invariant(tmp_path / "dump") > 0, "the case recorded nothing"


@pytest.mark.shared
def test_own_runtime_cases_meet_their_expectations(tmp_path):
    """This repository's runtime cases (tests/data/runtime_cases, the shared
    cases' format) pass the shared checker (an extra: it is in ../shared)."""
    script = SHARED_TOOLS / "check-runtime-cases"
    proc = subprocess.run([sys.executable, str(script), str(OWN_CASES), "--python", sys.executable, "-v"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout


def test_primitives_made_by_name_are_named_by_operator():
    """``Primitive("typeof")`` and the like are named by their operator
    (never ``Primitive.Primitive``); type queries are not intercepted."""
    from mindspore.ops import Primitive

    from probe_runtime.l1.primitives import primitive_api

    assert primitive_api(ops.MatMul()) == "Primitive.MatMul"
    assert primitive_api(Primitive("Softsign")) == "Primitive.Softsign"
    assert primitive_api(ops.typeof) is None
    assert primitive_api(ops.HookBackward(lambda *g: None)) is None


class _Poison(nn.Cell):
    """Writes ``value`` into a Parameter inside compiled code (what no
    wrapper sees)."""

    def __init__(self, param):
        super().__init__()
        self.param = param

    @ms.jit
    def construct(self, value):
        ops.assign(self.param, value)
        return value


def test_unseen_parameter_update_is_never_an_origin(work, caplog):
    """A view of a Parameter, then the Parameter overwritten with inf by
    compiled code before the view's check: the view was finite at the call,
    so its entry must not be an origin (its dumped input is not finite any
    more); the tool says once that it saw the change."""
    tmp_path, make = work
    debugger = make("L1")
    weight = ms.Parameter(Tensor(np.ones((2, 3), np.float32)), name="w_unseen")
    poison = _Poison(weight)
    bad = Tensor(np.full((2, 3), np.inf, np.float32))
    debugger.start()
    ops.exp(Tensor(np.ones(2, np.float32)))  # resolved at once (the first batch holds one call)
    view = weight.view(6)
    assert debugger.checker.pending
    poison(bad)
    debugger.stop()
    del view
    assert not [r for r in _records(tmp_path, 0) if r["origin"]]
    assert_origin_invariant(tmp_path / "dump")
    assert any("w_unseen was changed by code the tool does not see" in m for m in caplog.messages)


def test_set_data_on_a_parameter_resolves_the_queue_first(work):
    """``Parameter.set_data`` (not ``Tensor.set_data``) inside a window: the
    entries before it are judged on the values they saw."""
    tmp_path, make = work
    for level, model in (("L1", None), ("L0", GruNetForSetData())):
        debugger = make(level)
        weight = model.fc.weight if model is not None else ms.Parameter(Tensor(np.ones((2, 8), np.float32)),
                                                                         name="w_set")
        debugger.start(model) if model is not None else debugger.start()
        for _ in range(2):  # the first call is resolved at once, the second waits for a batch
            if model is not None:
                model(Tensor(np.ones((1, 8), np.float32)))
            else:
                weight.view(16)
        assert debugger.checker.pending
        weight.set_data(Tensor(np.full(weight.shape, np.inf, np.float32)))
        assert not debugger.checker.pending, "set_data must resolve the queue first"
        debugger.stop()
        debugger.step()
    assert not list((tmp_path / "dump").glob("step*/rank/overflow.json"))


class GruNetForSetData(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 2)

    def construct(self, x):
        return self.fc(x)


def test_workspace_outputs_of_cpu_kernels_do_not_decide(work):
    """MindSpore's CPU BatchNorm and LSTM return backward workspace they do
    not always write: with the memory pool full of inf/nan from freed
    tensors, a clean call must not be recorded (only the leading outputs
    decide; see ``check.provenance.JUDGED_OUTPUTS``)."""
    tmp_path, make = work
    debugger = make("L1")
    ms.set_seed(2)
    bn, lstm = nn.BatchNorm1d(8), nn.LSTM(4, 8, batch_first=True)
    x = Tensor(np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32))
    seq = Tensor(np.random.default_rng(1).normal(size=(4, 5, 4)).astype(np.float32))
    for _ in range(3):
        junk = [ops.fill(ms.float32, (8,), float("inf")) * 1 for _ in range(40)]
        junk += [ops.fill(ms.float32, (7168, 1), float("nan")) * 1 for _ in range(8)]
        junk += [ops.fill(ms.float32, (1, 1), float("nan")) * 1 for _ in range(8)]
        del junk
        debugger.start()
        bn(x)
        lstm(seq)
        debugger.stop()
        debugger.step()
    assert not list((tmp_path / "dump").glob("step*/rank/overflow.json"))


def test_non_finite_gradient_from_outside_is_named_at_the_first_backward_entry(work):
    """A finite forward pass and an inf gradient given to the backward pass
    (a loss-scale ``sens``): the first backward entry carries it in."""
    tmp_path, make = work
    debugger = make("L1")
    x = Tensor(np.ones((2, 3), np.float32))
    grad = ops.GradOperation(sens_param=True)(lambda t: ops.sin(t) * 2.0)
    debugger.start()
    grad(x, Tensor(np.full((2, 3), np.inf, np.float32)))
    debugger.stop()
    records = _records(tmp_path, 0)
    assert records and not [r for r in records if r["origin"]]
    entered = records[0]["entered"]
    assert entered["source"] == "outside" and entered["input"] == "input[0]"
    assert entered["entry"].endswith(".backward")
    assert entered["message"].startswith("non-finite input entered at the first checked call: input[0] of ")


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_bad_lstm_weight_is_named_through_its_flattening(work, level, monkeypatch):
    """An ``nn.LSTM`` hands its weights, viewed and concatenated, to an inner
    Cell: the Parameter is still the one named (at L0 through the LSTM Cell
    that owns it, not as an input made outside)."""
    from runtime_families import LstmBatchNormNet, _float_batch

    monkeypatch.setitem(FAMILIES, "lstm_batchnorm", (LstmBatchNormNet, _float_batch, "lstm.weight_ih_l0", "lstm"))
    records = _overflow_step(work, "lstm_batchnorm", "weight", level)
    assert not [r for r in records if r["origin"]]
    entered = records[0]["entered"]
    assert entered["source"] == "parameter" and entered["parameter"] == "lstm.weight_ih_l0" and entered["at_start"]
    assert entered["entry"] == {"L1": "Tensor.view.0.forward", "L0": "Cell.lstm.LSTM.forward.0"}[level]


class _Outer(nn.Cell):
    """Makes the overflow in its own code, then hands it to a sub-Cell."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Dense(3, 2)

    def construct(self, x):
        return self.inner(ops.exp(x * 1.0e4))


class _Wrapper(nn.Cell):
    def __init__(self):
        super().__init__()
        self.outer = _Outer()

    def construct(self, x):
        return self.outer(x)


def test_l0_overflow_made_in_an_enclosing_cells_own_code_is_its_origin(work):
    """At L0 the first overflowing entry (the inner Dense) got a value its
    parent made from finite inputs: the parent is the origin, recorded
    first (its entry held back until then), with ``entered`` saying its own
    construct made it; the Dense after it, carried, with no ``entered``
    ("made outside")."""
    tmp_path, make = work
    debugger = make("L0")
    net = _Wrapper()
    debugger.start(net)
    net(Tensor(np.ones((2, 3), np.float32)))
    debugger.stop()
    records = _records(tmp_path, 0)
    assert [r["name"] for r in records] == ["Cell.outer._Outer.forward.0", "Cell.outer.inner.Dense.forward.0"]
    assert records[0]["entered"]["source"] == "own-construct"
    assert "entered" not in records[1]
    assert [r["origin"] for r in records] == [True, False]
    assert_origin_invariant(tmp_path / "dump")


def test_a_fault_in_the_entry_point_analysis_keeps_the_record(work, monkeypatch, caplog):
    """A bug in finding where the overflow came in is logged; the record is
    written without ``entered`` and detection goes on."""
    from probe_runtime.check import queue

    def broken(kind, call, cache):
        raise RuntimeError("boom")

    monkeypatch.setattr(queue, "entered", broken)
    tmp_path, make = work
    debugger = make("L1")
    debugger.start()
    ops.exp(Tensor(np.array([np.inf, 1.0], np.float32)))
    debugger.stop()
    records = _records(tmp_path, 0)
    assert [r["name"] for r in records] == ["Functional.exp.0.forward"] and "entered" not in records[0]
    assert any("while finding where the overflow came in" in m for m in caplog.messages)


def test_parameter_made_non_finite_inside_the_window_is_not_said_to_be_so_at_start(work):
    """A Parameter set to inf between two uses in one window: named, but not
    as non-finite at ``start()``."""
    tmp_path, make = work
    debugger = make("L1")
    weight = ms.Parameter(Tensor(np.ones((2, 2), np.float32)), name="w_mid")
    x = Tensor(np.ones((1, 2), np.float32))
    debugger.start()
    ops.matmul(x, weight)
    weight.set_data(Tensor(np.full((2, 2), np.inf, np.float32)))
    ops.matmul(x, weight)
    debugger.stop()
    entered = _records(tmp_path, 0)[0]["entered"]
    assert entered["source"] == "parameter" and entered["parameter"] == "w_mid" and not entered["at_start"]
    assert "may have been finite at start()" in entered["message"]


class _TwoDense(nn.Cell):
    """The user's reproduction (trial 2): Dense(4, 3) -> ReLU -> Dense(3, 1),
    weights all ones."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 3, weight_init="ones", bias_init="zeros")
        self.act = nn.ReLU()
        self.fc2 = nn.Dense(3, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


def _train_two_dense(debugger, loss_kind=None, steps=2, before_forward=None, learning_rate=0.01):
    """(losses, gradients) of ``steps`` SGD steps of :class:`_TwoDense`, each
    in its own window (started with the net at L0); ``loss_kind``: the loss
    code, outside every Cell, overflows in the backward pass only
    (``sqrt``: ``sqrt(out * 0) + out``) or in both (``div``: ``out / 0``);
    ``before_forward(net, step)`` runs inside the window, before the
    forward pass."""
    ms.set_seed(1)
    net = _TwoDense()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=learning_rate)

    def loss_fn(x, y):
        out = net(x)
        if loss_kind == "sqrt":
            out = ops.sqrt(out * 0.0) + out
        elif loss_kind == "div":
            out = out / (y - y)
        return ((out - y) ** 2).mean()

    grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
    rng = np.random.default_rng(0)
    losses, grads_seen = [], []
    try:
        for step in range(steps):
            x = Tensor(rng.uniform(1, 2, size=(2, 4)).astype(np.float32))
            y = Tensor(np.ones((2, 1), np.float32))
            if debugger:
                debugger.start(net)
            if before_forward:
                before_forward(net, step)
            loss, grads = grad_fn(x, y)
            optimizer(grads)
            if debugger:
                debugger.stop()
                debugger.step()
            losses.append(loss.asnumpy())
            grads_seen.append([g.asnumpy() for g in grads])
    finally:
        if debugger:
            debugger.stop()
    return losses, grads_seen


@pytest.mark.parametrize("loss_kind", ["sqrt", "div"])
def test_l0_gradient_made_by_the_loss_is_named_as_entering_from_outside(work, loss_kind):
    """Trial 2 (``train2.py sqrt|div``): the loss code, outside every Cell,
    makes the gradient w.r.t. the model's output non-finite. No Cell entry
    is an origin; step 0's first record says the gradient came in from
    outside the checked Cells, and the report's summary names step 0."""
    tmp_path, make = work
    plain = _train_two_dense(None, loss_kind)
    checked = _train_two_dense(make("L0"), loss_kind)
    assert_same_training(plain, checked)
    records = _records(tmp_path, 0)
    assert records and not [r["name"] for r in records if r["origin"]]
    assert_origin_invariant(tmp_path / "dump")
    if loss_kind == "div":  # the loss itself is inf in the forward pass: said first, before any backward record
        loss, records = records[0], records[1:]
        assert loss["kind"] == "outside" and "(the loss)" in loss["message"]
    entered = records[0].get("entered")
    assert entered is not None, records[0]
    assert entered["source"] == "outside" and entered["parameter"] is None and not entered["at_start"]
    assert entered["entry"] == "Cell.fc2.Dense.backward.0" and entered["input"] == "input[0]"
    assert "gradient" in entered["message"] and "the model's output" in entered["message"]
    _, payload, text = _report(tmp_path)
    if loss_kind == "div":
        assert f"Overflow outside the checked calls in step0/rank: {loss['message']}." in text
    else:
        assert payload["entered"]["step"] == 0
        assert f"Overflow entered in step0/rank: {entered['message']}." in text


class _SqrtAfter(nn.Cell):
    """Its own code turns the gradient its Dense gets non-finite
    (``sqrt(out * 0)``: finite forward, nan backward)."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Dense(3, 2)

    def construct(self, x):
        out = self.inner(x)
        return ops.sqrt(out * 0.0) + out


class _SqrtWrapper(nn.Cell):
    def __init__(self):
        super().__init__()
        self.outer = _SqrtAfter()

    def construct(self, x):
        return self.outer(x) * 2.0


def test_l0_gradient_made_in_an_enclosing_cells_own_backward_is_its_origin(work):
    """The gradient the inner Dense gets is made non-finite by its parent's
    own code from a finite gradient: nothing says it was "made outside";
    the parent's backward entry is the origin, written first, with
    ``entered`` saying its own code made it."""
    tmp_path, make = work
    debugger = make("L0")
    net = _SqrtWrapper()
    debugger.start(net)
    ms.grad(lambda t: net(t).sum())(Tensor(np.ones((2, 3), np.float32)))
    debugger.stop()
    records = _records(tmp_path, 0)
    assert records and records[0]["name"] == "Cell.outer._SqrtAfter.backward.0", records
    assert records[0]["entered"]["source"] == "own-construct", records[0]
    assert [r["name"] for r in records if r["origin"]] == ["Cell.outer._SqrtAfter.backward.0"]
    assert_origin_invariant(tmp_path / "dump")


def _poison_fc2(net, step):
    """Trial 2's ``setdata_in``: inf written into fc2.weight inside the
    window (after ``start()``), before the forward pass of step 1."""
    if step == 1:
        value = net.fc2.weight.asnumpy().copy()
        value[0, 1] = np.inf
        net.fc2.weight.set_data(Tensor(value))


@pytest.mark.parametrize("sync", ["auto", "0"])  # Parameters checked on the host / by a sum launched on the device
def test_l0_parameter_set_after_start_is_not_an_origin(work, monkeypatch, sync):
    """Trial 2 (``train2.py setdata_in``): a Parameter made non-finite by
    ``set_data`` after ``start()``. The Cell using it is not an origin (its
    dumped ``parameters`` are not finite); step 1's first record names the
    Parameter, not as non-finite at ``start()``."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    plain = _train_two_dense(None, before_forward=_poison_fc2)
    checked = _train_two_dense(make("L0"), before_forward=_poison_fc2)
    assert_same_training(plain, checked)
    assert not _records(tmp_path, 0)
    records = _records(tmp_path, 1)
    assert records[0]["name"] == "Cell.fc2.Dense.forward.0"
    assert not [r["name"] for r in records if r["origin"]]
    assert_origin_invariant(tmp_path / "dump")
    entered = records[0].get("entered")
    assert entered is not None, records[0]
    assert entered["source"] == "parameter" and entered["parameter"] == "fc2.weight" and not entered["at_start"]
    assert entered["entry"] == "Cell.fc2.Dense.forward.0"
    assert entered["message"].startswith("Parameter fc2.weight held inf/nan when first used after an update in the "
                                         "window, by Cell.fc2.Dense.forward.0")
    _, payload, text = _report(tmp_path)
    assert payload["started"] is None
    assert f"Overflow entered in step1/rank: {entered['message']}." in text


def test_l0_weights_an_optimizer_made_non_finite_in_the_window_are_judged_again(work):
    """Two optimizer steps in one window: the first writes inf into the
    weights (a huge learning rate), which is said right after that step (an
    ``update`` record, issue 33: not a step late); the second forward pass
    uses them. Its first Cell is not an origin and names the Parameter, as
    changed in the window."""
    tmp_path, make = work
    debugger = make("L0")
    ms.set_seed(1)
    net = _TwoDense()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=1.0e38)
    grad_fn = ms.value_and_grad(lambda x, y: ((net(x) - y) ** 2).mean(), None, optimizer.parameters)
    x, y = Tensor(np.full((2, 4), 2.0, np.float32)), Tensor(np.zeros((2, 1), np.float32))
    debugger.start(net)
    for _ in range(2):
        _, grads = grad_fn(x, y)
        optimizer(grads)
    debugger.stop()
    assert not np.isfinite(net.fc1.weight.asnumpy()).all()
    records = _records(tmp_path, 0)
    assert records[0]["name"] == "update" and "the update made it" in records[0]["message"]
    assert any(label.startswith("Parameter fc1.") for label in records[0]["nonfinite"])
    records = records[1:]
    assert records[0]["name"] == "Cell.fc1.Dense.forward.1"
    assert not [r["name"] for r in records if r["origin"]]
    assert_origin_invariant(tmp_path / "dump")
    entered = records[0]["entered"]
    assert entered["source"] == "parameter" and entered["parameter"].startswith("fc1.") and not entered["at_start"]


@pytest.mark.parametrize("checks", [None, "auto"])
@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_parameter_nan_from_the_start_that_no_call_uses_is_not_made_by_the_update(tmp_path, monkeypatch, level,
                                                                                     checks):
    """A Parameter that held NaN before ``start()`` and that no checked call
    uses (an unused head, a spare weight), updated by the optimizer: each
    step got an ``update`` record, "although it and the gradients it got
    were finite before: the update made it", which was untrue. It is now
    read with the optimizer's state when the optimizer is first seen: one
    ``outside`` record in the first step says it was there at start(), and
    the later steps carry it (no record)."""
    isolate(monkeypatch, tmp_path)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level=level, nums=-1)),
                                 checks=checks)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(3, 1)
            self.spare = ms.Parameter(Tensor(np.array([1.0, np.nan], np.float32)), name="spare")

        def construct(self, x):
            return self.fc(x)

    net = Net()
    optimizer = nn.SGD(net.trainable_params(), 0.1)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    try:
        for _ in range(3):
            debugger.start(net) if level == "L0" else debugger.start()
            _, grads = grad_fn(Tensor(np.ones((2, 3), np.float32)))
            optimizer(grads)
            debugger.stop()
            debugger.step()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    (first,) = _records(tmp_path, 0)
    assert (first["kind"], first["nonfinite"]) == ("outside", ["Parameter spare"]), first
    assert "it was there at start()" in first["message"], first
    assert not _records(tmp_path, 1) and not _records(tmp_path, 2)
    ORIGINAL.assert_untouched(parked_ok=True)
