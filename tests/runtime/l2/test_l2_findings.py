"""A tester's findings on level L2 (issue 35), each checked without a
MindSpore compile where it can be: a kernel of a graph loop (one dump file
per run, loop-carried inputs not written), a compiled Cell returning a dict
or a bfloat16 tensor, a replay that does not overflow again (a dropout
drew another mask) in two steps, and the step after a recorded overflow,
which starts from the inf/nan Parameters it left."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from probe_runtime.l2 import records as l2_records  # noqa: E402
from probe_runtime.l2.records import KernelRecords  # noqa: E402
from probe_runtime.l2.scan import Kernel, classify, read_kernels, scan  # noqa: E402
from probe_runtime.state import RunState  # noqa: E402

FINITE = np.ones((2, 4), np.float32)
INF = np.full((2, 4), np.inf, np.float32)
TEN = np.array(10.0, np.float32)
BOOL = np.array(False)


def loop_dump(root: Path, before: tuple = ()) -> Path:
    """The dump MindSpore 2.10 writes of ``h = fc(x); while i < 6: h = h *
    10.0; return h.sum()`` when the 4th multiplication passes float32's
    maximum (measured, /tmp/hunt_l2/s7/loop.py): each graph in its own
    folder, the loop's Mul once per run with no ``input.0`` (the value
    carried around the loop), ReduceSum with neither input 0 (the loop's
    result) nor 1 (its axis). ``before``: kernels (op, full name, inputs,
    outputs) run before the loop, in graph 0."""
    rank = root / "rank_0"
    (rank / "execution_order").mkdir(parents=True)
    for graph, names in (("0", "Default/fc-Dense/BiasAdd-op0"), ("3", "Expand/_Muls/Mul-op0\nDefault/Add-op0"),
                         ("4", "Expand/_SumExt/ReduceSum-op0")):
        (rank / "execution_order" / f"ms_execution_order_graph_{graph}.csv").write_text(
            f"NodeExecutionOrder-FullNameWithScope\n{names}\n")
    (rank / "graphs").mkdir()
    (rank / "graphs" / "ms_output_trace_code_graph_3.ir").write_text(
        "      # Fullname with scope: (Expand/_Muls/Mul-op0)\n"
        "      # In file /home/u/loop.py:18, 16~28/            h = h * 10.0/\n")
    stamp = [1000]

    def put(graph: str, op: str, flat: str, io: str, slot: int, array: np.ndarray) -> None:
        folder = rank / "Net" / graph / "1"
        folder.mkdir(parents=True, exist_ok=True)
        stamp[0] += 10
        np.save(folder / f"{op}.{flat}.0.0.{stamp[0]}.{io}.{slot}.DefaultFormat.Float32.npy", array)

    for op, full, inputs, outputs in before:
        for slot, array in enumerate(inputs):
            put("0", op, full.replace("/", "_"), "input", slot, array)
        for slot, array in enumerate(outputs):
            put("0", op, full.replace("/", "_"), "output", slot, array)
    put("0", "BiasAdd", "Default_fc-Dense_BiasAdd-op0", "input", 0, FINITE)
    put("0", "BiasAdd", "Default_fc-Dense_BiasAdd-op0", "output", 0, FINITE * 4e34)
    for run in range(6):  # 4e35, 4e36, 4e37, inf, inf, inf
        put("3", "Mul", "Expand__Muls_Mul-op0", "input", 1, TEN)
        put("3", "Mul", "Expand__Muls_Mul-op0", "output", 0, INF if run >= 3 else FINITE * 4e35 * 10 ** run)
    put("4", "ReduceSum", "Expand__SumExt_ReduceSum-op0", "input", 2, BOOL)
    put("4", "ReduceSum", "Expand__SumExt_ReduceSum-op0", "input", 3, BOOL)
    put("4", "ReduceSum", "Expand__SumExt_ReduceSum-op0", "output", 0, np.array(np.inf, np.float32))
    return root


# -- 1. a kernel in a graph loop ------------------------------------------------------------
def test_each_run_of_a_loop_kernel_is_judged_and_the_first_overflowing_run_is_the_origin(tmp_path):
    """The loop's Mul runs six times; its runs were keyed as one kernel and
    kept the files of whichever the listing gave last (a finite one), and
    ReduceSum, whose input 0 MindSpore did not write, became a false
    origin. Each run is judged: the 4th Mul is the origin."""
    found = scan(str(loop_dump(tmp_path / "d")), library_roots=("/lib/mindspore",))
    assert [(k.op, k.origin) for k in found] == [("Mul", True), ("ReduceSum", False)]
    kernels = read_kernels(str(tmp_path / "d"))
    assert [k.run for k in kernels if k.op == "Mul"] == [0, 1, 2, 3, 4, 5]
    mul, reduce_sum = found
    assert (mul.run, mul.runs, mul.nonfinite_runs) == (3, 6, 3) and mul.where == "/home/u/loop.py:18"
    assert mul.unread == [0] and reduce_sum.unread == [0, 1]
    assert "run 4 of 6" in l2_records.kernel_message(mul)


def test_a_kernel_whose_inputs_were_not_dumped_is_never_the_origin_after_another_overflow(tmp_path):
    """An unwritten input is taken as finite only when nothing before the
    kernel held inf/nan and the step's arguments were finite; otherwise
    where the overflow started is not known, and its record says why."""
    exp = ("Exp", "Default/Exp-op0", [FINITE], [INF])
    found = classify(read_kernels(str(loop_dump(tmp_path / "a", before=(exp,)))))
    assert [(k.op, k.origin) for k in found] == [("Exp", True), ("Mul", False), ("ReduceSum", False)]
    message = l2_records.kernel_message(found[1])
    assert "did not dump input 0" in message and "where the overflow started is not known" in message
    given_inf = classify(read_kernels(str(loop_dump(tmp_path / "b"))), given_finite=False)
    assert not any(k.origin for k in given_inf)


def test_a_kernel_record_says_its_run_and_its_inputs_not_dumped(tmp_path):
    found = scan(str(loop_dump(tmp_path / "d")), library_roots=("/lib/mindspore",))
    state = RunState(overflow_nums=-1, step=1)
    KernelRecords(state, dump_path=str(tmp_path / "dump")).write(found)
    folder = tmp_path / "dump" / "step1" / "rank"
    records = json.loads((folder / "overflow.json").read_text())
    assert [(r["name"], r["origin"]) for r in records] == [("Mul.Expand/_Muls/Mul-op0", True),
                                                           ("ReduceSum.Expand/_SumExt/ReduceSum-op0", False)]
    assert "run 4 of 6" in records[0]["message"]
    assert "did not dump inputs 0, 1" in records[1]["message"]
    kernel = json.loads((folder / "dump.json").read_text())["data"]["Mul.Expand/_Muls/Mul-op0"]["kernel"]
    assert kernel["run"] == 3 and kernel["runs"] == 6 and kernel["inputs_not_dumped"] == [0]


def test_a_carried_kernel_does_not_deny_the_origin_the_step_names(tmp_path):
    """A reviewer's finding (/tmp/review32/s/a_loop.py nested): a kernel
    after the named origin whose loop-carried input was not written said
    "where the overflow started is not known" in the same step's records."""
    exp = ("Exp", "Default/Exp-op0", [FINITE], [INF])
    found = scan(str(loop_dump(tmp_path / "d", before=(exp,))), library_roots=("/lib/mindspore",))
    state = RunState(overflow_nums=-1, step=1)
    KernelRecords(state, dump_path=str(tmp_path / "dump")).write(found)
    records = json.loads((tmp_path / "dump" / "step1" / "rank" / "overflow.json").read_text())
    assert [r["origin"] for r in records] == [True, False, False]
    for record in records[1:]:
        assert "did not dump input" in record["message"], record
        assert "not known" not in record["message"] and "inf/nan from the kernels before it" in record["message"]


