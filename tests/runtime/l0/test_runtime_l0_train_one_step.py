"""L0 with a training-step Cell given to ``start()``: ``nn.TrainOneStepCell``,
``nn.TrainOneStepWithLossScaleCell`` or a step Cell of one's own.

Such a Cell's own ``construct`` computes the gradients of its network (a
``GradOperation`` over ``self.network``) and hands them to its
``grad_reducer`` and optimizer. A tester found that when a sub-Cell of the
network made the inf in that gradient computation (a float16 Dense whose
weight gradient overflows, the backward of ``ops.exp`` in a small Cell),
the right sub-Cell was the origin, but a second ORIGIN record said the
overflow started "inside TrainOneStepCell.construct itself" (``entered``
source ``own-construct``): the inf gradients its ``grad_reducer`` got
were taken for values its own code made. They came from the gradient
computation over its sub-Cells; only inf/nan its own code makes from
finite values (gradients scaled there) is its own.

The loss scale of ``nn.TrainOneStepWithLossScaleCell`` is a Parameter of
the step Cell handed to its ``DynamicLossScaleUpdateCell``, which writes
the new scale into it in place. A tester found the update Cell carried,
"Parameter scale_sense already held inf/nan at start()", its input dumped
as inf, in the step whose own ``loss_scale * scale_factor`` made that inf
from a finite scale: a Cell's Parameter arguments are now judged on their
values as the call began, and the Cell that wrote inf/nan into one is the
origin.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Parameter, ParameterTuple, Tensor, nn, ops  # noqa: E402

from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_support import PatchedState, assert_origin_invariant, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()
OWN = "own-construct"


class _Exp(nn.Cell):
    """exp in float16: exp(10) = 22026 is finite, its backward (the
    incoming gradient, 88104, cast to float16) is not."""

    def construct(self, x):
        return ops.exp(x.astype(ms.float16)).astype(ms.float32)


class _Net(nn.Cell):
    """fc1 (float16, all-ones weight, no bias) -> act -> fc2 (all ones).

    ``how="dense"``: act is ReLU; with inputs of 200, fc1's outputs (800)
    and the loss are finite, its weight gradient (2 * 3200 * 200, float16)
    is not: ``Cell.network._backbone.fc1.Dense.parameters_grad`` is the
    origin. ``how="exp"``: act is :class:`_Exp`, with inputs 2.5 (fc1's
    outputs 10): its backward entry is the origin."""

    def __init__(self, how):
        super().__init__()
        self.fc1 = nn.Dense(4, 4, weight_init="ones", has_bias=False)
        self.fc1.to_float(ms.float16)
        self.act = _Exp() if how == "exp" else nn.ReLU()
        self.fc2 = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x).astype(ms.float32)))


ORIGIN = {"dense": "Cell.network._backbone.fc1.Dense.parameters_grad",
          "exp": "Cell.network._backbone.act._Exp.backward.0"}
BIG = {"dense": 200.0, "exp": 2.5}


class _CpuLossScaleCell(nn.TrainOneStepWithLossScaleCell):
    """``nn.TrainOneStepWithLossScaleCell`` whose overflow status runs on
    the CPU: its own compiles ``NPUGetFloatStatusV2``, which the CPU
    backend has no kernel for (docs/l2.md). Its ``construct`` is
    MindSpore's, unchanged (a ``grad_reducer`` call, the optimizer's
    only when the gradients are finite)."""

    def get_overflow_status(self, status, compute_output):
        return ops.logical_not(ms.amp.all_finite(compute_output))


def _train_cell(wrapper, network, optimizer):
    if wrapper == "TrainOneStepCell":
        return nn.TrainOneStepCell(network, optimizer)
    return _CpuLossScaleCell(network, optimizer, scale_sense=nn.FixedLossScaleUpdateCell(1.0))


def _scenario(wrapper, how):
    """Three steps of ``train_net(x, y)``; in step 1 a sub-Cell of the
    network makes inf in the gradient computation (SGD's learning rate is
    0, so the weights stay as they were)."""

    def run(debugger):
        net = _Net(how)
        optimizer = nn.SGD(net.trainable_params(), learning_rate=0.0)
        train_net = _train_cell(wrapper, nn.WithLossCell(net, nn.MSELoss()), optimizer)
        train_net.set_train()
        y = Tensor(np.zeros((2, 1), np.float32))
        for step in range(3):
            x = Tensor(np.full((2, 4), BIG[how] if step == 1 else 0.5, np.float16))
            debugger.start(train_net)
            train_net(x, y)
            debugger.stop()
            debugger.step()

    return run


@pytest.mark.parametrize("how", ["dense", "exp"])
@pytest.mark.parametrize("wrapper", ["TrainOneStepCell", "TrainOneStepWithLossScaleCell"])
def test_a_train_step_cell_is_not_the_origin_of_its_sub_cells_gradient(tmp_path, monkeypatch, wrapper, how):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(wrapper, how), ORIGINAL, level="L0")
    own_record = "Cell.TrainOneStepCell." if wrapper == "TrainOneStepCell" else "Cell._CpuLossScaleCell."
    for records in (default, exact):
        step1 = [r for step, r in records if step == 1]
        summary = [(r["name"], r["origin"], (r.get("entered") or {}).get("source")) for r in step1]
        assert step1 and step1[0]["name"] == ORIGIN[how] and step1[0]["origin"] is True, summary
        assert [r["name"] for r in step1 if r["origin"]] == [ORIGIN[how]], summary
        assert not [r for r in step1 if r["name"].startswith(own_record)], summary
        assert OWN not in [(r.get("entered") or {}).get("source") for step, r in records], summary
        assert "Cell.grad_reducer.Identity.forward.0" in [r["name"] for r in step1], summary
        assert not [r for step, r in records if step == 0], records
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")


class _OwnStep(nn.Cell):
    """A training step of one's own: the gradients of its network, scaled
    by its own code (``scale``), handed to a reducer (``reducer=True``) or
    returned as they are."""

    def __init__(self, network, reducer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = ops.GradOperation(get_by_list=True)
        self.reducer = nn.Identity() if reducer else None

    def construct(self, x, y, scale):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.weights)(x, y)
        grads = tuple(g * scale for g in grads)
        if self.reducer is not None:
            grads = self.reducer(grads)
        return loss, grads


@pytest.mark.parametrize("reducer", [True, False])
def test_a_step_cells_own_code_is_named_only_for_the_inf_it_made(tmp_path, monkeypatch, reducer):
    """Step 0: fc1's float16 weight gradient overflows in the gradient
    computation: it is the only origin, the step Cell (handing the
    gradients to its reducer, or returning them) is not named. Step 1: the
    gradients are finite and the step Cell's own code scales them to inf
    (1e38): it is the origin, ``own-construct``."""

    def run(debugger):
        step_cell = _OwnStep(nn.WithLossCell(_Net("dense"), nn.MSELoss()), reducer)
        y = Tensor(np.zeros((2, 1), np.float32))
        for x, scale in ((200.0, 1.0), (0.5, 1e38)):
            debugger.start(step_cell)
            step_cell(Tensor(np.full((2, 4), x, np.float16)), y, Tensor(scale, ms.float32))
            debugger.stop()
            debugger.step()

    default, exact = run_default_and_exact(tmp_path, monkeypatch, run, ORIGINAL, level="L0")
    for records in (default, exact):
        step0 = [(r["name"], r["origin"], (r.get("entered") or {}).get("source")) for step, r in records
                 if step == 0]
        assert step0[0] == ("Cell.network._backbone.fc1.Dense.parameters_grad", True, None), step0
        assert [name for name, origin, _ in step0 if origin] == [step0[0][0]], step0
        assert OWN not in [source for _, _, source in step0] and "Cell._OwnStep.forward.0" not in \
            [name for name, _, _ in step0], step0
        step1 = [r for step, r in records if step == 1]
        assert step1 and step1[0]["name"] == "Cell._OwnStep.forward.0" and step1[0]["origin"] is True, step1
        assert step1[0]["entered"]["source"] == OWN, step1[0]
        assert [r["name"] for r in step1 if r["origin"]] == ["Cell._OwnStep.forward.0"], step1
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")


class _ScalingStep(nn.Cell):
    """A training step of one's own that scales the gradients of its
    network in its own code and hands them to its optimizer, returning
    only the loss."""

    def __init__(self, network, optimizer, sens_param=False):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.grad = ops.GradOperation(get_by_list=True, sens_param=sens_param)

    def construct(self, x, y, scale):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.weights)(x, y)
        self.optimizer(tuple(g * scale * scale for g in grads))
        return loss


class _SensStep(_ScalingStep):
    """A training step of one's own that asks for the gradients with a
    sensitivity (``sens_param=True``) its own code scales: 1e38 twice is
    inf in float32."""

    def __init__(self, network, optimizer):
        super().__init__(network, optimizer, sens_param=True)

    def construct(self, x, y, scale):
        loss = self.network(x, y)
        sens = ops.ones_like(loss) * scale * scale
        self.optimizer(self.grad(self.network, self.weights)(x, y, sens))
        return loss


def _scaled_step(step_class):
    """Three steps of ``step_class`` (a step Cell of one's own); in step 1
    its own code scales by 1e38 twice: inf in float32."""

    def run(debugger):
        net = _Net("dense")
        optimizer = nn.SGD(net.trainable_params(), 1e-3)
        step_cell = step_class(nn.WithLossCell(net, nn.MSELoss()), optimizer)
        y = Tensor(np.zeros((2, 1), np.float32))
        for scale in (1.0, 1e38, 1.0):
            debugger.start(step_cell)
            step_cell(Tensor(np.full((2, 4), 0.5, np.float16)), y, Tensor(scale, ms.float32))
            debugger.stop()
            debugger.step()

    return run


@pytest.mark.parametrize("nums", [1, -1])
@pytest.mark.parametrize("step_class", [_ScalingStep, _SensStep])
def test_a_step_cell_whose_own_code_scales_to_inf_is_the_first_record(tmp_path, monkeypatch, step_class, nums):
    """A fresh user's finding (``_ScalingStep``): in the step whose own
    code scaled finite gradients to inf before its optimizer, the first
    record was ``outside`` ("the code between them made it"), the only one
    kept with ``overflow_nums`` 1; and once the optimizer had written the
    inf into the weights, the step Cell's Parameters (read after its call)
    were taken as its inputs, so it was not named at all. Found while
    fixing it (``_SensStep``): with an inf sensitivity every backward entry
    was carried and none named where it started. The step Cell is the
    origin (``own-construct``), recorded first, what it fed after it,
    carried; the weights the update wrote are its result, not its input."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scaled_step(step_class), ORIGINAL,
                                           level="L0", nums=nums)
    name = f"Cell.{step_class.__name__}.forward.0"
    for records in (default, exact):
        assert {step for step, _ in records} == ({1} if nums == 1 else {1, 2}), records
        step1 = [(r["name"], r["origin"], (r.get("entered") or {}).get("source")) for step, r in records
                 if step == 1]
        assert step1[0] == (name, True, OWN), step1
        assert [n for n, origin, _ in step1 if origin] == [name], step1
        assert "outside" not in [n for n, _, _ in step1], step1
        if nums == -1 and step_class is _SensStep:
            assert "Cell.network._loss_fn.MSELoss.backward.0" in [n for n, _, _ in step1], step1
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")


