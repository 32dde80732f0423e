"""Collective calls in probe_runtime, in one process, with fakes of the
primitive calls (issue 25).

What runs for real only in several processes is tested in
test_msrun_collectives.py; the collectives that do not run on the CPU backend
(``ops.ReduceScatter``, ``comm_func.all_reduce`` = ``InnerCommAllReduce``,
``AlltoAll``, ``NeighborExchange``, ``Send``/``Receive``, the
``mint.distributed`` output-buffer forms) are tested here: a fake primitive
of the same class name goes through the same L1 wrappers
(``wrap_primitive``, ``wrap_pyboost``, ``wrap_reducer``) into a real checker
and writer, and the records are read back from overflow.json.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

import probe_runtime.hooks.collectives as collectives  # noqa: E402
from msprobe_lint.report.command import summarise  # noqa: E402
from probe_format.collectives import received_message  # noqa: E402
from probe_runtime.check.queue import Checker  # noqa: E402
from probe_runtime.hooks.frames import library_roots  # noqa: E402
from probe_runtime.l0.cell_hooks import CellHooks  # noqa: E402
from probe_runtime.l1.interceptor import ApiInterceptor  # noqa: E402
from probe_runtime.l1.wrappers import Wrappers  # noqa: E402
from probe_runtime.state import RunState  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
INF = float("inf")
#: the groups the fakes use, with their global ranks (what mindspore.communication would say)
GROUPS = {"tp": (0, 1), "pp": (4, 5), "dp": (2, 3, 4, 5)}


def tensor(*values, dtype=np.float32):
    return Tensor(np.array(values, dtype))


def fake(name, module="mindspore.ops.operations.comm_ops", **attrs):
    """An object of a class called ``name`` (what recognition goes by), with ``attrs``."""
    obj = type(name, (), {"__module__": module})()
    obj.__dict__.update(attrs)
    return obj


class Rig:
    """A checker writing to ``dump`` for this process as global rank ``rank``, and its L1 wrappers."""

    def __init__(self, dump: Path, rank: int, level: str = "L1") -> None:
        self.dump = dump
        self.rank = rank
        self.state = RunState(rank=rank, overflow_nums=-1)
        self.checker = Checker(self.state, dump_path=str(dump), level=level, library_roots=library_roots())
        self.wrappers = Wrappers(self.checker)
        self.wrappers.bind()

    def records(self, step: int = 0) -> list:
        path = self.dump / f"step{step}" / f"rank{self.rank}" / "overflow.json"
        return json.loads(path.read_text()) if path.exists() else []

    def window(self):
        self.checker.begin()
        return self

    def __enter__(self):
        return self.window()

    def __exit__(self, *exc):
        self.checker.end()


@pytest.fixture
def rig(tmp_path, monkeypatch):
    monkeypatch.setattr(collectives, "lookup_ranks", GROUPS.get)
    collectives.forget_groups()
    yield lambda rank=0, level="L1": Rig(tmp_path / "dump", rank, level)
    collectives.forget_groups()


def primitive(wrappers, result):
    """The wrapper of a Primitive class's ``__call__`` whose call returns ``result(*args)``."""
    return wrappers.wrap_primitive(lambda prim, *args: result(*args))


