"""The default checks give exact checks' first record (issue 33).

Each scenario is a small training script rebuilt from a public bug-report
pattern (written here from its description). It runs twice, in fresh dump
folders: under the default checks (no ``checks`` argument, no
``PROBE_CHECKS``) and under ``checks="exact"``; both must write the same
first record, in the same step, and that record must be the right one.
"""
from __future__ import annotations


import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Parameter, Tensor, nn, ops  # noqa: E402

from probe_runtime import PrecisionDebugger  # noqa: E402
from runtime_support import PatchedState, dump_records, isolate, run_default_and_exact, write_runtime_config  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def _run_both(tmp_path, monkeypatch, scenario, level="L1"):
    """(records under the default checks, records under exact checks)."""
    return run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level)


def _first(records):
    assert records, "nothing was recorded"
    step, record = records[0]
    return step, record["name"]


def _loop(debugger, steps, body, model=None):
    for step in range(steps):
        debugger.start(model) if model is not None else debugger.start()
        body(step)
        debugger.stop()
        debugger.step()


def test_clip_by_global_norm_squares_overflow(tmp_path, monkeypatch):
    """float16 gradients up to 300: the norm's squares overflow, every
    gradient is clipped to 0 (the loss and gradients stay finite)."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones(4, np.float16)), name="w")
        grad_fn = ms.value_and_grad(lambda x: (w * x).sum(), None, [w])

        def body(step):
            _, grads = grad_fn(Tensor(np.full(4, 300.0 if step else 1.0, np.float16)))
            ops.clip_by_global_norm(grads, 1.0)
        _loop(debugger, 2, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 1 and name.startswith("Primitive.Square"), name
    assert exact[0][1].get("inside", "").startswith("Functional.clip_by_global_norm")


def test_float16_rmsnorm_without_upcast(tmp_path, monkeypatch):
    """h * h overflows in float16; rsqrt(inf) = 0 hides it before the loss."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones(8, np.float16)), name="w")

        def loss_fn(h):
            norm = ops.rsqrt((h * h).mean(-1, keep_dims=True) + 1e-6)
            return (h * norm * w).sum()
        grad_fn = ms.value_and_grad(loss_fn, None, [w])
        _loop(debugger, 2, lambda step: grad_fn(Tensor(np.full((2, 8), 300.0 if step else 1.0, np.float16))))

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    assert _first(exact) == (1, "Tensor.__mul__.0.forward")