# -- a Parameter handed to a Cell that writes it in place (the loss scale) ------------------------------
UPDATE = "Cell.loss_scaling_manager.DynamicLossScaleUpdateCell.forward.0"


def _dynamic_loss_scale(debugger):
    """The tester's script: a ``DynamicLossScaleUpdateCell`` starting at
    2**120 that grows the scale by 2**8 after every finite step
    (``scale_window=1``): in step 0 its own ``loss_scale * scale_factor``
    is inf, which it assigns to ``scale_sense``."""
    ms.set_seed(0)
    net = nn.Dense(4, 2)
    update = nn.DynamicLossScaleUpdateCell(loss_scale_value=2.0 ** 120, scale_factor=2.0 ** 8, scale_window=1)
    step_cell = _CpuLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.01), update)
    rs = np.random.RandomState(0)
    for step in range(3):
        x = Tensor(rs.randn(4, 4).astype(np.float32) * 0.1)
        y = Tensor(np.zeros((4, 2), np.float32))
        scale = float(step_cell.scale_sense.asnumpy())
        debugger.start(step_cell)
        _, overflow, _ = step_cell(x, y)
        debugger.stop()
        debugger.step()
        if step == 0:  # the truth, without the debugger: finite before the step, inf written by the update
            assert scale == 2.0 ** 120 and not bool(overflow.asnumpy())
            assert np.isinf(step_cell.scale_sense.asnumpy())


