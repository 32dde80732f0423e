"""Overflows a checked call or Cell hides (issue 26), at L1 and L0.

* **Masked inside one call.** Float16 gradients, each finite (largest
  300), go through ``ops.clip_by_global_norm(grads, 1.0)``: inside it the
  squares exceed 65504, the global norm is inf and ``clip_norm / inf``
  returns every gradient as 0. The clip's own inputs and result are finite.
  L1 records the nested call that made the inf (``Primitive.Square``) at
  the user's line of the clip, with ``inside`` naming the clip. L0 does not
  intercept API calls: it records nothing, and its all-clear says what it
  does not see and to use L1.
* **inf/nan written into a Parameter in place.** ``nn.BatchNorm1d`` trained
  on a 1-sample remainder batch: the unbiased variance is 0/0 and NaN goes
  into ``moving_variance`` inside the BatchNorm primitive, while the output
  and the loss stay finite. In that step L1 records ``Primitive.BatchNorm``
  and L0 the BatchNorm Cell as the origin, naming ``bn.moving_variance``
  under ``written``; a later evaluation step carries it and says the
  Parameter already held NaN at ``start()``.

Every record must keep the origin invariant (:func:`assert_origin_invariant`).
"""
from __future__ import annotations

import io
import json
import weakref
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Parameter, Tensor, nn, ops  # noqa: E402

from msprobe_lint.exit import ExitStatus  # noqa: E402
from msprobe_lint.report import main as report_main  # noqa: E402
from probe_runtime import PrecisionDebugger, lifecycle  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_support import PatchedState, assert_origin_invariant, isolate, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
HERE = Path(__file__).read_text().splitlines()


def line_of(marker: str) -> str:
    """``this_file:N`` of the one line that ends with ``# <marker>``."""
    found = [i + 1 for i, text in enumerate(HERE) if text.rstrip().endswith(f"# <{marker}>")]
    assert len(found) == 1, marker
    return f"{__file__}:{found[0]}"


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def make(level, checks="exact"):  # every step under exact checks; auto checks have their own tests below
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, level=level, nums=-1)),
                                     checks=checks)
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
        debugger.windows.summary.said = True  # no line at interpreter exit from these
    ORIGINAL.assert_untouched(parked_ok=True)


def records(tmp_path, step):
    path = tmp_path / "dump" / f"step{step}" / "rank" / "overflow.json"
    return read_json(str(path)) if path.exists() else []


def first_record(tmp_path):
    """(step, the first record of the first step with records)."""
    steps = sorted(int(p.name[4:]) for p in (tmp_path / "dump").glob("step*")
                   if (p / "rank" / "overflow.json").exists())
    assert steps, "nothing was recorded"
    return steps[0], records(tmp_path, steps[0])[0]


def report(tmp_path):
    """(the JSON report, the text report) of the whole dump."""
    pieces = []
    for fmt in ("json", "text"):
        out, err = io.StringIO(), io.StringIO()
        assert report_main(str(tmp_path / "dump"), fmt, out=out, err=err, show_all=True) == ExitStatus.OK, \
            err.getvalue()
        pieces.append(out.getvalue())
    return json.loads(pieces[0]), pieces[1]


# -- 1. an overflow that starts and ends inside one library call --------------------------------
class Linear16(nn.Cell):
    """``x @ w`` with a float16 weight: float16 gradients."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.full((4, 3), 0.01, np.float16)), name="w")

    def construct(self, x):
        return ops.matmul(x, self.w)


class ClippedStep(nn.Cell):
    """The training step's clip as a Cell (how L0 can be given it)."""

    def construct(self, grads):
        return ops.clip_by_global_norm(grads, 1.0)  # <clip in a Cell>


class Trainer(nn.Cell):
    """What L0 is given: the model and the Cell that clips its gradients."""

    def __init__(self):
        super().__init__()
        self.net = Linear16()
        self.clip = ClippedStep()


def train_clipped(debugger, level, steps=2, in_cell=False):
    """``steps`` SGD steps of :class:`Linear16` on a batch of 3.0s, whose
    weight gradient is 300 everywhere (finite), clipped by global norm;
    returns the largest gradient and the largest clipped gradient of each
    step."""
    trainer = Trainer()
    net = trainer.net
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
    seen = []
    for _ in range(steps):
        debugger.start(trainer) if level == "L0" else debugger.start()
        loss, grads = grad_fn(Tensor(np.full((100, 4), 3.0, np.float16)))
        raw = max(float(np.abs(g.asnumpy()).max()) for g in grads)
        clipped = trainer.clip(grads) if in_cell else ops.clip_by_global_norm(grads, 1.0)  # <clip>
        optimizer(clipped)
        debugger.stop()
        debugger.step()
        seen.append((raw, max(float(np.abs(g.asnumpy()).max()) for g in clipped)))
    return seen