def test_a_kernel_outside_a_loop_keeps_its_answer(tmp_path):
    """A ReduceSum outside a loop has no input 1 file either (its axis):
    as the first kernel to overflow it stays the origin."""
    root = tmp_path / "d"
    rank = root / "rank_0"
    folder = rank / "Net" / "0" / "1"
    folder.mkdir(parents=True)
    for stamp, io, slot, array in ((1, "input", 0, FINITE * 1e38), (2, "input", 2, BOOL), (3, "input", 3, BOOL),
                                   (4, "output", 0, np.array(np.inf, np.float32))):
        np.save(folder / f"ReduceSum.Default_ReduceSum-op0.0.0.{stamp}.{io}.{slot}.DefaultFormat.Float32.npy", array)
    (found,) = scan(str(root), library_roots=("/lib/mindspore",))
    assert found.origin and found.unread == [1] and found.runs == 1
    assert "taken as finite" in l2_records.kernel_message(found)


def typed_dump(root: Path, kernels: list) -> Path:
    """A one-graph dump whose ``.ir`` gives each kernel's input types, as
    MindSpore 2.7.0 and 2.10 write them: ``kernels`` is a list of (op, full
    name, .ir input types, inputs by slot, outputs) in execution order."""
    rank = root / "rank_0"
    folder = rank / "Net" / "0" / "1"
    folder.mkdir(parents=True)
    (rank / "execution_order").mkdir()
    (rank / "execution_order" / "ms_execution_order_graph_0.csv").write_text(
        "NodeExecutionOrder-FullNameWithScope\n" + "".join(f"{full}\n" for _, full, _, _, _ in kernels))
    (rank / "graphs").mkdir()
    (rank / "graphs" / "ms_output_trace_code_graph_0.ir").write_text("".join(
        f"  %{i}(CNode_{i}) = PrimFunc_{op}(%para1_x) primitive_attrs: {{}}\n"
        f"      : ({types}) -> (<Tensor[Float32], ()>)\n      : (Tensor) -> (Tensor)\n"
        f"      # Fullname with scope: ({full})\n      # In file /home/u/net.py:{10 + i}, 4~9/  x/\n"
        for i, (op, full, types, _, _) in enumerate(kernels)))
    for i, (op, full, _, inputs, outputs) in enumerate(kernels):
        for io, arrays in (("input", inputs), ("output", dict(enumerate(outputs)))):
            for slot, array in arrays.items():
                np.save(folder / f"{op}.{full.replace('/', '_')}.0.0.{1000 + 10 * i + (io == 'output')}.{io}.{slot}"
                                 f".DefaultFormat.Float32.npy", array)
    return root


