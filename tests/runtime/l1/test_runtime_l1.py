"""probe_runtime L1 in MindSpore PyNative, in this process (CPU).

Each test builds its own debugger with a fresh dump folder and always stops
it, so the patches never leak into the next test.
"""
from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, mint, nn, ops  # noqa: E402
from mindspore.ops import exp as imported_exp  # noqa: E402  (imported before start(): bypasses module patches)

import probe_runtime  # noqa: E402
from probe_runtime import ConfigLintError, PrecisionDebugger  # noqa: E402
from probe_runtime.dump.writer import read_json  # noqa: E402
from runtime_support import (PatchedState, assert_origin_invariant, assert_same_training, isolate,  # noqa: E402
                             train_mlp, write_runtime_config)

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


write_config = write_runtime_config


@pytest.fixture
def work(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    made = []

    def make(**changes):
        debugger = PrecisionDebugger(config_path=str(write_config(tmp_path, **changes)))
        made.append(debugger)
        return debugger

    yield tmp_path, make
    for debugger in made:
        debugger.stop()
        assert_origin_invariant(debugger.dump_path)
    assert_restored(parked_ok=True)


assert_restored = ORIGINAL.assert_untouched


def records(tmp_path, step=0, rank="rank"):
    index = tmp_path / "dump" / f"step{step}" / rank / "overflow.json"
    return read_json(str(index)) if index.exists() else []


def names(tmp_path, step=0):
    return [r["name"] for r in records(tmp_path, step)]


def dump_data(tmp_path, step=0):
    return read_json(str(tmp_path / "dump" / f"step{step}" / "rank" / "dump.json"))["data"]


def inf32(*values):
    return Tensor(np.array(values, np.float32))


# -- the gate -------------------------------------------------------------------------
def test_gate_refuses_bad_config_before_anything(work):
    tmp_path, _ = work
    path = write_config(tmp_path, task="statistics", overflow_check={"overflow_number": 3})
    with pytest.raises(ConfigLintError) as info:
        PrecisionDebugger(config_path=str(path))
    err = info.value
    assert isinstance(err, ValueError)
    codes = {d.code for d in err.diagnostics}
    assert {"PL205", "PL101"} <= codes
    assert f"{path}:" in str(err) and "PL101 error:" in str(err) and "overflow_nums" in str(err)
    assert not (tmp_path / "dump").exists()
    assert_restored()


def test_gate_relative_dump_path_and_graph_mode(work):
    tmp_path, _ = work
    with pytest.raises(ConfigLintError) as info:
        PrecisionDebugger(config_path=str(write_config(tmp_path)), dump_path="relative/dump")
    assert "PL401" in {d.code for d in info.value.diagnostics}
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ConfigLintError) as info:
            PrecisionDebugger(config_path=str(write_config(tmp_path)))
        assert "PL201" in {d.code for d in info.value.diagnostics}
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert not (tmp_path / "dump").exists()


def test_keyword_overrides_and_probe_config(work, monkeypatch, caplog):
    tmp_path, _ = work
    path = write_config(tmp_path, task="statistics", dump_path="/nonexistent-but-overridden")
    other = tmp_path / "other"
    debugger = PrecisionDebugger(config_path=str(path), task="overflow_check", dump_path=str(other), step=[0])
    assert debugger.dump_path == str(other) and debugger.task == "overflow_check"
    assert debugger.state.steps == {0}
    monkeypatch.setenv("PROBE_CONFIG", str(write_config(tmp_path)))
    from_env = PrecisionDebugger()
    assert from_env.config_path == str(tmp_path / "config.json")
    assert from_env.dump_path == str(tmp_path / "dump")
    monkeypatch.delenv("PROBE_CONFIG")
    with pytest.raises(ConfigLintError) as info:
        PrecisionDebugger()  # no file at all: said as that, not as a missing dump_path and task statistics
    assert "PL104" in {d.code for d in info.value.diagnostics}
    message = str(info.value)
    assert message.startswith("probe_runtime refuses to start: no config was given") and "PROBE_CONFIG" in message
    assert "PL104" not in message and "statistics" not in message and "config_path=" in message
    with pytest.raises(ConfigLintError) as info:
        PrecisionDebugger(task="overflow_check")  # arguments alone, one missing: the lint's findings
    assert "PL104" in str(info.value) and "no config was given" not in str(info.value)
    no_file = PrecisionDebugger(task="overflow_check", dump_path=str(other), level="L1")
    assert no_file.config_path is None and no_file.state.overflow_nums == 1