@pytest.mark.parametrize("sync", ["auto", "0"])  # a synchronous window (the CPU default) or the pipeline
def test_l1_names_the_call_that_made_inf_inside_the_clip(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    seen = train_clipped(make("L1"), "L1")
    assert seen == [(300.0, 0.0)] * 2  # finite gradients, every one clipped to 0: the model stops learning
    step, first = first_record(tmp_path)
    assert (step, first["name"], first["origin"], first["where"]) == \
        (0, "Primitive.Square.0.forward", True, line_of("clip"))
    assert first["inside"] == "Functional.clip_by_global_norm.0.forward"
    assert [r["name"] for r in records(tmp_path, 0)] == ["Primitive.Square.0.forward"]  # one record per masked call
    assert assert_origin_invariant(tmp_path / "dump") == 2
    payload, text = report(tmp_path)
    assert payload["started"]["inside"] == "Functional.clip_by_global_norm.0.forward"
    assert (f"Overflow started in step0/rank: Primitive.Square.0.forward (API, forward) inside "
            f"Functional.clip_by_global_norm.0.forward at {line_of('clip')}.") in text
    assert ("inside Functional.clip_by_global_norm.0.forward: that call's inputs and result were finite "
            "(it masked this overflow)") in text


def test_l1_names_it_inside_a_cell_too_and_l0_says_what_it_does_not_see(work, capsys):
    tmp_path, make = work
    l1 = make("L1")
    train_clipped(l1, "L1", steps=1, in_cell=True)
    step, first = first_record(tmp_path)
    assert (step, first["name"], first["where"], first["inside"]) == \
        (0, "Primitive.Square.0.forward", line_of("clip in a Cell"), "Functional.clip_by_global_norm.0.forward")
    # L0: the Cell's inputs and outputs are finite, and L0 does not intercept the calls inside it
    l1.finish()
    l1._exit_said = True
    (tmp_path / "dump").rename(tmp_path / "dump-l1")
    l0 = make("L0")
    assert train_clipped(l0, "L0", steps=2, in_cell=True) == [(300.0, 0.0)] * 2
    assert not list((tmp_path / "dump").rglob("overflow.json"))
    capsys.readouterr()
    l0._exit_said = False
    lifecycle.at_exit(weakref.ref(l0))
    err = capsys.readouterr().err
    assert ("probe_runtime: no overflow found in 2 checked step(s); dump_path: "
            f"{tmp_path / 'dump'} (level L0 checks what the Cells take and return: an overflow that starts and "
            "ends inside one Cell, its outputs finite, is not seen, nor one in code outside the Cells, such as a "
            "metric computed in the loop, unless a gradient computation returns it; level L1 names the call)") in err
    assert "mindspore.jit regions" not in err  # nn.SGD's compiled construct is not a region of the user's


def test_when_the_outer_result_is_not_finite_the_outer_call_is_recorded(work):
    """``ops.norm`` of float16 values whose squares exceed 65504 returns
    inf itself: the outer call is the origin, as before (its nested calls
    are not read)."""
    tmp_path, make = work
    debugger = make("L1")
    debugger.start()
    norm = ops.norm(Tensor(np.full(4, 300.0, np.float16)))  # <norm>
    debugger.stop()
    assert np.isinf(norm.asnumpy())
    got = records(tmp_path, 0)
    assert [(r["name"], r["origin"], r["where"]) for r in got][:1] == \
        [("Functional.norm.0.forward", True, line_of("norm"))]
    assert all("inside" not in r for r in got)


def test_calls_whose_result_is_the_outer_result_are_not_kept(work, monkeypatch):
    """The cost design: a call that runs one primitive making its own
    result (``ops.exp`` runs ``Exp``) keeps no nested call, so nothing is
    read twice; a composite call keeps only its intermediate results."""
    from probe_runtime.check.queue import Checker

    kept = {}
    on_forward = Checker.on_forward

    def spy(self, call):
        kept[call.api] = [inner.api for inner in call.nested or ()]
        return on_forward(self, call)

    monkeypatch.setattr(Checker, "on_forward", spy)
    tmp_path, make = work
    debugger = make("L1")
    debugger.start()
    ops.exp(Tensor(np.ones(3, np.float32)))
    ops.clip_by_global_norm((Tensor(np.ones(3, np.float16)),), 1.0)
    debugger.stop()
    assert kept["Functional.exp"] == []
    inner = kept["Functional.clip_by_global_norm"]
    assert inner[0] == "Primitive.Square" and "Primitive.Sqrt" in inner
    assert not records(tmp_path, 0)


# -- 2. inf/nan written into a Parameter in place -----------------------------------------------
class BnNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.act = nn.ReLU()
        self.fc2 = nn.Dense(3, 1)

    def construct(self, x):
        return self.fc2(self.act(self.bn(self.fc1(x))))  # <bn call>


def train_with_remainder(debugger, level, evaluate_first=False):
    """Two training steps (a batch of 8, then the 1-sample remainder) and
    one evaluation step; returns the losses, the evaluation output and
    ``moving_variance`` after each training step. ``evaluate_first``: each
    training window starts with an inference call of the model."""
    ms.set_seed(1)
    net = BnNet()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x, y: ((net(x) - y) ** 2).mean(), None, optimizer.parameters)
    rng = np.random.default_rng(0)
    losses, variances = [], []
    for size in (8, 1):
        x = Tensor(rng.normal(size=(size, 4)).astype(np.float32))
        y = Tensor(rng.normal(size=(size, 1)).astype(np.float32))
        debugger.start(net) if level == "L0" else debugger.start()
        if evaluate_first:  # an inference BatchNorm call before the training ones (it writes nothing)
            net.set_train(False)
            net(x)
        net.set_train(True)
        loss, grads = grad_fn(x, y)  # <grad call>
        optimizer(grads)
        debugger.stop()
        debugger.step()
        losses.append(float(loss.asnumpy()))
        variances.append(net.bn.moving_variance.asnumpy().copy())
    net.set_train(False)
    debugger.start(net) if level == "L0" else debugger.start()
    out = net(Tensor(rng.normal(size=(2, 4)).astype(np.float32)))
    debugger.stop()
    debugger.step()
    return losses, out.asnumpy(), variances