MASK = np.array([[0, -np.inf, 0, 0]] * 2, np.float32)
SUM_TYPES = "<Tensor[Float32], (2, 4)>, <Tuple[], TupleShape()>, <Bool, NoShape>, <Bool, NoShape>"


def test_an_axis_never_written_does_not_cost_reduce_sum_the_origin(tmp_path):
    """A reviewer's finding (/tmp/review32/s/f_mask.py): a -inf attention
    mask given to the step, and ``(x * 1e37).sum()`` overflowing. The sum's
    ReduceSum has no input 1 file (its axis, a tuple: MindSpore writes
    none), which counted as an input that might hold inf/nan, so with the
    mask in the step's arguments (and the ``x + mask`` before it holding
    -inf) it was never the origin, and the step had none. The ``.ir`` types
    say the axis and flags cannot hold inf/nan."""
    add = ("Add", "Default/Add-op0", "<Tensor[Float32], (2, 4)>, <Tensor[Float32], (2, 4)>",
           {0: FINITE, 1: MASK}, [MASK])
    reduce_sum = ("ReduceSum", "Expand/_SumExt/ReduceSum-op1", SUM_TYPES, {0: FINITE * 1e38, 2: BOOL, 3: BOOL},
                  [np.array(np.inf, np.float32)])
    found = scan(str(typed_dump(tmp_path / "d", [add, reduce_sum])), library_roots=("/lib",), given_finite=False)
    assert [(k.op, k.origin, k.unread) for k in found] == [("Add", False, []), ("ReduceSum", True, [])]
    assert found[1].where == "/home/u/net.py:11" and l2_records.kernel_message(found[1]) is None