def _entry(tmp_path, checks, name, step=0):
    return read_json(str(tmp_path / checks / "dump" / f"step{step}" / "rank" / "dump.json"))["data"][name]


@pytest.mark.parametrize("sync", ["auto", "0"])  # the snapshots: host copies, or device copies
def test_the_update_cell_that_writes_inf_into_the_loss_scale_is_the_origin(tmp_path, monkeypatch, sync):
    """Its record is the step's first, the origin, naming ``scale_sense``
    under ``written``; its ``input_args[0]`` is the scale as the Cell got
    it (2**120), ``written`` what it left there (inf)."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _dynamic_loss_scale, ORIGINAL, level="L0")
    for checks, records in (("default", default), ("exact", exact)):
        step, first = records[0]
        assert (step, first["name"], first["origin"], first.get("written")) == (0, UPDATE, True, ["scale_sense"]), \
            records
        assert "entered" not in first, first
        entry = _entry(tmp_path, checks, UPDATE)
        assert entry["input_args"][0]["Max"] == 2.0 ** 120, entry["input_args"]
        assert np.isinf(entry["written"]["input_args[0]"]["Max"]), entry["written"]
        assert assert_origin_invariant(tmp_path / checks / "dump") >= 1
    assert all("already held inf/nan at start()" not in str(r.get("entered")) for _, r in default + exact)


class _Scaler(nn.Cell):
    """A model holding a loss scale (a Parameter, ``value`` at first) and
    handing it to a ``DynamicLossScaleUpdateCell`` (by position, or by
    keyword with ``keyword``). ``scale_first``: its own code multiplies the
    scale by that first (``ops.assign``, which L0 does not see)."""

    def __init__(self, value, keyword=False):
        super().__init__()
        self.scale = Parameter(Tensor(value, ms.float32), name="scale", requires_grad=False)
        self.update = nn.DynamicLossScaleUpdateCell(loss_scale_value=1.0, scale_factor=2.0 ** 8, scale_window=1)
        self.keyword = keyword

    def construct(self, overflow, scale_first=None):
        if scale_first is not None:
            ops.assign(self.scale, self.scale * scale_first)
        if self.keyword:
            return self.update(loss_scale=self.scale, overflow=overflow)
        return self.update(self.scale, overflow)


def _scale_once(value, keyword=False, scale_first=None):
    def run(debugger):
        model = _Scaler(value, keyword)
        debugger.start(model)
        model(Tensor(False), None if scale_first is None else Tensor(scale_first, ms.float32))
        debugger.stop()
        debugger.step()
        assert np.isinf(model.scale.asnumpy())
    return run


SCALER_UPDATE = "Cell.update.DynamicLossScaleUpdateCell.forward.0"


@pytest.mark.parametrize("keyword", [False, True])
def test_a_cell_writing_inf_into_a_parameter_argument_is_the_origin(tmp_path, monkeypatch, keyword):
    """The same by position or by keyword: the input is the scale as the
    Cell got it (2**120), ``written`` names the Parameter."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scale_once(2.0 ** 120, keyword), ORIGINAL,
                                           level="L0")
    label = "input_kwargs" if keyword else "input_args"
    key = "input_kwargs.loss_scale" if keyword else "input_args[0]"
    for checks, records in (("default", default), ("exact", exact)):
        assert [(s, r["name"], r["origin"], r.get("written")) for s, r in records][:1] == \
            [(0, SCALER_UPDATE, True, ["scale"])], records
        entry = _entry(tmp_path, checks, SCALER_UPDATE)
        given = entry[label]["loss_scale"] if keyword else entry[label][0]
        assert given["Max"] == 2.0 ** 120, entry
        assert np.isinf(entry["written"][key]["Max"]), entry["written"]
        assert_origin_invariant(tmp_path / checks / "dump")