EXPECTED_WRITER = {"L1": "Primitive.BatchNorm.0.forward", "L0": "Cell.bn.BatchNorm1d.forward.0"}


@pytest.mark.parametrize("evaluate_first", [False, True])
@pytest.mark.parametrize("level", ["L1", "L0"])
def test_auto_checks_name_the_call_that_writes_nan_into_moving_variance(work, level, evaluate_first):
    """Auto checks (the default): step 1 is a watched window, whose
    gradient computation returns a finite loss and finite gradients while
    the BatchNorm writes NaN into its moving variance. The state watch sees
    the Parameter turn NaN when the computation returns, and the replay,
    started from the moving statistics as the window began, names the same
    call as exact checks, in the same step; training is unchanged."""
    tmp_path, make = work
    exact_dir = tmp_path / "dump"
    losses, out, variances = train_with_remainder(make(level, checks="auto"), level, evaluate_first)
    assert all(np.isfinite(losses)) and np.isnan(variances[1]).all()
    assert not records(tmp_path, 0)
    step, first = first_record(tmp_path)
    assert (step, first["name"], first["origin"], first["where"], first["written"]) == \
        (1, EXPECTED_WRITER[level], True, line_of("bn call"), ["bn.moving_variance"])
    assert first["replay"] == line_of("grad call")
    entry = read_json(str(exact_dir / "step1" / "rank" / "dump.json"))["data"][first["name"]]
    before = entry["input_args"][4] if level == "L1" else entry["parameters"]["moving_variance"]
    assert np.isfinite(before["Max"])  # the replay started from the statistics the window began with
    plain = train_with_remainder(_Off(), level, evaluate_first)
    assert plain[0] == losses and np.array_equal(plain[1], out, equal_nan=True)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(plain[2], variances))


class _Off:
    """A debugger that does nothing (the same training without one)."""

    def start(self, *args):
        pass

    stop = step = start