def test_warnings_do_not_block(work, caplog):
    tmp_path, make = work
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        make(overflow_check={"overflow_nums": 1, "check_mode": "all"})
    assert any("PL204" in r.getMessage() for r in caplog.records)


# -- names, namespaces, re-entrancy --------------------------------------------------------
def test_names_follow_msprobe(work):
    tmp_path, make = work
    debugger = make()
    x = inf32(1.0, 100.0)
    y = inf32(np.inf, 1.0)
    debugger.start()
    ops.exp(x * 1.0)                     # Tensor.__mul__ finite, Functional.exp.0 inf
    mint.exp(x)                          # Mint.exp.0
    mint.nn.functional.relu(y)           # MintFunctional.relu.0 (carried)
    y * 2.0                              # Tensor.__mul__.1
    imported_exp(x)                      # name imported before start(): Primitive.Exp.0
    debugger.stop()
    got = names(tmp_path)
    assert got == ["Functional.exp.0.forward", "Mint.exp.0.forward", "MintFunctional.relu.0.forward",
                   "Tensor.__mul__.1.forward", "Primitive.Exp.0.forward"]
    assert [r["origin"] for r in records(tmp_path)] == [True, True, False, False, True]
    where = records(tmp_path)[0]["where"]
    assert where.startswith(__file__) and where.rsplit(":", 1)[1].isdigit()


def test_reentrancy_only_outermost(work):
    tmp_path, make = work
    debugger = make()
    y = inf32(np.inf, 1.0)
    debugger.start()
    2.0 * y                               # __rmul__ calls mul internally
    ops.sqrt(y)                           # Functional.sqrt calls the Sqrt primitive
    debugger.stop()
    got = names(tmp_path)
    assert got == ["Tensor.__rmul__.0.forward", "Functional.sqrt.0.forward"]


def test_primitives_inside_nn_layers(work):
    tmp_path, make = work
    debugger = make(overflow_check={"overflow_nums": 1})
    net = nn.SequentialCell([nn.Dense(16, 16, weight_init="ones"), nn.ReLU(), nn.Softmax(), nn.LayerNorm((16,))])
    net.to_float(ms.float16)
    x = Tensor(np.full((2, 16), 30000.0, np.float16))
    debugger.start()
    net(x)
    debugger.stop()
    got = records(tmp_path)
    assert [r["name"] for r in got] == ["Primitive.MatMul.0.forward"] and got[0]["origin"]
    entry = dump_data(tmp_path)["Primitive.MatMul.0.forward"]
    assert entry["input_args"][0]["dtype"] == "Float16" and entry["output"][0]["Max"] == float("inf")
    assert entry["input_args"][0]["data_name"] == "Primitive.MatMul.0.forward.input.0.npy"
    assert len(entry["input_args"]) == 2          # input, mat2: not the transpose_a/transpose_b attributes
    npy = tmp_path / "dump" / "step0" / "rank" / "dump_tensor_data" / "Primitive.MatMul.0.forward.output.0.npy"
    assert np.isinf(np.load(npy)).all()


def test_relu_softmax_layernorm_primitives_seen(work):
    tmp_path, make = work
    debugger = make()
    bad = Tensor(np.array([[np.nan, 1.0]], np.float32))
    debugger.start()
    nn.ReLU()(bad)
    nn.Softmax()(bad)
    nn.LayerNorm((2,))(bad)
    debugger.stop()
    got = names(tmp_path)
    assert any(n.startswith("Primitive.ReLU.") for n in got)
    assert any(n.startswith("Primitive.Softmax.") for n in got)
    assert any(n.startswith("Primitive.LayerNorm.") for n in got)


