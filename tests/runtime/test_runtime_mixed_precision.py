"""Cells given a precision (``cell.to_float(mindspore.float16)``): the tool's
own operators must not take it on.

MindSpore casts the floating inputs of every operator run during such a
Cell's call, the tool's too. A fresh user's finding: the ``HookBackward``
the hooks put on a call's inputs and outputs handed float32 tensors back as
float16, so under the tool (L1 and L0, in a gradient computation) a
float16 Cell that ends in ``.astype(float32)`` returned float16 and the
next float32 layer failed ("the type of 'x2' should be same as 'x1'"), and
at L0 a float32 input above 65504 reached the Cell already inf, so its
parent was named the origin ("inside Net.construct itself") instead of the
Cell whose cast made it. A Parameter's finiteness probe on the
asynchronous path (a float32 sum) summed in float16 and read a finite
Parameter as inf (:mod:`probe_runtime.hooks.precision`).
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, assert_origin_invariant, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


class _Half(nn.Cell):
    """A float16 block (``to_float``) that hands float32 back; it notes the
    dtype its input has inside ``construct``."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.seen: list = []
        self.to_float(ms.float16)

    def construct(self, x):
        self.seen.append(x.dtype)
        return (self.fc(x) * 0.5).astype(ms.float32)


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.half = _Half()
        self.out = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")  # float32: float16 input is refused
        self.got: list = []

    def construct(self, x):
        h = self.half(x)
        self.got.append(h.dtype)
        return self.out(h)


def _train(level, big_step=None):
    """Three steps of a gradient computation over :class:`_Net` at
    ``level``; the
    inputs of step ``big_step`` are 1e5 (finite in float32, inf once the
    float16 block casts them). Returns the net and the losses."""

    def scenario(debugger):
        net = _Net()
        grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
        losses = []
        for step in range(3):
            debugger.start(net if level == "L0" else None)
            loss, _ = grad_fn(Tensor(np.full((2, 4), 1e5 if step == big_step else 1.0, np.float32)))
            losses.append(float(loss.asnumpy()))
            debugger.stop()
            debugger.step()
        scenario.nets.append((net, losses))

    scenario.nets = []
    return scenario


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_float16_cell_keeps_its_dtypes_under_the_tool(tmp_path, monkeypatch, level):
    scenario = _train(level)
    default, exact = run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level)
    assert default == [] and exact == []
    plain = _Net()
    grad_fn = ms.value_and_grad(lambda x: plain(x).sum(), None, plain.trainable_params())
    want = float(grad_fn(Tensor(np.ones((2, 4), np.float32)))[0].asnumpy())
    for net, losses in scenario.nets:
        assert set(net.half.seen) == {ms.float32} and set(net.got) == {ms.float32}, (net.half.seen, net.got)
        assert losses == [want] * 3