@pytest.mark.parametrize("types", ["<Tensor[Float32], (2, 4)>, <Tensor[Float32], (), value=...>",
                                   "<Float32, NoShape>, <Float32, NoShape>",  # a float scalar carried (ScalarMul)
                                   None])  # a kernel the .ir does not list
def test_an_unwritten_input_that_can_hold_inf_still_counts(tmp_path, types):
    """A loop-carried input (a float tensor or scalar: its .ir type is
    floating) that MindSpore did not write may hold the step's -inf: the
    kernel is not called the origin."""
    mul = ("Mul", "Expand/_Muls/Mul-op0", types or "", {1: TEN}, [INF])
    root = typed_dump(tmp_path / "d", [mul])
    if types is None:
        (root / "rank_0" / "graphs" / "ms_output_trace_code_graph_0.ir").write_text("")
    (found,) = classify(read_kernels(str(root)), given_finite=False)
    assert not found.origin and found.unread == [0]
    (alone,) = classify(read_kernels(str(root)))
    assert alone.origin


def test_input_types_that_are_another_kernels_are_not_used(tmp_path):
    """The .ir lists the kernel's name with types its files contradict (a
    floating file where the .ir has a flag): those types are another
    kernel's, and every slot up to the highest written counts again."""
    odd = ("ReduceSum", "Default/ReduceSum-op0", "<Tensor[Float32], (2, 4)>, <Bool, NoShape>, <Bool, NoShape>",
           {0: FINITE, 2: FINITE}, [INF])
    (found,) = classify(read_kernels(str(typed_dump(tmp_path / "d", [odd]))), given_finite=False)
    assert found.unread == [1] and not found.origin


# -- 2. what a compiled Cell returns ----------------------------------------------------------
def test_a_dict_result_is_read():
    """A compiled Cell returning a dict was called clean: only tuples and
    lists were looked into."""
    ms = pytest.importorskip("mindspore")
    from probe_runtime.l2.graph import nonfinite_outputs

    inf = ms.Tensor(np.array([1.0, np.inf], np.float32))
    fine = ms.Tensor(np.array([1.0, 2.0], np.float32))
    assert nonfinite_outputs({"score": inf, "aux": fine}) == ["output 'score'"]
    assert nonfinite_outputs([fine, {"a": (fine, inf)}]) == ["output 1 'a' 1"]


def test_a_bfloat16_result_is_read():
    """A compiled Cell returning a bfloat16 tensor was called clean: its
    asnumpy() raises, and the tensor was dropped. It is cast to float32
    first, as everywhere else in the tool."""
    ms = pytest.importorskip("mindspore")
    from probe_runtime.l2.graph import nonfinite_outputs

    inf = ms.Tensor(np.array([1.0, np.inf], np.float32))
    fine = ms.Tensor(np.array([1.0, 2.0], np.float32))
    assert nonfinite_outputs(inf.astype(ms.bfloat16)) == ["output"]
    assert nonfinite_outputs((fine, inf.astype(ms.float16))) == ["output 1"]
    assert nonfinite_outputs({"x": fine.astype(ms.bfloat16), "n": ms.Tensor(3)}) == []


# -- 3 and 4. steps whose replay names no kernel, the step after a recorded one ----------------
class FakeCell:
    """A Cell's stand-in: its Parameters, and a step that returns what
    ``outputs`` gives for the current call (a replay included)."""

    def __init__(self, parameters: dict) -> None:
        self.parameters = parameters

    def parameters_and_names(self):
        return list(self.parameters.items())