def test_gradient_accumulation_names_the_micro_batch_that_overflowed(tmp_path, monkeypatch):
    """11 micro-batches in one step, the 11th overflows: its exp is call 10."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones(2, np.float32)), name="w")
        grad_fn = ms.value_and_grad(lambda x: ops.exp(x * w).sum(), None, [w])

        def body(step):
            for micro in range(11):
                grad_fn(Tensor(np.full(2, 200.0 if step and micro == 10 else 0.5, np.float32)))
        _loop(debugger, 2, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (1, "Functional.exp.10.forward")


def test_adam_written_out_in_float16_divides_zero_by_zero(tmp_path, monkeypatch):
    """eps 1e-8 rounds to 0 in float16: m / (sqrt(v) + eps) is 0/0 where a
    gradient is 0 (here from step 1, when eps goes from 1e-3 to 1e-8). The
    update is plain PyNative code."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones(4, np.float16)), name="w")
        m = Tensor(np.zeros(4, np.float16))
        v = Tensor(np.zeros(4, np.float16))
        grad_fn = ms.value_and_grad(lambda x: (w * x).sum(), None, [w])

        def body(step):
            nonlocal m, v
            _, (g,) = grad_fn(Tensor(np.array([1.0, 2.0, 0.0, 1.0], np.float16)))
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            update = m / (ops.sqrt(v) + Tensor(1e-8 if step else 1e-3, ms.float16))
            ops.assign(w, w - 0.01 * update)
        _loop(debugger, 2, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 1 and name.startswith("Tensor.__truediv__"), name


def test_an_ema_teacher_outside_the_gradient_computation(tmp_path, monkeypatch):
    """A float16 teacher, run outside value_and_grad, divides by a tiny
    temperature: its division is named, not the student's first call."""
    def scenario(debugger):
        ms.set_seed(3)
        student = nn.Dense(4, 2).to_float(ms.float16)
        teacher = nn.Dense(4, 2).to_float(ms.float16)
        grad_fn = ms.value_and_grad(lambda x, t: ((student(x) - t) ** 2).mean(), None, student.trainable_params())

        def body(step):
            x = Tensor(np.full((2, 4), 1.0, np.float16))
            target = teacher(x) / Tensor(1e-7 if step else 1.0, ms.float16)
            grad_fn(x, ops.stop_gradient(target))
        _loop(debugger, 2, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 1 and "truediv" in name, name


class _Inverse(nn.learning_rate_schedule.LearningRateSchedule):
    """A learning rate of 0.1 / (2 - global_step): infinite at step 2."""

    def construct(self, global_step):
        return 0.1 / (2.0 - global_step.astype(ms.float32))


def test_a_learning_rate_schedule_that_goes_infinite_is_named_in_its_step(tmp_path, monkeypatch):
    """The update of a compiled optimizer (nn.SGD) writes inf/nan into the
    weights in step 2: said in step 2 (an ``update`` record), not a step late."""
    def scenario(debugger):
        ms.set_seed(1)
        net = nn.Dense(4, 1)
        optimizer = nn.SGD(net.trainable_params(), learning_rate=_Inverse())
        grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)

        def body(step):
            _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)))
            optimizer(grads)
        _loop(debugger, 4, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 2, (step, name)
    if name == "update":  # the optimizer's construct ran as a graph
        assert "the update made it" in exact[0][1]["message"]
    else:  # it ran in PyNative: the schedule's division is named
        assert exact[0][1]["origin"] and "truediv" in name, name


def test_a_resumed_adam_moment_holding_nan_is_named_as_state(tmp_path, monkeypatch):
    """Resuming from a checkpoint whose Adam moment2 holds NaN: said in the
    first checked step, as the optimizer's own state."""
    def scenario(debugger):
        ms.set_seed(1)
        net = nn.Dense(4, 1)
        optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
        moment = optimizer.moment2[0]
        moment.set_data(Tensor(np.full(moment.shape, np.nan, np.float32)))
        grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
        debugger.set_init_step(5)

        def body(step):
            _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)))
            optimizer(grads)
        _loop(debugger, 2, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (5, "outside")
    record = exact[0][1]
    assert record["nonfinite"][0].startswith("Adam moment2 of "), record["nonfinite"]
    assert "held inf/nan before the first optimizer step Adam of this window" in record["message"]


def test_ctc_loss_log_alpha_holds_minus_inf_by_design(tmp_path, monkeypatch):
    """ops.ctc_loss's second output (log_alpha) holds -inf by design; the
    loss is finite until step 2, where no alignment fits (three repeated
    labels need five frames, with blanks between them, and the input has
    four): only step 2 is recorded."""
    def scenario(debugger):
        logits = Parameter(Tensor(np.random.default_rng(0).normal(size=(4, 1, 5)).astype(np.float32)), name="logits")

        def loss_fn(target_length):
            log_probs = ops.log_softmax(logits, axis=-1)
            loss, _ = ops.ctc_loss(log_probs, Tensor(np.array([[1, 1, 1, 1]]), ms.int32),
                                   Tensor(np.array([4]), ms.int32), target_length)
            return loss
        grad_fn = ms.value_and_grad(loss_fn, None, [logits])

        def body(step):
            grad_fn(Tensor(np.array([3 if step == 2 else 2]), ms.int32))
        _loop(debugger, 3, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 2, (step, name)


class _Attention(nn.Cell):
    """An additive float16 mask built in the model's own construct, between
    its sub-Cells: ``scale`` 1000 makes it inf (1000 * 1000 in float16)."""

    def __init__(self):
        super().__init__()
        self.q = nn.Dense(4, 4).to_float(ms.float16)
        self.out = nn.Dense(4, 4).to_float(ms.float16)

    def construct(self, x, scale):
        h = self.q(x)
        mask = ops.ones_like(h) * scale * scale
        return self.out(h + mask)


def test_l0_an_overflow_in_the_models_own_construct_is_said_in_the_record(tmp_path, monkeypatch):
    """L0: the inf is made in Attention.construct itself; the record (not
    only a warning on stderr) says so, with the hint to use level L1."""
    def scenario(debugger):
        ms.set_seed(2)
        net = _Attention()
        grad_fn = ms.value_and_grad(lambda x, s: net(x, s).astype(ms.float32).sum(), None, net.trainable_params())

        def body(step):
            grad_fn(Tensor(np.ones((2, 4), np.float16)), Tensor(1000.0 if step else 1.0, ms.float16))
        _loop(debugger, 2, body, model=net)

    default, exact = _run_both(tmp_path, monkeypatch, scenario, level="L0")
    assert _first(default) == _first(exact)
    step, record = exact[0]
    assert step == 1 and record["name"] == "Cell._Attention.forward.0" and record["origin"], record["name"]
    assert record["entered"]["source"] == "own-construct"
    assert "_Attention.construct itself, between its sub-Cells" in record["entered"]["message"]
    assert "use level L1" in record["entered"]["message"]
    step, after = exact[1]
    assert step == 1 and after["name"] == "Cell.out.Dense.forward.0" and not after["origin"]


class _RatioLoss(nn.Cell):
    """A loss Cell with no sub-Cells: sum(p) / sum(t), 0/0 when both are 0."""

    def construct(self, p, t):
        return (p * t).sum() / t.sum()


def test_l0_a_loss_cell_given_to_start_is_itself_checked(tmp_path, monkeypatch):
    """L0 with start([net, loss_cell]) and 0/0 in the loss Cell (which has
    no sub-Cells): the loss Cell is named, as an origin, in its step."""
    def scenario(debugger):
        ms.set_seed(1)
        net = nn.Dense(4, 2)
        loss_cell = _RatioLoss()
        grad_fn = ms.value_and_grad(lambda x, t: loss_cell(net(x), t), None, net.trainable_params())

        def body(step):
            grad_fn(Tensor(np.ones((2, 4), np.float32)), Tensor(np.full((2, 2), 0.0 if step else 1.0, np.float32)))
        _loop(debugger, 2, body, model=[net, loss_cell])

    default, exact = _run_both(tmp_path, monkeypatch, scenario, level="L0")
    assert _first(default) == _first(exact) == (1, "Cell.1._RatioLoss.forward.0")
    record = exact[0][1]
    assert record["origin"] and record["entered"]["source"] == "own-construct"
    assert "use level L1" in record["entered"]["message"]


def test_l0_forward_only_the_root_cells_own_output(tmp_path, monkeypatch):
    """L0, a forward-only loop over a Dense given to start() (no sub-Cells)
    whose output overflows in float16: recorded, not 'no overflow found'."""
    def scenario(debugger):
        ms.set_seed(1)
        net = nn.Dense(4, 2).to_float(ms.float16)
        net.weight.set_data(Tensor(np.full((2, 4), 100.0, np.float32)))
        _loop(debugger, 2, lambda step: net(Tensor(np.full((2, 4), 200.0 if step else 1.0, np.float16))), model=net)

    default, exact = _run_both(tmp_path, monkeypatch, scenario, level="L0")
    assert _first(default) == _first(exact) == (1, "Cell.Dense.forward.0")
    assert exact[0][1]["origin"]


class _LogLoss(nn.LossBase):
    """log(0) from step 1 on: the loss is -inf in the forward pass."""

    def construct(self, logits, labels):
        return ops.log(ops.abs(logits - labels) * labels.sum()).mean()


def test_l0_model_train_a_loss_inf_in_the_forward_pass_is_named_first(tmp_path, monkeypatch):
    """L0 with Model.train and the network given to the callback: the loss
    Cell Model.train adds is not checked, so the -inf loss is said (an
    ``outside`` record) before any backward record, and no backward record
    of that step is an origin."""
    import mindspore.dataset as ds
    from mindspore.train import Model

    from probe_runtime import OverflowCheckCallback

    def scenario(debugger):
        ms.set_seed(1)
        net = nn.SequentialCell([nn.Dense(4, 4), nn.ReLU(), nn.Dense(4, 1)])

        def generate():
            for i in range(3):
                yield np.ones((4, 4), np.float32), np.full((4, 1), 0.0 if i else 1.0, np.float32)

        model = Model(net, _LogLoss(), nn.SGD(net.trainable_params(), 0.01))
        model.train(1, ds.GeneratorDataset(generate, ["x", "y"], shuffle=False),
                    callbacks=[OverflowCheckCallback(debugger, model=net)], dataset_sink_mode=False)

    default, exact = _run_both(tmp_path, monkeypatch, scenario, level="L0")
    assert _first(default) == _first(exact) == (1, "outside")
    assert "(the loss)" in exact[0][1]["message"] and "before its backward pass" in exact[0][1]["message"]
    step1 = [record for step, record in exact if step == 1]
    assert len(step1) > 1 and not [r["name"] for r in step1 if r["origin"]]


# -- -inf made by design (probe_runtime.check.by_design) ----------------------------------------
def _attention(reaches):
    """A training step whose scores get a -inf mask before a softmax; in
    the steps where ``reaches(step)``, the masked scores also go into the
    loss through a sum (a regulariser written on the wrong tensor), so the
    -inf reaches it."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones((4, 4), np.float32)), name="w")

        def loss_fn(x, keep, extra):
            scores = ops.matmul(x, w)
            masked = ops.masked_fill(scores, keep == 0, float("-inf"))
            loss = ops.softmax(masked, axis=-1).sum()
            return loss + masked.sum() if extra else loss
        grad_fn = ms.value_and_grad(loss_fn, None, [w])

        def body(step):
            keep = np.ones((2, 4), np.int32)
            keep[0, :2] = 0
            grad_fn(Tensor(np.ones((2, 4), np.float32)), Tensor(keep), reaches(step))
        _loop(debugger, 3, body)
    return scenario


def test_a_minus_inf_attention_mask_that_a_softmax_consumes_is_not_an_overflow(tmp_path, monkeypatch):
    """masked_fill with -inf before a softmax, every step: the loss and
    gradients are finite, so nothing is recorded (it was an ORIGIN in every
    step before)."""
    default, exact = _run_both(tmp_path, monkeypatch, _attention(lambda step: False))
    assert default == exact == []


def test_a_minus_inf_mask_that_reaches_the_loss_is_the_origin(tmp_path, monkeypatch):
    """Step 2 also sums the masked scores into the loss: the -inf made by
    design reached a judged result, so the masked_fill is the origin and
    the sum carries it."""
    default, exact = _run_both(tmp_path, monkeypatch, _attention(lambda step: step == 2))
    assert _first(default) == _first(exact) == (2, "Functional.masked_fill.0.forward")
    assert exact[0][1]["origin"]
    assert "sum" in exact[1][1]["name"] and not exact[1][1]["origin"], exact[1][1]["name"]


def test_log_of_zero_reaching_the_loss_is_named(tmp_path, monkeypatch):
    """log(0) in step 1 reaches the loss through a mean: log is the origin."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones(4, np.float32)), name="w")
        grad_fn = ms.value_and_grad(lambda x: ops.log(x * w).mean(), None, [w])
        _loop(debugger, 2, lambda step: grad_fn(Tensor(np.array([1.0, 2.0, 0.0 if step else 1.0, 3.0], np.float32))))

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (1, "Functional.log.0.forward")
    assert exact[0][1]["origin"]


def test_a_forward_only_log_of_zero_is_still_recorded(tmp_path, monkeypatch):
    """No gradient computation, nothing takes log's output: the -inf is the
    result, so it is recorded when the window closes (never an all-clear)."""
    def scenario(debugger):
        _loop(debugger, 2, lambda step: ops.log(Tensor(np.array([0.0 if step else 1.0, 2.0], np.float32))))

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (1, "Functional.log.0.forward")


def test_log_under_where_names_log_when_its_gradient_is_nan(tmp_path, monkeypatch):
    """where(p > 0, p * log(p), 0): finite forward by design, but the
    gradient of log at 0 times the where's zero is NaN: log is the origin."""
    def scenario(debugger):
        w = Parameter(Tensor(np.ones(3, np.float32)), name="w")

        def entropy(p):
            q = p * w
            return ops.where(q > 0, q * ops.log(q), ops.zeros_like(q)).sum()
        grad_fn = ms.value_and_grad(entropy, None, [w])
        _loop(debugger, 2, lambda step: grad_fn(Tensor(np.array([0.5, 0.0 if step else 0.25, 0.25], np.float32))))

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 1 and name == "Functional.log.0.forward", (step, name)


_CAUSAL = np.triu(np.full((4, 4), -np.inf, np.float32), 1)  # built with numpy, before any window


def _additive_mask(level):
    """An additive causal mask made with numpy (no checked call makes it),
    added to the scores before a softmax in every step; a float16 exp
    overflows in step 2 (the real overflow)."""
    mask = Tensor(_CAUSAL)

    class Attention(nn.Cell):
        def __init__(self):
            super().__init__()
            self.q = nn.Dense(4, 4)

        def construct(self, x, m):
            s = ops.matmul(self.q(x), x.swapaxes(-1, -2)) + m
            return ops.matmul(ops.softmax(s, axis=-1), x)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.attn = Attention()

        def construct(self, x, scale):
            h = self.attn(x, mask)
            return ops.exp((h * scale).astype(ms.float16)).astype(ms.float32).mean()

    def scenario(debugger):
        ms.set_seed(4)
        net = Net()
        grad_fn = ms.value_and_grad(net, None, net.trainable_params())

        def body(step):
            grad_fn(Tensor(np.full((4, 4), 0.1, np.float32)), Tensor(1e4 if step == 2 else 1.0, ms.float32))
        _loop(debugger, 3, body, model=net if level == "L0" else None)
    return scenario


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_an_additive_minus_inf_mask_made_outside_is_consumed_and_the_real_overflow_named(tmp_path, monkeypatch,
                                                                                        level):
    """A -inf mask no checked call made (a numpy constant) passed to an
    attention Cell and added to its scores: consumed by the softmax, so
    steps 0 and 1 have no record, and step 2's float16 exp is what is
    named (it was hidden behind the mask's 'entered' record before)."""
    default, exact = _run_both(tmp_path, monkeypatch, _additive_mask(level), level=level)
    assert _first(default) == _first(exact)
    step, name = _first(exact)
    assert step == 2, (step, name)
    expected = "Functional.exp.0.forward" if level == "L1" else "Cell.Net.forward.0"
    assert name == expected and exact[0][1]["origin"], (name, exact[0][1]["origin"])


def test_optimizer_state_an_earlier_overflow_wrote_is_not_called_resumed(tmp_path, monkeypatch):
    """Step 1 divides by a float16 epsilon that rounds to 0: the division
    is the origin, and Adam writes NaN into its moments from the NaN
    gradients. Step 2's Adam state holds that NaN: carried from step 1,
    not 'there at start() (a resumed checkpoint)'."""
    def scenario(debugger):
        ms.set_seed(1)
        net = nn.Dense(4, 1)
        optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
        grad_fn = ms.value_and_grad(lambda x, e: (net(x) / e).sum(), None, optimizer.parameters)

        def body(step):
            eps = Tensor(1e-8 if step == 1 else 1.0, ms.float16).astype(ms.float32)
            _, grads = grad_fn(Tensor(np.ones((2, 4), np.float32)), eps)
            optimizer(grads)
        _loop(debugger, 3, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    assert _first(default) == _first(exact) == (1, "Tensor.__truediv__.0.forward")
    later = [record for step, record in exact if step == 2]
    assert later and not [r for r in later if r["name"] == "outside"], [r["name"] for r in later]


UPDATE_LINE = "            optimizer(grads)  # the update that makes the state inf"


def _adam_state_overflow(make_optimizer, steps):
    """nn.Dense with loss ``net(x).sum() * 1e20``: in step 0 the gradients
    are finite (the bias's 2e20) and the Parameters stay finite, but the
    optimizer's second moment of the bias (4e40) is inf; the bias turns
    NaN only in step 1 (a fresh user's finding)."""
    def scenario(debugger, level):
        ms.set_seed(0)
        net = nn.Dense(4, 2)
        optimizer = make_optimizer(net.trainable_params())
        grad_fn = ms.value_and_grad(lambda x: net(x).sum() * 1e20, None, net.trainable_params())

        def body(step):
            _, grads = grad_fn(Tensor(np.full((2, 4), 1e-3, np.float32)))
            optimizer(grads)  # the update that makes the state inf
        _loop(debugger, steps, body, model=net if level == "L0" else None)
    return scenario


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("make_optimizer, state", [
    (lambda params: nn.Adam(params, learning_rate=0.01), "Adam moment2 of bias"),
    (lambda params: nn.AdamWeightDecay(params, learning_rate=0.01), "AdamWeightDecay adam_v of bias")],
    ids=["Adam", "AdamWeightDecay"])
def test_optimizer_state_an_update_makes_inf_is_named_in_its_step(tmp_path, monkeypatch, level, make_optimizer,
                                                                  state):
    """The update of step 0 makes the optimizer's own state inf while its
    Parameters stay finite: an ``update`` record in step 0 names the state
    (not a step late, when the Parameters turn NaN), under exact and auto
    checks alike; step 1's NaN Parameters are carried from it (no second
    ``update`` record blames step 1's update)."""
    scenario = _adam_state_overflow(make_optimizer, 3)
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("PROBE_CHECKS", raising=False)
    results = {}
    for checks in ("exact", "auto"):
        folder = tmp_path / checks
        folder.mkdir()
        debugger = PrecisionDebugger(config_path=str(write_runtime_config(folder, level=level, nums=-1)),
                                     checks=checks)
        try:
            scenario(debugger, level)
        finally:
            debugger.stop()
            debugger.windows.summary.said = True
        results[checks] = dump_records(folder / "dump")
    ORIGINAL.assert_untouched(parked_ok=True)
    for checks, records in results.items():
        assert _first(records) == (0, "update"), (checks, records)
        record = records[0][1]
        assert record["kind"] == "update" and not record["origin"]
        assert record["nonfinite"] == [state], (checks, record["nonfinite"])
        assert "right after the optimizer step" in record["message"] and "the update made it" in record["message"]
        assert "the optimizer's own state" in record["message"]
        assert record["where"] == f"{__file__}:{_line(UPDATE_LINE)}", record["where"]
        assert not [r for step, r in records if step == 1 and r["kind"] == "update"], (checks, records)
        assert not [r for step, r in records if step > 0 and r["origin"]], (checks, records)
    assert [(s, r["name"]) for s, r in results["exact"]] == [(s, r["name"]) for s, r in results["auto"]]


def test_optimizer_state_an_update_makes_inf_in_the_only_step_is_no_all_clear(tmp_path, monkeypatch):
    """One step only: the Parameters stay finite, the state does not; the
    step has its record (it used to say "no overflow found")."""
    default, exact = _run_both(tmp_path, monkeypatch,
                               lambda debugger: _adam_state_overflow(
                                   lambda params: nn.Adam(params, learning_rate=0.01), 1)(debugger, "L1"))
    assert _first(default) == _first(exact) == (0, "update")
    assert exact[0][1]["nonfinite"] == ["Adam moment2 of bias"]


def test_optimizer_state_made_inf_after_an_unrelated_record_is_named(tmp_path, monkeypatch):
    """Step 0 records an overflow the optimizer never sees (a forward-only
    metric); its state reads finite in step 1, so the update of step 2
    that makes it inf is new: named in step 2."""
    def scenario(debugger):
        ms.set_seed(0)
        net = nn.Dense(4, 2)
        optimizer = nn.Adam(net.trainable_params(), learning_rate=0.01)
        grad_fn = ms.value_and_grad(lambda x, s: net(x).sum() * s, None, net.trainable_params())

        def body(step):
            if step == 0:
                ops.exp(Tensor(np.full(2, 200.0, np.float32)))  # a metric, outside the training
            _, grads = grad_fn(Tensor(np.full((2, 4), 1e-3, np.float32)), Tensor(1e20 if step == 2 else 1.0))
            optimizer(grads)
        _loop(debugger, 3, body)

    default, exact = _run_both(tmp_path, monkeypatch, scenario)
    for records in (default, exact):
        assert _first(records) == (0, "Functional.exp.0.forward")
        updates = [(step, r["nonfinite"]) for step, r in records if r["kind"] == "update"]
        assert updates == [(2, ["Adam moment2 of bias"])], records


def _line(text: str) -> int:
    return open(__file__).read().splitlines().index(text) + 1