def test_l0_a_float16_cells_own_cast_is_the_origin_not_its_parent(tmp_path, monkeypatch):
    """1e5 in float32 enters the float16 block: the cast of its Dense (the
    innermost Cell, in the block's precision) makes inf, so that Dense is
    the origin, its ``entered`` naming the cast; neither the block nor its
    parent handed it inf."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _train("L0", big_step=1), ORIGINAL, level="L0")
    for records in (default, exact):
        step1 = [(r["name"], r["origin"], (r.get("entered") or {}).get("source")) for step, r in records
                 if step == 1]
        assert step1 and step1[0] == ("Cell.half.fc.Dense.forward.0", True, "mixed-precision"), step1
        assert [name for name, origin, _ in step1 if origin] == ["Cell.half.fc.Dense.forward.0"], step1
        assert not [r for step, r in records if step != 1], records
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")
        data = json.loads((tmp_path / checks / "dump" / "step1" / "rank" / "dump.json").read_text())["data"]
        given = data["Cell.half.fc.Dense.forward.0"]["input_args"][0]  # as the caller gave it, not as cast
        assert given["dtype"] == "Float32" and given["Max"] == 1e5, given


def test_device_probes_keep_float32_inside_a_float16_cell():
    """The asynchronous path's probes (a float32 sum, a device copy) made
    while a float16 Cell runs: a finite Parameter whose sum is 1e5 is
    finite, and a copy keeps the dtype and values."""
    from probe_runtime.check.probes import launch_sum, snapshot

    big = ms.Parameter(Tensor(np.full((100,), 1000.0, np.float32)), name="big")
    wide = Tensor(np.full((3,), 7e4, np.float32))
    got = {}

    class Probing(nn.Cell):
        def construct(self, x):
            got["sum"], got["copy"] = launch_sum(big), snapshot(wide, False)
            return x

    cell = Probing()
    cell.to_float(ms.float16)
    cell(Tensor(np.ones(2, np.float32)))
    assert got["sum"].total.dtype == ms.float32 and float(got["sum"].asnumpy()[0]) == 1e5 * 2.0 ** -64  # trainable
    assert got["copy"].dtype == ms.float32 and got["copy"].asnumpy().tolist() == [7e4] * 3


# -- inputs the cast makes inf: what the record says ------------------------------------
#: the start of the ``entered`` message of a record whose input 70000 (float32) a float16 cast made inf
ABOVE = "input_args[0] (Float32, max 70000) is above float16's largest value 65504"


def _dense(how):
    """A Dense(4, 2) with weights 0.001 given float16 precision ``how``
    (``to_float``, or ``amp_level`` "O2": its weights stay float32)."""
    net = nn.Dense(4, 2, weight_init="ones")
    net.weight.set_data(net.weight * 1e-3)
    return net.to_float(ms.float16) if how == "to_float" else ms.amp.auto_mixed_precision(net, "O2")


def _forward(how, level, value):
    """One forward pass of :func:`_dense` over a (1, 4) batch of ``value``
    (float32), checked at ``level`` (a fresh user's script)."""

    def scenario(debugger):
        net = _dense(how)
        debugger.start(net if level == "L0" else None)
        net(Tensor(np.full((1, 4), value, np.float32)))
        debugger.stop()

    return scenario


def _first(records):
    step, record = records[0]
    entered = record.get("entered") or {}
    return step, record["name"], record["origin"], entered.get("source"), entered.get("input"), entered.get("message")


@pytest.mark.parametrize("how", ["to_float", "O2"])
def test_l1_names_the_input_a_float16_cast_made_inf(tmp_path, monkeypatch, how):
    """float32 70000 into a float16 Dense: MatMul's inputs as the code gave
    them (dump.json: Float32 70000 and 0.001, msprobe's form) make 280, yet
    its output is float16 inf: MindSpore cast input_args[0] to float16 for
    the kernel. The record is still the origin, and its ``entered`` says so
    (a fresh user's finding: a record that looked impossible)."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _forward(how, "L1", 7e4), ORIGINAL, nums=1)
    for records in (default, exact):
        step, name, origin, source, given, message = _first(records)
        assert (step, name, origin, source, given) == (0, "Primitive.MatMul.0.forward", True, "mixed-precision",
                                                      "input_args[0]"), records
        assert message.startswith(ABOVE + ", and MindSpore ran this call in float16 (its output is Float16"), message
        assert message.endswith("it cast the floating inputs to float16 for the kernel, which made input_args[0] inf")
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")
        data = json.loads((tmp_path / checks / "dump" / "step0" / "rank" / "dump.json").read_text())["data"]
        entry = data["Primitive.MatMul.0.forward"]
        given = [(a["dtype"], a["Max"]) for a in entry["input_args"]]
        assert given == [("Float32", 7e4), ("Float32", pytest.approx(1e-3))], given
        assert entry["output"][0]["dtype"] == "Float16" and entry["output"][0]["Max"] == float("inf")
        assert set(entry) == {"input_args", "input_kwargs", "output"}  # msprobe's keys only


@pytest.mark.parametrize("how, name", [("to_float", "Cell.Dense.forward.0"), ("O2", "Cell._backbone.Dense.forward.0")])
def test_l0_names_the_input_a_float16_cast_made_inf(tmp_path, monkeypatch, how, name):
    """The same script at L0 (``start(net)``): the Dense is the origin, its
    ``entered`` names the cast of its input instead of "its own construct
    made it"."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _forward(how, "L0", 7e4), ORIGINAL, level="L0",
                                           nums=1)
    for records in (default, exact):
        step, first, origin, source, given, message = _first(records)
        assert (step, first, origin, source, given) == (0, name, True, "mixed-precision", "input_args[0]"), records
        assert message.startswith(f"{ABOVE}, and {name[:-len('.forward.0')]} runs its operators in float16 (it was "
                                  "given that precision"), message
        assert "MindSpore casts their floating inputs to float16, which makes input_args[0] inf" in message
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("how", ["to_float", "O2"])
def test_a_clean_float16_pass_gives_no_record(tmp_path, monkeypatch, level, how):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _forward(how, level, 1.0), ORIGINAL, level=level,
                                           nums=1)
    assert default == [] and exact == []