def test_a_parameter_argument_above_the_copy_limit_is_read_as_it_is(tmp_path, monkeypatch):
    """A large Parameter given to a Cell (a tied embedding table) is not
    copied at each call: it is read as it is, as before, so a write into it
    is not seen as the Cell's (its input shows the value it wrote)."""
    from probe_runtime.l0 import cell_hooks

    monkeypatch.setattr(cell_hooks, "ARGUMENT_COPY_LIMIT", 0)
    for records in run_default_and_exact(tmp_path, monkeypatch, _scale_once(2.0 ** 120), ORIGINAL, level="L0"):
        assert records and not any(r.get("written") for _, r in records), records
        assert not (records[0][1]["name"] == SCALER_UPDATE and records[0][1]["origin"]), records


def test_a_parameter_argument_that_held_inf_at_start_is_said_so(tmp_path, monkeypatch):
    """The scale is inf at ``start()``: the update Cell carries it (its
    input and what it left in the Parameter are inf, and it wrote no
    inf/nan there), and ``entered`` says the Parameter already held inf/nan
    then."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scale_once(float("inf")), ORIGINAL, level="L0")
    for checks, records in (("default", default), ("exact", exact)):
        step, first = records[0]
        assert (step, first["name"], first["origin"]) == (0, SCALER_UPDATE, False), records
        assert not first.get("written"), first
        entered = first["entered"]
        assert (entered["source"], entered["parameter"], entered["at_start"]) == ("parameter", "scale", True)
        assert entered["message"] == ("Parameter scale already held inf/nan at start(); first used by input_args[0] "
                                      f"of {SCALER_UPDATE}")
        entry = _entry(tmp_path, checks, SCALER_UPDATE)
        assert np.isinf(entry["input_args"][0]["Max"]) and np.isinf(entry["written"]["input_args[0]"]["Max"])


def test_a_parameter_finite_at_start_is_never_said_to_have_held_inf_then(tmp_path, monkeypatch):
    """The scale is finite at ``start()`` (2**120, its probe at the model's
    call) and the model's own code makes it inf (``ops.assign``) before
    handing it to the update Cell: that Cell carries it, and ``entered``
    says the Parameter was finite at ``start()`` and code no Cell check
    sees wrote it, not that it held inf/nan at ``start()``."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scale_once(2.0 ** 120, scale_first=2.0 ** 8),
                                           ORIGINAL, level="L0")
    for checks, records in (("default", default), ("exact", exact)):
        step, first = records[0]
        assert (step, first["name"], first["origin"]) == (0, SCALER_UPDATE, False), records
        entered = first["entered"]
        assert (entered["source"], entered["parameter"], entered["at_start"]) == ("parameter", "scale", False)
        assert "already held inf/nan at start()" not in entered["message"], entered
        assert entered["message"].startswith("Parameter scale was finite at start() and held inf/nan when first "
                                             f"used, by input_args[0] of {SCALER_UPDATE}: something wrote it in "
                                             "between (code no Cell check sees"), \
            entered