def test_reduce_scatter_received_and_its_index_counted_per_group_and_step(rig):
    """ops.ReduceScatter (no CPU kernel): finite local input, inf out ->
    kind communication, never an origin; the index counts the calls of its
    group in the step, whatever other groups do, and starts again each step."""
    r = rig()
    call = primitive(r.wrappers, lambda x: x * INF)
    scatter, other = fake("ReduceScatter", group="tp"), fake("ReduceScatter", group="dp")
    with r:
        call(scatter, tensor(1.0, 2.0))
        call(other, tensor(1.0, 2.0))
        call(scatter, tensor(3.0, 4.0))
    r.state.next_step()
    with r:
        call(scatter, tensor(1.0, 2.0))
    first = r.records(0)
    assert [(x["name"], x["kind"], x["origin"]) for x in first] == [
        ("Primitive.ReduceScatter.0.forward", "communication", False),
        ("Primitive.ReduceScatter.1.forward", "communication", False),
        ("Primitive.ReduceScatter.2.forward", "communication", False)]
    assert first[0]["collective"] == {"api": "ReduceScatter", "group": "tp", "ranks": [0, 1], "index": 0,
                                      "direction": "forward", "inputs_finite": True}
    assert [(x["collective"]["group"], x["collective"]["index"]) for x in first] == [("tp", 0), ("dp", 0),
                                                                                     ("tp", 1)]
    assert first[0]["message"] == received_message("ReduceScatter", "tp", [0, 1])
    assert first[0]["message"].startswith("received inf/nan through ReduceScatter (group tp, ranks 0-1) from "
                                          "another rank, or the reduction itself overflowed")
    assert [x["collective"]["index"] for x in r.records(1)] == [0]


def test_a_collective_whose_own_input_held_inf_is_carried_with_its_collective(rig):
    """comm_func.all_reduce runs InnerCommAllReduce(input, op, group, async_op)
    through its pyboost function (no CPU kernel): the group is an argument."""
    r = rig(rank=1)
    pyboost = r.wrappers.wrap_pyboost(lambda prim, args: args[0] * 2.0)
    inner = fake("InnerCommAllReduce", module="mindspore.ops.auto_generate.gen_ops_prim")
    with r:
        pyboost(inner, [tensor(INF, 1.0), "sum", "tp", False])
        pyboost(inner, [tensor(1.0, 1.0), "sum", "tp", False])  # finite in, finite out: no record, still counted
        pyboost(inner, [tensor(1.0, 1.0), "sum", "tp", False])
    records = r.records()
    assert len(records) == 1
    (only,) = records
    assert (only["name"], only["kind"], only["origin"]) == ("Primitive.InnerCommAllReduce.0.forward", "forward",
                                                             False)
    assert only["collective"]["inputs_finite"] is False and "message" not in only
    assert (only["collective"]["api"], only["collective"]["group"]) == ("AllReduce", "tp")


@pytest.mark.parametrize("name, api", [("AlltoAll", "AlltoAll"), ("NeighborExchange", "NeighborExchange"),
                                       ("AllGather", "AllGather"), ("Reduce", "Reduce")])
def test_other_ops_collectives_are_recognised(rig, name, api):
    r = rig()
    call = primitive(r.wrappers, lambda x: x / 0.0)
    with r:
        call(fake(name, group="dp"), tensor(1.0))
    (only,) = r.records()
    assert only["name"] == f"Primitive.{name}.0.forward" and only["kind"] == "communication"
    assert only["collective"] == {"api": api, "group": "dp", "ranks": [2, 3, 4, 5], "index": 0,
                                  "direction": "forward", "inputs_finite": True}


def test_send_and_receive_name_their_peer_as_a_global_rank_and_count_per_pair(rig):
    """Send/Receive take the peer as a rank of the group (comm_func converts
    a global rank before calling them): group pp = global ranks 4-5, so
    this process (global 4) talks to global 5. Receive has no input: its
    buffer, whatever it held, is overwritten."""
    r = rig(rank=4)
    send = primitive(r.wrappers, lambda x: x)
    receive = primitive(r.wrappers, lambda: tensor(INF))
    irecv = r.wrappers.wrap_pyboost(lambda prim, args: (args[0], None))  # DistCommIrecv writes its buffer
    with r:
        send(fake("Send", group="pp", rank=1), tensor(INF))
        receive(fake("Receive", group="pp", rank=1))
        irecv(fake("DistCommIrecv"), [tensor(INF), 0, 1, "pp"])
    records = r.records()
    assert [(x["name"], x["kind"]) for x in records] == [
        ("Primitive.Send.0.forward", "forward"), ("Primitive.Receive.0.forward", "communication"),
        ("Primitive.DistCommIrecv.0.forward", "communication")]
    assert [(x["collective"]["api"], x["collective"]["peer"], x["collective"]["index"]) for x in records] == [
        ("Send", 5, 0), ("Receive", 5, 1), ("Receive", 5, 2)]
    assert records[0]["collective"]["inputs_finite"] is False