def checks(tmp_path, monkeypatch, kernels_of, drawn=(), dumped=True):
    """A GraphChecks over a fake switch and a scratch folder that holds a
    dump file when ``dumped``; ``kernels_of(step)`` is what the replay's
    scan finds."""
    pytest.importorskip("mindspore")
    from probe_runtime.l2 import graph

    scratch = tmp_path / "scratch"
    state = RunState(overflow_nums=-1)
    monkeypatch.setattr(graph, "scan", lambda *a, **k: kernels_of(state.step))
    monkeypatch.setattr(graph, "random_kernels", lambda root: list(drawn))

    class Switch:
        def on(self):
            if dumped:
                folder = scratch / "rank_0" / "Net" / "0" / "1"
                folder.mkdir(parents=True, exist_ok=True)
                np.save(folder / "Exp.Default_Exp-op0.0.0.1.output.0.DefaultFormat.Float32.npy", INF)

        def off(self):
            pass

    errors = []
    made = graph.GraphChecks(state, KernelRecords(state, dump_path=str(tmp_path / "dump")), Switch(),
                             scratch=str(scratch), library_roots=("/nowhere",), on_exhausted=lambda: None,
                             on_error=lambda where, err: errors.append((where, err)))
    return made, state, errors


def step_records(tmp_path, step):
    path = tmp_path / "dump" / f"step{step}" / "rank" / "overflow.json"
    return json.loads(path.read_text()) if path.exists() else []


def test_a_replay_that_drew_other_random_numbers_says_so_in_every_step(tmp_path, monkeypatch, caplog):
    """A dropout drew another mask in the replay, which did not overflow:
    the hint named a graph compiled before the debugger, and a later step
    that also returned inf got no record and no message at all."""
    ms = pytest.importorskip("mindspore")
    made, state, errors = checks(tmp_path, monkeypatch, lambda step: [], drawn=["Dropout"])
    inf = ms.Tensor(np.array([np.inf], np.float32))
    for step in (0, 1, 2):
        state.step = step
        if step != 1:
            assert made.call(lambda cell: inf, FakeCell({}), (), {}) is inf
    assert not errors
    first, later = step_records(tmp_path, 0), step_records(tmp_path, 2)
    assert len(first) == 1 and len(later) == 1, (first, later)
    assert "Dropout" in first[0]["message"] and "compiled before PrecisionDebugger" not in first[0]["message"]
    assert "again" in later[0]["message"] and "step 0" in later[0]["message"]


def test_an_empty_replay_dump_still_names_a_late_compile(tmp_path, monkeypatch):
    ms = pytest.importorskip("mindspore")
    made, state, errors = checks(tmp_path, monkeypatch, lambda step: [], dumped=False)
    made.call(lambda cell: ms.Tensor(np.array([np.inf], np.float32)), FakeCell({}), (), {})
    (record,) = step_records(tmp_path, 0)
    assert "compiled before PrecisionDebugger() was created" in record["message"] and not errors


def weight_training(tmp_path, monkeypatch):
    """(ms, weight, made, state, errors, train): checks whose every replay
    names an Exp origin, and a step ``train(cell, x)`` that multiplies
    Parameter ``w`` by ``x`` (inf: it is left inf)."""
    ms = pytest.importorskip("mindspore")
    from mindspore import ops

    weight = ms.Parameter(ms.Tensor(np.ones(2, np.float32)), name="w")
    origin = Kernel(op="Exp", full_name="Default/Exp-op0", graph="0", stamp=1, inputs={0: FINITE},
                    outputs={0: INF}, origin=True, nonfinite=True)
    made, state, errors = checks(tmp_path, monkeypatch, lambda step: [origin])

    def train(cell, x):
        ops.assign(weight, weight * x)
        return (weight * 1.0).sum()

    return ms, weight, made, state, errors, train


def test_the_step_after_a_recorded_overflow_points_to_its_record(tmp_path, monkeypatch, caplog):
    """An overflow recorded at step 2 leaves inf in the Parameters; step 3
    was told "the overflow happened before this step, outside what was
    checked". It points to step 2's record, and step 4 is not silent."""
    ms, weight, made, state, errors, train = weight_training(tmp_path, monkeypatch)

    cell = FakeCell({"w": weight})
    with caplog.at_level("WARNING", logger="probe_runtime"):
        for step, value in ((1, 1.0), (2, np.inf), (3, 1.0), (4, 1.0)):
            state.step = step
            made.call(train, cell, (ms.Tensor(np.float32(value)),), {})
    assert not errors
    assert [r["name"] for r in step_records(tmp_path, 2)] == ["Exp.Default/Exp-op0"]
    (after,) = step_records(tmp_path, 3)
    assert "since the overflow recorded in step 2" in after["message"], after
    assert "outside what was checked" not in after["message"]
    assert not step_records(tmp_path, 4)
    assert any("step 4" in r.getMessage() and "again" in r.getMessage() for r in caplog.records)