class _Scaled(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2)

    def construct(self, x, temp):
        return self.fc(x) * temp


class _TempNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.head = _Scaled()

    def construct(self, x, temp):
        return self.head(x, temp).sum()


def test_a_parameter_not_the_models_is_never_said_to_have_held_inf_at_start(tmp_path, monkeypatch):
    """A review's finding: a temperature Parameter that is not the
    model's, finite (1e20) at ``start()``, overflowed by the training
    loop's own ``ops.assign`` before the model hands it to a sub-Cell. Its
    value at ``start()`` was never read, so the record must not say it held
    inf/nan then; it says the value was not read and code no Cell check
    sees may have written it."""
    def run(debugger):
        net = _TempNet()
        optimizer = nn.SGD(net.trainable_params(), 0.01)
        temp = Parameter(Tensor(1e20, ms.float32), name="temp", requires_grad=False)
        grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
        debugger.start(net)
        ops.assign(temp, temp * 1e20)
        _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)), temp)
        optimizer(grads)
        debugger.stop()
        debugger.step()

    default, exact = run_default_and_exact(tmp_path, monkeypatch, run, ORIGINAL, level="L0")
    for records in (default, exact):
        step, first = records[0]
        assert (step, first["name"]) == (0, "Cell.head._Scaled.forward.0"), records
        entered = first["entered"]
        assert (entered["source"], entered["parameter"], entered["at_start"]) == ("parameter", "temp", False)
        assert "at start();" not in entered["message"], entered
        assert "value at start() was not read" in entered["message"], entered