def test_l1_training_names_the_cast_in_the_step_it_happens(tmp_path, monkeypatch):
    """A gradient computation over a float16 block given 1e5 in step 1: the
    block's MatMul is the first record, the origin, with the cast named;
    steps 0 and 2 are clean."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _train("L1", big_step=1), ORIGINAL)
    for records in (default, exact):
        step, name, origin, source, given, message = _first(records)
        assert (step, name, origin, source, given) == (1, "Primitive.MatMul.0.forward", True, "mixed-precision",
                                                      "input_args[0]"), records
        assert message.startswith("input_args[0] (Float32, max 100000) is above float16's largest value 65504"), message
        assert {step for step, _ in records} == {1}
        assert sum(r["origin"] for _, r in records) == 1, records


def test_l1_a_cast_to_float32_inside_a_float16_cell(tmp_path, monkeypatch):
    """``x.astype(float32)`` of float32 70000 inside a float16 Cell returns
    inf: no cast to float32 makes 70000 inf, MindSpore cast it to float16
    first."""

    class Wide(nn.Cell):
        def construct(self, x):
            return x.astype(ms.float32) * 2

    def scenario(debugger):
        cell = Wide()
        cell.to_float(ms.float16)
        debugger.start()
        cell(Tensor(np.full((1, 4), 7e4, np.float32)))
        debugger.stop()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        step, name, origin, source, given, message = _first(records)
        if ms.__version__.startswith("2.7."):  # its astype to the tensor's own dtype runs no operator: the multiply
            assert (name, origin, source, given) == ("Tensor.__mul__.0.forward", True, "mixed-precision",
                                                      "input_args[0]"), records
            continue
        assert (name, origin, source, given) == ("Tensor.astype.0.forward", True, "mixed-precision", "input_args[0]")
        assert message == (f"{ABOVE}, and a cast to Float32 cannot make it inf: MindSpore cast it to float16 first, "
                           "as it casts the floating inputs of every operator inside a Cell given float16 precision "
                           "(Cell.to_float, amp_level O2/O3)")


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_no_cast_is_named_when_float16_itself_overflowed(tmp_path, monkeypatch, level):
    """What the cast does not explain gets no such note: a float16 Dense
    whose inputs fit float16 (300) and whose product does not (360000), and
    a float32 net's own cast to float16 of 70000 (``astype`` is the origin:
    that cast is the call itself)."""

    class Own(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 2, weight_init="ones")

        def construct(self, x):
            return self.fc(x.astype(ms.float16).astype(ms.float32))

    def scenario(debugger):
        half = nn.Dense(4, 2, weight_init="ones").to_float(ms.float16)
        half.weight.set_data(half.weight * 300)
        own = Own()
        for step, (net, value) in enumerate(((half, 300.0), (own, 7e4))):
            debugger.start(net if level == "L0" else None)
            net(Tensor(np.full((1, 4), value, np.float32)))
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level):
        first = {}
        for step, record in records:
            first.setdefault(step, record)
        assert sorted(first) == [0, 1], records
        assert all(r["origin"] and (r.get("entered") or {}).get("source") != "mixed-precision"
                   for r in first.values()), first
        assert first[0]["name"] == ("Primitive.MatMul.0.forward" if level == "L1" else "Cell.Dense.forward.0")
        if level == "L1":
            assert first[1]["name"] == "Tensor.astype.0.forward"


class _Attention(nn.Cell):
    """Float16 attention (``to_float``) given a float32 additive mask of
    ``finfo(float32).min``, the usual form: MindSpore casts the mask to
    float16 for the addition, which makes it the -inf it stands for."""

    def __init__(self):
        super().__init__()
        self.q = nn.Dense(8, 8, has_bias=False, weight_init="ones")
        self.q.weight.set_data(Tensor(np.eye(8, dtype=np.float32)))
        self.o = nn.Dense(8, 1)
        self.to_float(ms.float16)

    def construct(self, x, mask):
        scores = ops.matmul(self.q(x), x.swapaxes(-1, -2)) + mask
        return self.o(ops.matmul(ops.softmax(scores, -1), x)).mean()


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_a_float32_mask_cast_in_a_float16_cell_is_by_design(tmp_path, monkeypatch, level):
    """A review's findings. Steps 0 and 1 are clean (the softmax consumes
    the mask's -inf): no record, where L1 gave ``Tensor.__add__`` as an
    ORIGIN in each (with ``overflow_nums`` 1, the real overflow of step 2
    then went unchecked). In step 2 the float16 scores overflow (inputs of
    400: ``q @ k.T`` is 1.28e6): L1 names the matmul, and L0's record of
    the Cell says its own construct made it, not the mask's cast."""
    mask = np.zeros((1, 4, 4), np.float32)
    mask[:, :, -1] = np.finfo(np.float32).min

    def scenario(debugger):
        net = _Attention()
        grad_fn = ms.value_and_grad(net, None, net.trainable_params())
        for step, value in enumerate((1.0, 1.0, 400.0)):
            debugger.start(net if level == "L0" else None)
            grad_fn(Tensor(np.full((1, 4, 8), value, np.float32)), Tensor(mask))
            debugger.stop()
            debugger.step()

    for records in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL, level=level, nums=1):
        step, name, origin, source, _, _ = _first(records)
        if level == "L1":
            assert (step, name, origin) == (2, "Functional.matmul.0.forward", True), records
        else:
            assert (step, name, origin, source) == (2, "Cell._Attention.forward.0", True, "own-construct"), records