def test_broadcast_names_its_root_as_a_global_rank(rig):
    r = rig(rank=2)
    call = primitive(r.wrappers, lambda items: (items[0] * INF,))
    with r:
        call(fake("Broadcast", root_rank=1, attrs={"group": "dp"}), (tensor(1.0),))
    (only,) = r.records()
    assert only["collective"]["root"] == 3 and only["collective"]["group"] == "dp"


def test_mint_distributed_output_buffer_is_not_an_input(rig):
    """mint.distributed.all_gather_into_tensor runs
    DistCommAllGatherIntoTensor(output, input, rank_size, group): the output
    buffer is written, not read. Garbage in it (nan) is not an input that
    held inf/nan, and it is what the verdict reads afterwards."""
    r = rig()
    gather = r.wrappers.wrap_pyboost(lambda prim, args: (ops.assign(args[0], ops.tile(args[1], (2,))), None))
    prim = fake("DistCommAllGatherIntoTensor", module="mindspore.ops.auto_generate.gen_ops_prim")
    with r:
        gather(prim, [tensor(np.nan, np.nan), tensor(1.0), 2, "tp", False])  # finite result: no record
        gather(prim, [tensor(0.0, 0.0), tensor(INF), 2, "tp", False])     # its own input: carried
    records = r.records()
    assert [(x["name"], x["kind"], x["collective"]["index"], x["collective"]["inputs_finite"]) for x in records] == [
        ("Primitive.DistCommAllGatherIntoTensor.1.forward", "forward", 1, False)]


def test_in_place_all_reduce_judged_on_its_input_before_and_its_buffer_after(rig):
    """mint.distributed.all_reduce(x) runs DistCommAllReduce(x, op, group,
    async_op), which writes the sum into x and returns (x, handle); the
    function itself returns None. The input is judged on what x held
    before the call, the output on what it holds after."""
    r = rig()
    x = tensor(1.0, 2.0)

    def all_reduce(prim, args):
        ops.assign(args[0], args[0] * INF)
        return args[0], None

    reduce_ = r.wrappers.wrap_pyboost(all_reduce)
    with r:
        reduce_(fake("DistCommAllReduce", attrs={"side_effect_mem": True}), [x, "sum", "tp", False])
    (only,) = r.records()
    assert (only["name"], only["kind"], only["collective"]["inputs_finite"]) == (
        "Primitive.DistCommAllReduce.0.forward", "communication", True)
    data = json.loads((r.dump / "step0" / "rank0" / "dump.json").read_text())["data"][only["name"]]
    assert data["input_args"][0]["Max"] == 2.0  # the copy made before the call
    assert np.isinf(x.asnumpy()).all()


def test_backward_of_a_collective_is_received_too(rig):
    """Under grad the collective's backward entry gets the same treatment,
    with ``direction`` backward and its forward call's index. The fake
    "AllReduce" is sqrt: finite forward at 0, inf gradient from a finite
    incoming one."""
    r = rig()
    call = primitive(r.wrappers, ops.sqrt)
    prim = fake("AllReduce", group="tp")
    with r:
        ms.grad(lambda x: call(prim, x).sum())(tensor(0.0, 4.0))
    (only,) = r.records()
    assert (only["name"], only["kind"], only["origin"]) == ("Primitive.AllReduce.0.backward", "communication",
                                                             False)
    assert only["collective"]["direction"] == "backward" and only["collective"]["index"] == 0


def test_index_counted_even_when_the_api_is_turned_off_and_not_outside_windows(rig):
    """Every rank must count the same calls: a call of an API whose wrapper
    failed (on this rank only) still counts; calls outside a checked window
    count on no rank."""
    r = rig()
    call = primitive(r.wrappers, lambda x: x * INF)
    prim = fake("AllReduce", group="tp")
    call(prim, tensor(1.0))  # no window: not counted
    with r:
        r.wrappers.broken.add("Primitive.AllReduce")
        call(prim, tensor(1.0))  # turned off: counted, not recorded
        r.wrappers.broken.clear()
        call(prim, tensor(1.0))
    assert [x["collective"]["index"] for x in r.records()] == [1]