class _EmaUpdate(nn.Cell):
    """Writes its shadows in place, with the bias correction
    ``1 / (1 - 0.9 ** t)``: at ``t`` 0 that is x / 0."""

    def construct(self, shadows, weights, t):
        correction = 1 - 0.9 ** t
        for shadow, weight in zip(shadows, weights):
            ops.assign(shadow, (shadow * 0.9 + 0.1 * weight) / correction)
        return weights[0].sum()


class _EmaNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2)
        self.ema = _EmaUpdate()
        self.shadows = ParameterTuple([Parameter(Tensor(np.ones((2, 4), np.float32)), name="shadow_w",
                                                 requires_grad=False)])

    def construct(self, x, t):
        return self.fc(x).sum() + 0 * self.ema(self.shadows, (self.fc.weight,), t)


def test_a_cell_writing_inf_into_a_parameter_inside_a_tuple_argument_is_the_origin(tmp_path, monkeypatch):
    """A review's finding: an EMA Cell given its shadows as a
    ``ParameterTuple`` writes inf into them at step 0 (its output stays
    finite): only top-level Parameter arguments were copied, so the Cell
    was not named, and the record said the shadow 'held inf/nan when first
    used'. Parameters directly inside a tuple argument are copied too: the
    EMA Cell is the origin, ``written`` names the shadow."""
    def run(debugger):
        net = _EmaNet()
        optimizer = nn.SGD(net.trainable_params(), 0.01)
        grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
        for step in range(2):
            debugger.start(net)
            _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)), step)
            optimizer(grads)
            debugger.stop()
            debugger.step()

    default, exact = run_default_and_exact(tmp_path, monkeypatch, run, ORIGINAL, level="L0")
    for checks, records in (("default", default), ("exact", exact)):
        step, first = records[0]
        assert (step, first["name"], first["origin"], first.get("written")) == \
            (0, "Cell.ema._EmaUpdate.forward.0", True, ["shadow_w"]), records
        entry = _entry(tmp_path, checks, "Cell.ema._EmaUpdate.forward.0")
        assert entry["input_args"][0][0]["Max"] == 1.0, entry["input_args"]
        assert np.isinf(entry["written"]["input_args[0][0]"]["Max"]), entry["written"]


def test_a_model_parameter_written_after_start_is_not_said_to_have_held_inf_then(tmp_path, monkeypatch):
    """A review's finding: the model's own scale is 2.0 at ``start()``;
    the loop sets it to inf (``ops.assign``) before the model's first
    call. Its value at ``start()`` was its probe at that first call, so the
    record said it "already held inf/nan at start()". The models' own
    Parameters are probed at ``start()`` now: it was finite then."""
    def run(debugger):
        model = _Scaler(2.0)
        debugger.start(model)
        ops.assign(model.scale, Tensor(float("inf"), ms.float32))
        model(Tensor(False))
        debugger.stop()
        debugger.step()

    default, exact = run_default_and_exact(tmp_path, monkeypatch, run, ORIGINAL, level="L0")
    for records in (default, exact):
        step, first = records[0]
        entered = first["entered"]
        assert (step, entered["parameter"], entered["at_start"]) == (0, "scale", False), records
        assert entered["message"].startswith("Parameter scale was finite at start() and held inf/nan when first "
                                             "used"), entered