def test_parameters_shared_with_another_cell_point_to_the_latest_record(tmp_path, monkeypatch):
    """A reviewer's findings (/tmp/review32/s/d_after.py eval, reset2): the
    step that left Parameters inf/nan was kept per Cell, and the first one
    only. An evaluation Cell sharing the trained weight, called after the
    step-2 overflow, was told the overflow happened "outside what was
    checked"; after the weight was set back and step 4 overflowed again,
    step 5 named step 2 (on stderr only)."""
    ms, weight, made, state, errors, train = weight_training(tmp_path, monkeypatch)

    def evaluate(cell):
        return (weight * 2.0).sum()

    trained, evaluation = FakeCell({"w": weight}), FakeCell({"w": weight})
    for step, value in ((1, 1.0), (2, np.inf), (3, 1.0), (4, np.inf), (5, 1.0)):
        state.step = step
        if step == 4:  # the user sets the weight back, unchecked
            weight.set_data(ms.Tensor(np.ones(2, np.float32)))
        made.call(train, trained, (ms.Tensor(np.float32(value)),), {})
        if step == 2:
            made.call(evaluate, evaluation, (), {})
    assert not errors
    (evaluated,) = [r for r in step_records(tmp_path, 2) if not r["origin"]]
    assert "since the overflow recorded in step 2" in evaluated["message"], evaluated
    assert [r["origin"] for r in step_records(tmp_path, 4)] == [True]
    (after,) = step_records(tmp_path, 5)
    assert "since the overflow recorded in step 4" in after["message"], after


# -- 5. a Cast whose dump-file number is another Cast's in the .ir ------------------------------
def test_an_inserted_cast_numbered_otherwise_in_the_dump_gets_the_line_of_what_it_casts(tmp_path):
    """MindSpore 2.10, amp O2 with loss scaling (/tmp/hunt_l2/s3/amp.py):
    the dump file names number the backward float16 Casts 0.. while the
    execution order and the .ir number them 5..; the overflowing Cast's
    file name (Cast-op5) is the .ir's first Cast, in mindspore/train/amp.py.
    Matched by order within its scope it is the row Cast-op6, which the
    .ir does not list: an inserted kernel, with the line of the kernel
    that made its input (the MatMul, inside its scope)."""
    grad = "Gradients/Default/network-WithLossCell"
    matmul = f"{grad}/_backbone-Net/fc2-Dense/Grad_MatMul/MatMul-op0"
    ir = (f"      # Fullname with scope: ({matmul})\n"
          "      # In file /home/u/amp.py:22, 15~27/        return self.fc2(h)/\n"
          f"      # Fullname with scope: ({grad}/Grad_Cast/Cast-op5)\n"
          "      # In file /lib/mindspore/train/amp.py:649, 33~76/  return self._loss_fn(...)/\n")
    rank = tmp_path / "d" / "rank_0"
    folder = rank / "Net" / "0" / "1"
    folder.mkdir(parents=True)
    (rank / "execution_order").mkdir()
    (rank / "execution_order" / "ms_execution_order_graph_0.csv").write_text(
        f"NodeExecutionOrder-FullNameWithScope\n{grad}/Grad_Cast/Cast-op5\n{matmul}\n{grad}/Grad_Cast/Cast-op6\n")
    (rank / "graphs").mkdir()
    (rank / "graphs" / "ms_output_trace_code_graph_0.ir").write_text(ir)
    big = np.full((2, 2), 70000.0, np.float32)
    for stamp, name, io, array in ((1, f"Cast.{grad}/Grad_Cast/Cast-op0", "input", FINITE),
                                   (2, f"Cast.{grad}/Grad_Cast/Cast-op0", "output", FINITE),
                                   (3, f"MatMul.{matmul}", "input", FINITE), (4, f"MatMul.{matmul}", "output", big),
                                   (5, f"Cast.{grad}/Grad_Cast/Cast-op5", "input", big),
                                   (6, f"Cast.{grad}/Grad_Cast/Cast-op5", "output", INF)):
        np.save(folder / f"{name.replace('/', '_')}.0.0.{stamp}.{io}.0.DefaultFormat.Float32.npy", array)
    (found,) = scan(str(tmp_path / "d"), library_roots=("/lib/mindspore",))
    assert found.name == f"Cast.{grad}/Grad_Cast/Cast-op5" and found.origin
    assert found.where == "/home/u/amp.py:22", found.where