def test_gradient_reducer_cell_is_one_collective_call(rig):
    """nn.DistributedGradReducer runs its AllReduces inside a construct
    compiled with mindspore.jit: its whole call is the collective, named
    <Class>.AllReduce, in the group of its primitives."""
    r = rig()
    reducer = r.wrappers.wrap_reducer(lambda cell, grads: tuple(g * INF for g in grads))
    cell = fake("DistributedGradReducer", module="mindspore.nn.wrap.grad_reducer", allgather=fake("AllGather",
                                                                                                  group="dp"))
    with r:
        reducer(cell, (tensor(1.0), tensor(2.0)))
    (only,) = r.records()
    assert (only["name"], only["kind"]) == ("DistributedGradReducer.AllReduce.0.forward", "communication")
    assert only["collective"]["group"] == "dp" and only["collective"]["api"] == "AllReduce"


def test_the_report_reads_these_records_back(rig):
    """The records are what msprobe_lint.report reads (one rank only here:
    the other is missing, so the report's answer is a best guess naming it)."""
    r = rig()
    call = primitive(r.wrappers, lambda x: x * INF)
    with r:
        call(fake("AllReduce", group="tp"), tensor(1.0))
    summary, status, _ = summarise(str(r.dump))
    assert status == 0 and summary.start.best_guess and summary.start.missing == (1,)


class Row(nn.Cell):
    def __init__(self, collective):
        super().__init__()
        self.collective = collective

    def construct(self, x):
        return self.collective(x) + 1.0


class Model(nn.Cell):
    def __init__(self, collective):
        super().__init__()
        self.row = Row(collective)

    def construct(self, x):
        return self.row(x)


def test_l0_cell_whose_inf_came_through_a_collective_inside_it_is_entered_so(rig):
    """At L0 the collective call inside a Cell is recorded (its parent Cell in
    construct.json) and the Cell is not the origin: its ``entered`` says the
    inf/nan came in through that collective."""
    r = rig(level="L0")
    prim = fake("AllReduce", group="tp")
    wrapped = primitive(r.wrappers, lambda x: x * INF)
    model = Model(lambda x: wrapped(prim, x))
    hooks = CellHooks(r.checker)
    r.wrappers.enclosing = hooks.current_call
    with r:
        hooks.install(model)
        try:
            model(tensor(1.0, 2.0))
        finally:
            hooks.uninstall()
    records = r.records()
    assert [(x["name"], x["kind"], x["origin"]) for x in records] == [
        ("Primitive.AllReduce.0.forward", "communication", False), ("Cell.row.Row.forward.0", "forward", False)]
    entered = records[1]["entered"]
    assert (entered["entry"], entered["source"]) == ("Primitive.AllReduce.0.forward", "collective")
    assert entered["message"].startswith("inf/nan came in through Primitive.AllReduce.0.forward, a collective call "
                                         "inside Cell.row.Row.forward.0: received inf/nan through AllReduce")
    construct = json.loads((r.dump / "step0" / "rank0" / "construct.json").read_text())
    assert construct["Primitive.AllReduce.0.forward"] == "Cell.row.Row.forward.0"


def test_l0_collective_fed_inf_by_code_outside_the_cells_says_so(rig):
    """At L0 only Cells and collectives are checked: a collective whose
    input came from the model's own code (or the loss) says it was made
    outside the checked Cells, not outside the window."""
    r = rig(level="L0")
    wrapped = primitive(r.wrappers, lambda x: x * 2.0)
    hooks = CellHooks(r.checker)
    r.wrappers.enclosing = hooks.current_call
    with r:
        wrapped(fake("AllReduce", group="tp"), tensor(INF))
    (only,) = r.records()
    assert (only["kind"], only["collective"]["inputs_finite"]) == ("forward", False)
    assert only["entered"]["message"] == ("non-finite input entered at the first checked call: input_args[0] of "
                                          "Primitive.AllReduce.0.forward, made outside the checked Cells")