@pytest.mark.parametrize("sync", ["auto", "0"])  # L0's snapshots: host copies, or device copies
@pytest.mark.parametrize("level", ["L1", "L0"])
def test_the_call_that_writes_nan_into_moving_variance_is_the_origin_in_that_step(work, monkeypatch, level, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    losses, out, variances = train_with_remainder(make(level), level)
    assert all(np.isfinite(losses)) and np.isfinite(variances[0]).all() and np.isnan(variances[1]).all()
    assert np.isfinite(out).all()  # in evaluation the NaN normalises every value, and ReLU turns NaN into 0
    assert not records(tmp_path, 0)
    step, first = first_record(tmp_path)
    assert (step, first["name"], first["origin"], first["where"], first["written"]) == \
        (1, EXPECTED_WRITER[level], True, line_of("bn call"), ["bn.moving_variance"])
    assert "entered" not in first
    entry = read_json(str(tmp_path / "dump" / "step1" / "rank" / "dump.json"))["data"][first["name"]]
    key = "input_args[4]" if level == "L1" else "moving_variance"
    assert np.isnan(entry["written"][key]["Max"])
    before = entry["input_args"][4] if level == "L1" else entry["parameters"]["moving_variance"]
    assert np.isfinite(before["Max"])  # the value the call started from
    # the evaluation step carries it, and says the Parameter held NaN before it started
    later = records(tmp_path, 2)[0]
    assert not later["origin"] and later["entered"]["source"] == "parameter"
    assert later["entered"]["parameter"] == "bn.moving_variance" and later["entered"]["at_start"]
    assert later["where"] == line_of("bn call")
    assert assert_origin_invariant(tmp_path / "dump") >= 2
    payload, text = report(tmp_path)
    assert payload["started"]["written"] == ["bn.moving_variance"]
    assert (f"Overflow started in step1/rank: {EXPECTED_WRITER[level]} ({'API' if level == 'L1' else 'Cell'}, "
            f"forward) at {line_of('bn call')}, writing inf/nan into Parameter bn.moving_variance.") in text
    assert "wrote inf/nan into Parameter bn.moving_variance (in place)" in text


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_an_inference_batchnorm_first_does_not_hide_the_training_write(work, level):
    """MindSpore marks a BatchNorm primitive as writing its inputs per
    instance (``is_training``), not per class: an inference call seen first
    must not make the training call count as read-only."""
    tmp_path, make = work
    train_with_remainder(make(level), level, evaluate_first=True)
    step, first = first_record(tmp_path)
    assert (step, first["origin"], first["written"]) == (1, True, ["bn.moving_variance"])
    assert first["name"] == EXPECTED_WRITER[level].replace("0", "1")  # the inference call was the first
    assert_origin_invariant(tmp_path / "dump")


def test_l0_a_cell_called_twice_starts_its_second_call_from_the_first_calls_values(work):
    """A BatchNorm Cell called twice in one window: its second call is
    judged from what the first one left (a snapshot), not from ``start()``."""
    tmp_path, make = work
    ms.set_seed(1)
    net = nn.SequentialCell([nn.BatchNorm1d(3)])
    net.set_train(True)
    debugger = make("L0")
    debugger.start(net)
    net(Tensor(np.ones((1, 3), np.float32)))   # writes NaN: the origin
    net(Tensor(np.ones((4, 3), np.float32)))   # starts from NaN: carried
    debugger.stop()
    got = records(tmp_path, 0)
    assert [(r["name"], r["origin"], r.get("written")) for r in got] == [
        ("Cell.0.BatchNorm1d.forward.0", True, ["0.moving_variance"]),
        ("Cell.0.BatchNorm1d.forward.1", False, None)]
    assert_origin_invariant(tmp_path / "dump")


def test_l0_reads_after_each_call_only_the_state_a_cell_updates():
    """Which own Parameters L0 snapshots after each call: a normalisation
    Cell's moving or running statistics, and the Parameters that need no
    gradient in a Cell holding a Primitive that writes its inputs; never
    the frozen weights of other Cells (a frozen backbone would be copied
    after every call)."""
    from mindspore import mint

    from probe_runtime.l0.plan import writable_parameters

    def writable(cell):
        params = {key.split(".")[-1]: value for key, value in cell.parameters_dict(recurse=False).items()}
        return sorted(writable_parameters(cell, params))

    class Ema(nn.Cell):
        def __init__(self):
            super().__init__()
            self.shadow = Parameter(Tensor(np.zeros(3, np.float32)), name="shadow", requires_grad=False)
            self.update = ops.AssignSub()

        def construct(self, x):
            self.update(self.shadow, x)
            return x

    frozen = nn.Dense(3, 3)
    frozen.weight.requires_grad = False
    assert writable(nn.BatchNorm1d(3)) == ["mean", "variance"]
    assert writable(mint.nn.BatchNorm2d(3)) == ["running_mean", "running_var"]  # not the int64 counter
    assert writable(Ema()) == ["shadow"]
    assert writable(frozen) == [] and writable(nn.LayerNorm((3,))) == []