# -- backward -----------------------------------------------------------------------------
def test_backward_sqrt_gradient(work):
    tmp_path, make = work
    debugger = make()
    x = inf32(0.0, 4.0)
    debugger.start()
    grad = ms.grad(lambda t: ops.sqrt(t).sum())(x)
    debugger.stop()
    assert np.isinf(grad.asnumpy()[0])
    got = records(tmp_path)
    assert got[0]["name"] == "Functional.sqrt.0.backward" and got[0]["origin"]
    assert "Functional.sqrt.0.forward" not in names(tmp_path)
    entry = dump_data(tmp_path)["Functional.sqrt.0.backward"]
    assert entry["input"][0]["Max"] == 1.0                      # grad w.r.t. the output
    assert entry["output"][0]["Max"] == float("inf")            # grad w.r.t. the input


@pytest.mark.parametrize("sync", ["auto", "0"])  # register_hook on input views / one HookBackward
def test_backward_input_gradients_in_positional_order(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    debugger = make()
    a, b = inf32(1e-10), inf32(1e-30)     # d(a/b)/db = -a/b^2 overflows float32; d(a/b)/da = 1/b does not
    debugger.start()
    ms.grad(lambda a, b: ops.div(a, b).sum(), grad_position=(0, 1))(a, b)
    debugger.stop()
    got = records(tmp_path)
    assert got[0]["name"] == "Functional.div.0.backward" and got[0]["origin"]
    entry = dump_data(tmp_path)["Functional.div.0.backward"]
    assert [o["Max"] for o in entry["output"]] == [pytest.approx(1e30, rel=1e-6), float("-inf")]


def _data_times_weight():
    """x * w, float32: d/dx = 2w overflows (w = 3e38), d/dw = 2x does not."""
    w = ms.Parameter(inf32(3e38), name="w")
    return inf32(1e-30), w, lambda t: (ops.mul(t, w) * 2).sum()


@pytest.mark.skipif(not any(hasattr(Tensor(np.ones(1, np.float32)), name) for name in ("_is_leaf", "_has_auto_grad")),
                    reason="this MindSpore tells no leaf: data inputs share the call's one input hook")
def test_gradient_training_never_computes_is_not_checked(work):
    """The batch and a weight into one call: the gradient w.r.t. the batch,
    which would overflow, is not computed by training that differentiates
    the weight only, and is not computed (nor reported) under the check;
    differentiated, it is, and its call is the origin."""
    tmp_path, make = work
    debugger = make()
    x, w, f = _data_times_weight()
    debugger.start()
    _, (grad_w,) = ms.value_and_grad(f, None, [w])(x)
    debugger.stop()
    assert np.isfinite(grad_w.asnumpy()).all()
    assert records(tmp_path) == []

    debugger.step()
    debugger.start()
    _, (grad_x, _) = ms.value_and_grad(f, 0, [w])(x)
    debugger.stop()
    assert np.isinf(grad_x.asnumpy()).all()
    got = records(tmp_path, step=1)
    assert got[0]["name"] == "Functional.mul.0.backward" and got[0]["origin"]
    entry = dump_data(tmp_path, step=1)["Functional.mul.0.backward"]
    assert [o["Max"] for o in entry["output"]] == [float("inf"), pytest.approx(2e-30, rel=1e-5)]


# -- numerics -----------------------------------------------------------------------------
def test_int_bool_empty_tensors(work):
    tmp_path, make = work
    debugger = make()
    ints = Tensor(np.array([1, 2, 3], np.int32))
    flags = Tensor(np.array([True, False]))
    empty = Tensor(np.zeros((0, 3), np.float32))
    debugger.start()
    ints + ints
    ops.logical_not(flags)
    ops.exp(empty)
    ops.argmax(inf32(np.inf, 1.0))        # int output, non-finite float input: carried
    debugger.stop()
    assert names(tmp_path) == ["Functional.argmax.0.forward"]


def test_reading_a_tensors_hooks_is_not_a_call(work):
    """``Tensor.hooks()`` returns the hook list (MindSpore 2.7's
    ``mindspore.jit`` reads it on every argument): not an API call, so an
    inf tensor passed to it is no overflow record."""
    tmp_path, make = work
    debugger = make()
    debugger.start()
    inf32(np.inf, 1.0).hooks()
    debugger.stop()
    assert names(tmp_path) == []


@pytest.mark.cpu_kernel("mul", "bfloat16")
def test_bfloat16_and_float16_norm(work):
    tmp_path, make = work
    debugger = make()
    big16 = Tensor(np.full((100,), 60000.0, np.float16))
    bf = Tensor(np.array([3e38, 1.0], np.float32)).astype(ms.bfloat16)
    debugger.start()
    ops.abs(big16)                        # finite float16, norm > 65504: not an overflow
    one = Tensor(np.array([1.0, 1.0], np.float32)).astype(ms.bfloat16)
    ten = Tensor(np.array([10.0, 1.0], np.float32)).astype(ms.bfloat16)
    ops.mul(bf, one)                      # finite bfloat16 near its max
    ops.mul(bf, ten)                      # 3e39 overflows bfloat16
    debugger.stop()
    got = names(tmp_path)
    assert got == ["Functional.mul.1.forward"]
    entry = dump_data(tmp_path)["Functional.mul.1.forward"]
    assert entry["input_args"][0]["dtype"] == "BFloat16" and 2.9e38 < entry["input_args"][0]["Max"] < 3.1e38
    assert entry["output"][0]["Max"] == float("inf") and records(tmp_path)[0]["origin"]


def test_inplace_input_recorded_before_call(work):
    tmp_path, make = work
    debugger = make()
    param = ms.Parameter(inf32(1.0, 2.0), name="p")
    debugger.start()
    y = ops.exp(param)                    # pending, refers to param
    ops.assign(param, inf32(np.inf, 5.0))
    debugger.stop()
    assert names(tmp_path) == ["Functional.assign.0.forward"]  # exp saw finite values
    entry = dump_data(tmp_path)["Functional.assign.0.forward"]
    assert entry["input_args"][0]["Max"] == 2.0                # param as it was before the call
    assert np.isinf(param.asnumpy()[0]) and np.isfinite(y.asnumpy()).all()


# -- filters, limits, restore -------------------------------------------------------------------
def test_step_filter_and_set_init_step(work):
    tmp_path, make = work
    debugger = make(step=[1, "3-4"])
    for _ in range(5):
        debugger.start()
        ops.exp(inf32(100.0))
        debugger.stop()
        debugger.step()
    assert sorted(p.name for p in (tmp_path / "dump").glob("step*")) == ["step1", "step3", "step4"]
    debugger.set_init_step(1)
    debugger.start()
    ops.exp(inf32(100.0))
    debugger.stop()
    assert records(tmp_path, 1)[-1]["name"] == "Functional.exp.0.forward" and len(records(tmp_path, 1)) == 2
    with pytest.raises(ValueError):
        debugger.set_init_step(-1)


def test_rank_filter_and_rank_folder(work, monkeypatch):
    tmp_path, make = work
    monkeypatch.setenv("RANK_ID", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    skipped = make(rank=[0])
    skipped.start()
    ops.exp(inf32(100.0))
    skipped.stop()
    assert not list((tmp_path / "dump").glob("step*"))  # dump_path is made by the debugger, empty
    chosen = make(rank=[1])
    chosen.start()
    ops.exp(inf32(100.0))
    chosen.stop()
    assert records(tmp_path, 0, "rank1")[0]["rank"] == 1


def test_overflow_nums_unpatches_at_the_limit(work):
    tmp_path, make = work
    debugger = make(overflow_check={"overflow_nums": 2})
    debugger.start()
    for _ in range(3):
        ops.exp(inf32(100.0))
    assert ops.exp is ORIGINAL.exp          # limit reached inside the window: patches gone
    assert len(dump_data(tmp_path)) == 2    # on disk before stop()
    debugger.stop()
    debugger.step()
    debugger.start()
    ops.exp(inf32(100.0))
    debugger.stop()
    assert not (tmp_path / "dump" / "step1").exists()


def test_stop_parks_the_patches_until_a_step_is_not_checked(work):
    """stop() turns checking off; while the next step is checked, L1's
    patches stay in place, inert (msprobe's stay for the whole run), and
    are removed when a step outside the filter begins."""
    tmp_path, make = work
    debugger = make(step=[0, 1])
    debugger.start()
    wrapped = ops.exp
    assert wrapped is not ORIGINAL.exp and "__mul__" in vars(ms.Tensor)
    debugger.stop()
    assert ops.exp is wrapped and not debugger.checker.live  # parked: handed on, not checked
    ops.exp(inf32(100.0))                   # outside the window: never a record
    (inf32(100.0) * 3.0e38).asnumpy()
    assert names(tmp_path) == []
    debugger.step()                         # step 1 is checked: still parked
    assert ops.exp is wrapped
    debugger.start()
    ops.exp(inf32(100.0))                   # in step 1's window: recorded
    debugger.stop()
    assert names(tmp_path, 1) == ["Functional.exp.0.forward"]
    debugger.step()                         # step 2 is outside the filter: everything is put back
    assert_restored()
    ops.exp(inf32(100.0))
    assert names(tmp_path) == [] and names(tmp_path, 1) == ["Functional.exp.0.forward"]


def test_parked_patches_are_removed_by_a_second_stop_at_exit_and_by_another_debugger(work):
    tmp_path, make = work
    first = make()
    first.start()
    first.stop()
    assert first.interceptor.parked
    first.stop()                            # a stop() with no window open (OverflowCheckCallback's at train end)
    assert_restored()
    first.start()
    first.stop()
    assert first.interceptor.parked
    first.finish()                          # what interpreter exit runs
    assert_restored()
    debuggers = []
    for name in ("a", "b"):                 # two configs: two debuggers (the tests' usage, not msprobe's)
        (tmp_path / name).mkdir()
        debuggers.append(PrecisionDebugger(config_path=str(write_config(tmp_path / name))))
    second, third = debuggers
    second.start()
    second.stop()
    third.start()                           # the parked patches of the other one are removed first
    assert not second.interceptor.installed and third.interceptor.installed and not third.interceptor.parked
    ops.exp(inf32(100.0))
    third.stop()
    third.finish()
    assert names(tmp_path / "b") == ["Functional.exp.0.forward"] and names(tmp_path / "a") == []
    assert_restored()


def test_a_watched_window_of_auto_checks_leaves_no_parked_patch(work):
    """Auto checks: the first window is exact; the next, watched one
    intercepts no call, so the patches its stop() parked are removed
    when it opens; training is the same as without the tool."""
    tmp_path, _ = work
    debugger = PrecisionDebugger(config_path=str(write_config(tmp_path)), checks="auto")
    seen = []
    losses, grads = train_mlp(debugger, steps=3, overflow=lambda step: False,
                              between=lambda step: seen.append((ops.exp is ORIGINAL.exp, debugger.interceptor.parked)))
    assert seen[0] == (False, True)         # after the exact window's stop(): parked
    assert seen[1:] == [(True, False)] * 2  # watched windows: nothing patched
    assert_same_training((losses, grads), train_mlp(steps=3, overflow=lambda step: False))
    debugger.finish()
    assert names(tmp_path) == []


def test_tool_error_never_stops_training(work, monkeypatch, caplog):
    tmp_path, make = work
    debugger = make()

    def broken(*args, **kwargs):
        raise OSError("disk full (test)")

    monkeypatch.setattr(probe_runtime.dump.writer.StepWriter, "write", broken)
    with caplog.at_level(logging.ERROR, logger="probe_runtime"):
        debugger.start()
        out = ops.exp(inf32(100.0, 1.0))
        more = ops.exp(inf32(1.0)) + 1.0
        debugger.stop()
    assert np.isinf(out.asnumpy()[0]) and np.isfinite(more.asnumpy()).all()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("turned off" in m for m in messages) == 1 and "disk full" in messages[0]
    assert debugger.checker.disabled


def test_jit_code_left_alone(work):
    tmp_path, make = work
    debugger = make()

    @ms.jit
    def compiled(t):
        return ops.exp(t) * 2.0

    x = inf32(100.0)
    expected = compiled(x).asnumpy()
    debugger.start()
    got = compiled(x).asnumpy()
    debugger.stop()
    assert np.array_equal(expected, got)
    assert not any("exp" in n for n in names(tmp_path))


@pytest.mark.parametrize("sync", ["auto", "0"])
def test_bit_identical_training(work, monkeypatch, sync):
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work

    def train(debugger):
        return train_mlp(debugger, overflow=lambda step: step == 1)

    plain = train(None)
    probed = train(make())
    assert_same_training(plain, probed)
    assert (tmp_path / "dump").exists()   # the debugger did see something


def test_backward_outside_the_window_not_recorded(work):
    tmp_path, make = work
    debugger = make()
    x = inf32(0.0, 4.0)
    debugger.start()
    forward = ms.value_and_grad(lambda t: ops.sqrt(t).sum())
    debugger.stop()
    forward(x)                               # forward and backward after stop(): nothing
    debugger.step()
    assert not list((tmp_path / "dump").glob("step*"))


@pytest.mark.parametrize("prepare", ["cast", "reshape", "normalise"])
def test_gradient_of_data_prepared_in_the_forward_pass_is_not_checked(work, prepare):
    """The batch cast to float16 (reshaped, normalised) inside the forward
    pass, then multiplied with a weight: training that differentiates the
    weight never computes the gradient w.r.t. the batch (dX = 5000 * 16 =
    80000 overflows float16; dW is finite). The prepared batch counts as
    data like the batch itself: that gradient is not computed under the
    check either, and nothing is reported."""
    tmp_path, make = work
    debugger = make()
    w = ms.Parameter(Tensor(np.ones((16, 16), np.float16)), name="w")

    def forward(x):
        if prepare == "cast":
            h = ops.cast(x, ms.float16)
        elif prepare == "reshape":
            h = ops.reshape(x, (4, 16)).astype(ms.float16)
        else:
            h = ((x - 0.01) / 1.0).astype(ms.float16)
        return (ops.matmul(h, w).astype(ms.float32) * 5000.0).sum()

    x = Tensor(np.full((4, 16) if prepare != "reshape" else (4, 4, 4), 0.05, np.float32))
    debugger.start()
    _, (grad_w,) = ms.value_and_grad(forward, None, [w])(x)
    debugger.stop()
    assert np.isfinite(grad_w.asnumpy()).all()
    assert records(tmp_path) == []


@pytest.mark.parametrize("sync", ["auto", "0"])  # the mask probed on the host / a sum launched on the device
def test_a_minus_inf_mask_kept_in_a_frozen_parameter_is_by_design(work, monkeypatch, sync):
    """A causal mask kept as a Parameter (requires_grad=False) holding -inf
    above the diagonal, added to the scores before a softmax: by design,
    as a mask made outside the window is. It was reported in every clean
    step as "Parameter ... already held inf/nan at start()" (its probe
    said only "not finite"), and with overflow_nums 1 the real overflow of
    a later step was never recorded."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    debugger = make()
    mask = ms.Parameter(Tensor(np.triu(np.full((4, 4), -np.inf, np.float32), 1)), name="causal_mask",
                        requires_grad=False)
    w = ms.Parameter(Tensor(np.full((4, 4), 1.0, np.float32)), name="w")

    def forward(x, scale):  # scale 1e38: each score is 4e38, inf in float32
        scores = ops.matmul(x * scale, w) + mask
        return ops.softmax(scores, -1).sum()

    x = Tensor(np.ones((4, 4), np.float32))
    for step, scale in enumerate((1.0, 1e38)):
        debugger.start()
        ms.value_and_grad(forward, None, [w])(x, scale)
        debugger.stop()
        debugger.step()
    assert records(tmp_path, step=0) == []
    first = records(tmp_path, step=1)[0]
    assert first["name"] == "Functional.matmul.0.forward" and first["origin"] is True, first


@pytest.mark.parametrize("how", ["ops", "tensor"])
def test_index_add_writes_its_input_in_place(work, how):
    """``ops.index_add`` (and ``Tensor.index_add``) writes into its first
    argument on CPU. Its result was judged as if out of place: the input,
    read after the write, held the inf, so the call that made the input
    (``x * 1``, values 1000) was called the origin. The write is the
    index_add's: it is the origin, the multiplication is clean."""
    tmp_path, make = work
    debugger = make()
    x = Tensor(np.full((3, 2), 1000.0, np.float16))
    y = Tensor(np.full((2, 2), 65000.0, np.float16))
    index = Tensor(np.array([0, 2], np.int32))
    debugger.start()
    a = x * 1
    if how == "ops":
        ops.index_add(a, index, y, 0)
    else:
        a.index_add(0, index, y)
    debugger.stop()
    got = records(tmp_path)
    assert got and got[0]["origin"] is True and "index_add.0.forward" in got[0]["name"], got
    assert not any(r["name"].startswith("Tensor.__mul__") for r in got), got


def test_index_add_keeps_its_backward_checks(work):
    """index_add writes its input in place but is differentiable and
    returns a tensor of its own: the gradient w.r.t. the added tensor
    (alpha * dout = 1000 * 100 in float16: inf) is its backward's, which
    stays checked (its written input gets no hook), so it is the origin,
    not a call "outside the checked calls"."""
    tmp_path, make = work
    debugger = make()
    index = Tensor(np.array([0, 2], np.int32))
    p = ms.Parameter(Tensor(np.full((2, 2), 1e-3, np.float16)), name="p")
    w = ms.Parameter(Tensor(np.ones((3, 2), np.float16)), name="w")

    def forward(x):
        o = mint.index_add(x * w, 0, index, p * 1, alpha=1000)
        return (o.astype(ms.float32) * 100.0).sum()

    debugger.start()
    _, (grad_p, _) = ms.value_and_grad(forward, None, [p, w])(Tensor(np.ones((3, 2), np.float16)))
    debugger.stop()
    assert np.isinf(grad_p.asnumpy()).all()
    got = records(tmp_path)
    assert got and got[0]["name"] == "Mint.index_add.0.backward" and got[0]["origin"] is True, got


@pytest.mark.parametrize("sync", ["auto", "0"])  # probed on the host / a sum launched on the device
def test_a_trainable_parameter_an_update_filled_with_minus_inf_is_no_mask(work, monkeypatch, sync):
    """Only a frozen Parameter's -inf is a mask by design: a trainable one
    that an update filled with -inf (column 0 of an additive bias), whose
    consumer's result is finite, is still recorded in the next steps; also
    on the asynchronous path, whose float32 sum of it is -inf as a mask's
    is (it was missed there)."""
    monkeypatch.setenv("PROBE_SYNC", sync)
    tmp_path, make = work
    debugger = make()
    bias = ms.Parameter(Tensor(np.zeros((4, 4), np.float32)), name="bias")
    bias.set_data(Tensor(np.where(np.arange(16).reshape(4, 4) % 4 == 0, -np.inf, 0.0).astype(np.float32)))

    def forward(x):
        return ops.softmax(x + bias, -1).sum()

    debugger.start()
    ms.value_and_grad(forward, None, [bias])(Tensor(np.ones((4, 4), np.float32)))
    debugger.stop()
    got = records(tmp_path)
    assert got and got[0]["name"] == "Tensor.__add__.0.forward" and not got[0]["origin"], got