def test_l0_cell_with_an_origin_inside_besides_the_collective_is_plainly_carried(rig):
    r = rig(level="L0")
    wrapped = primitive(r.wrappers, lambda x: x * INF)
    prim = fake("AllReduce", group="tp")

    class Both(nn.Cell):
        def __init__(self):
            super().__init__()
            self.row = Row(lambda x: wrapped(prim, x))
            self.expo = Row(ops.exp)

        def construct(self, x):
            return self.row(x) + self.expo(x * 100.0)

    model = nn.SequentialCell([Both()])
    hooks = CellHooks(r.checker)
    r.wrappers.enclosing = hooks.current_call
    with r:
        hooks.install(model)
        try:
            model(tensor(1.0))
        finally:
            hooks.uninstall()
    by_name = {x["name"]: x for x in r.records()}
    assert by_name["Cell.0.expo.Row.forward.0"]["origin"] is True
    assert "entered" in by_name["Cell.0.row.Row.forward.0"]
    assert by_name["Cell.0.Both.forward.0"]["origin"] is False and "entered" not in by_name["Cell.0.Both.forward.0"]


def test_collective_only_interception_patches_the_collectives_and_puts_them_back(tmp_path):
    """What L0 installs (namespaces=("Collective",)): the collective
    primitives (their class __call__ or their pyboost function) and the
    gradient reducer; nothing else; all put back by uninstall."""
    from mindspore.ops.auto_generate import gen_ops_prim
    from mindspore.ops.operations import comm_ops
    from mindspore.ops import primitive as primitive_module

    checker = Checker(RunState(rank=0), dump_path=str(tmp_path / "dump"), library_roots=library_roots())
    interceptor = ApiInterceptor(checker, namespaces=("Collective",))
    before = (ops.exp, primitive_module._run_op, gen_ops_prim.pyboost_dist_comm_all_reduce,
              vars(comm_ops.AllReduce).get("__call__"), vars(nn.DistributedGradReducer).get("__call__"))
    count = interceptor.install()
    try:
        assert count >= 20
        assert hasattr(comm_ops.AllReduce.__call__, "__probe_original__")
        for name in ("AllGather", "ReduceScatter", "Broadcast", "AlltoAll", "NeighborExchange", "Send", "Receive"):
            assert hasattr(getattr(comm_ops, name).__call__, "__probe_original__"), name
        assert hasattr(gen_ops_prim.pyboost_dist_comm_all_reduce, "__probe_original__")
        assert hasattr(gen_ops_prim.pyboost_inner_comm_all_reduce, "__probe_original__")
        assert hasattr(nn.DistributedGradReducer.__call__, "__probe_original__")
        assert ops.exp is before[0] and primitive_module._run_op is before[1]
        assert not hasattr(ops.MatMul.__call__, "__probe_original__")
    finally:
        interceptor.uninstall()
    after = (ops.exp, primitive_module._run_op, gen_ops_prim.pyboost_dist_comm_all_reduce,
             vars(comm_ops.AllReduce).get("__call__"), vars(nn.DistributedGradReducer).get("__call__"))
    assert after == before


def test_group_ranks_unknown_is_asked_again(monkeypatch):
    answers = iter([None, (0, 1)])
    monkeypatch.setattr(collectives, "lookup_ranks", lambda group: next(answers))
    collectives.forget_groups()
    assert collectives.group_ranks("g") is None
    assert collectives.group_ranks("g") == (0, 1)
    assert collectives.group_ranks("g") == (0, 1)  # known: not asked again (the iterator is exhausted)
    collectives.forget_groups()


def test_forms_name_only_the_dump_format_apis():
    from probe_format.collectives import COLLECTIVE_APIS

    assert {f.api for f in collectives.FORMS.values()} == set(COLLECTIVE_APIS)
    for name, form in collectives.FORMS.items():
        assert set(form.copied) <= set(form.data) and set(form.copied) <= set(form.written), name