# -- 6. a backward while-loop's expanded Mul, and Casts with no line of their own -----------------
LIB = "/lib/mindspore"
#: what MindSpore 2.10's .ir says of each kernel (measured, CPU, a float16 Cell whose while loop does
#: ``h = h * 10.0``, trained with SGD): the backward body's expanded Mul is named as the forward body's,
#: its mark is "Corresponding forward node candidate"; the optimizer's backend Casts have no source line
BACKLOOP_IR = {
    "3": ("Expand/_Muls/Mul-op0", "      # Corresponding code candidate:\n"
          "      # In file /home/u/train.py:22, 16~24/            h = h * 10.0/\n"
          f"      # In file {LIB}/ops/auto_generate/gen_ops_def.py:8466, 11~32/    return muls_op(input, other)/\n"),
    "4": ("Expand/_Muls/Mul-op1", "      # Corresponding code candidate:\n"
          "      # Corresponding forward node candidate:\n"
          "      # In file /home/u/train.py:22, 16~24/            h = h * 10.0/\n"
          f"      # In file {LIB}/ops/auto_generate/gen_ops_def.py:8466, 11~32/    return muls_op(input, other)/\n"),
}


def backloop_dump(root: Path) -> Path:
    """The replay's dump of that step, reduced: the forward body's Mul
    (graph 3, finite), the backward body's Mul (graph 4, where the float16
    gradient overflows), the gradient of the weight (graph 2, its own
    line), and the optimizer's Cast and SGD kernels, whose .ir lists the
    Cast without a line (``is_backend_cast``)."""
    rank = root / "rank_0"
    (rank / "execution_order").mkdir(parents=True)
    (rank / "graphs").mkdir()
    grad = "Gradients/Default/network-WithLossCell/_backbone-Net/Grad_Mul/Mul-op0"
    graph2 = [grad, "Default/optimizer-SGD/Cast-op1", "Default/optimizer-SGD/SGD-op0"]
    for graph, names in (("3", [BACKLOOP_IR["3"][0]]), ("4", [BACKLOOP_IR["4"][0]]), ("2", graph2)):
        (rank / "execution_order" / f"ms_execution_order_graph_{graph}.csv").write_text(
            "NodeExecutionOrder-FullNameWithScope\n" + "".join(f"{n}\n" for n in names))
    for graph, (name, lines) in BACKLOOP_IR.items():
        (rank / "graphs" / f"ms_output_trace_code_graph_{graph}.ir").write_text(
            f"  %2(CNode_1) = PrimFunc_Mul(%1, Tensor(shape=[], dtype=Float16, value=10))\n"
            f"      : (<Tensor[Float16], (2, 4)>, <Tensor[Float16], (), value=...>) -> (<Tensor[Float16], (2, 4)>)\n"
            f"      # Fullname with scope: ({name})\n{lines}")
    (rank / "graphs" / "ms_output_trace_code_graph_2.ir").write_text(
        f"      # Fullname with scope: ({grad})\n"
        "      # Corresponding forward node candidate:\n"
        "      # In file /home/u/train.py:19, 12~22/        h = x * self.w/\n"
        "  %4(CNode_77) = PrimFunc_Cast(%3) primitive_attrs: {is_backend_cast: Bool(1)}\n"
        "      # Fullname with scope: (Default/optimizer-SGD/Cast-op1)\n"
        "  %5(CNode_78) = SGD(%4)\n"
        "      # Fullname with scope: (Default/optimizer-SGD/SGD-op0)\n"
        f"      # In file {LIB}/nn/optim/sgd.py:241, 8~40/        success = self.opt(...)/\n")
    half, big = np.full((2, 4), 1e4, np.float16), np.full((2, 4), np.inf, np.float16)
    stamp = iter(range(100, 200))

    def put(graph: str, op: str, name: str, io: str, slot: int, array: np.ndarray) -> None:
        folder = rank / "Net" / graph / "1"
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / f"{op}.{name.replace('/', '_')}.0.0.{next(stamp)}.{io}.{slot}.DefaultFormat.Float16.npy",
                array)

    put("3", "Mul", BACKLOOP_IR["3"][0], "input", 1, np.array(10.0, np.float16))
    put("3", "Mul", BACKLOOP_IR["3"][0], "output", 0, half)
    put("4", "Mul", BACKLOOP_IR["4"][0], "input", 1, np.array(10.0, np.float16))
    put("4", "Mul", BACKLOOP_IR["4"][0], "output", 0, big)
    put("2", "Mul", grad, "output", 0, big)
    put("2", "Cast", "Default/optimizer-SGD/Cast-op1", "input", 0, big)
    put("2", "Cast", "Default/optimizer-SGD/Cast-op1", "output", 0, big.astype(np.float32))
    put("2", "SGD", "Default/optimizer-SGD/SGD-op0", "input", 0, big.astype(np.float32))
    put("2", "SGD", "Default/optimizer-SGD/SGD-op0", "output", 0, big.astype(np.float32))
    return root


def test_a_backward_loop_kernel_named_as_a_forward_one_is_backward_and_casts_get_no_borrowed_line(tmp_path):
    """A fresh user's finding: in a graph's backward while loop, the
    expanded Mul is named ``Expand/_Muls/Mul-op1`` like the forward body's
    (no ``Gradients/``): its ORIGIN record said kind forward. Its .ir
    marks it "Corresponding forward node candidate", which is what now
    makes it backward. And the optimizer's Cast, which its .ir lists with
    no source line, was given the line of the kernel that ran before it
    (the weight's gradient, ``h = x * self.w``): it now has none."""
    found = scan(str(backloop_dump(tmp_path / "d")), library_roots=(LIB,))
    by_op = {k.full_name: k for k in found}
    mul = by_op["Expand/_Muls/Mul-op1"]
    assert mul.origin and mul.backward and mul.where == "/home/u/train.py:22", mul
    assert by_op["Gradients/Default/network-WithLossCell/_backbone-Net/Grad_Mul/Mul-op0"].where == \
        "/home/u/train.py:19"
    assert by_op["Default/optimizer-SGD/Cast-op1"].where is None
    assert by_op["Default/optimizer-SGD/SGD-op0"].where == f"{LIB}/nn/optim/sgd.py:241"
    assert not any(k.backward for k in found if k.full_name.startswith("Default/"))
    KernelRecords(RunState(overflow_nums=-1), dump_path=str(tmp_path / "dump")).write(found)
    written = {r["name"]: r for r in step_records(tmp_path, 0)}
    origin = written["Mul.Expand/_Muls/Mul-op1"]
    assert origin["origin"] is True and origin["kind"] == "backward", origin
    entry = json.loads((tmp_path / "dump" / "step0" / "rank" / "dump.json").read_text())["data"]
    assert "input" in entry["Mul.Expand/_Muls/Mul-op1"]  # a backward entry's layout, as for Gradients/ kernels
    assert written["Cast.Default/optimizer-SGD/Cast-op1"]["where"] is None
    report = subprocess.run([sys.executable, "-m", "msprobe_lint", "report", str(tmp_path / "dump")],
                            capture_output=True, text=True, timeout=300)
    assert "Overflow started in step0/rank: Mul.Expand/_Muls/Mul-op1 (kernel, backward) at /home/u/train.py:22" \
        in report.stdout, report.stdout + report.stderr
