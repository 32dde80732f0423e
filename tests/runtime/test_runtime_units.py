"""probe_runtime's detection, state and writer, each on its own (no MindSpore)."""
from __future__ import annotations

import json
import math
import os
import stat

import pytest

np = pytest.importorskip("numpy")

from probe_runtime.check.verdict import HostTensor, judge, statistics  # noqa: E402
from probe_runtime.state import RunState, expand_ids  # noqa: E402
from probe_runtime.dump.writer import Record, StepWriter, WriterError, read_json  # noqa: E402


class FakeTensor:
    """Enough of a tensor for detection: dtype name, shape, asnumpy."""

    def __init__(self, array, dtype):
        self._array = np.asarray(array)
        self.dtype = dtype
        self.shape = self._array.shape

    def asnumpy(self):
        return self._array


def host(values, dtype="Float32", np_dtype=np.float32):
    array = np.asarray(values, dtype=np_dtype)
    return HostTensor(dtype, array.shape, array)


# -- detection -----------------------------------------------------------------
def test_finite_and_nonfinite():
    assert host([1.0, 2.0]).finite()
    assert not host([1.0, np.inf]).finite()
    assert not host([np.nan]).finite()
    assert not host([np.inf, -np.inf]).finite()  # inf - inf must not look finite


@pytest.mark.parametrize("where", [0, (1 << 20) - 1, 1 << 20, 3 * (1 << 20) + 5])
def test_finite_in_chunks_finds_a_single_bad_value(where):
    """Tensors larger than one chunk are tested chunk by chunk: a lone nan
    at a chunk's edge or in the last partial chunk is found."""
    values = np.ones(3 * (1 << 20) + 6, np.float32)
    values[where] = np.nan
    assert not host(values).finite()
    values[where] = 1.0
    assert host(values).finite()


def test_finite_float16_whose_sum_would_overflow():
    assert host(np.full(3 * (1 << 20), 60000.0), "Float16", np.float16).finite()


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
def test_finite_values_sum_of_squares_agrees_with_isfinite(np_dtype):
    """float32/float64 are tried through their sum of squares first: a
    finite sum proves finiteness, anything else is decided by isfinite.
    Finite values whose squares overflow, subnormals, +inf beside -inf
    (which would cancel in a plain sum) and a lone nan, in arrays of
    several sizes and strides, each get numpy's verdict; a user's
    ``np.errstate(all="raise")`` changes nothing."""
    info = np.finfo(np_dtype)
    rng = np.random.default_rng(7)
    specials = [info.max, -info.max, info.tiny / 4, np.inf, -np.inf, np.nan]
    for size in (1, 63, 4096, 70001):
        base = rng.standard_normal(size).astype(np_dtype)
        for picks in ([], [0], [0, 1], [3, 4], [5], [2, 0], [3]):
            values = base.copy()
            for k, pick in enumerate(picks):
                values[(k * 7919) % size] = specials[pick]
            for view in (values, values[::3]):
                expected = bool(np.isfinite(view).all())
                with np.errstate(all="raise"):
                    assert host(view, "Float64" if np_dtype == np.float64 else "Float32",
                                np_dtype).finite() == expected, (size, picks)


def test_float16_verdict_from_bits_matches_isfinite_for_every_value():
    """float16 tensors are judged from their bits: every one of the 65,536
    float16 values, alone and beside finite ones, gets numpy's verdict."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        expected = np.isfinite(every)
    for value, finite in zip(every, expected):
        tensor = np.array([1.0, value, -2.0], np.float16)
        assert host(tensor, "Float16", np.float16).finite() == bool(finite), hex(int(tensor.view(np.uint16)[1]))
    assert int((~expected).sum()) == 2 * 1024  # 2 signs x (inf + 1023 nan payloads)
    strided = np.ones((4, 6), np.float16)[:, ::2]  # not contiguous
    strided[2, 1] = -np.inf
    assert not host(strided, "Float16", np.float16).finite()


def test_int_bool_empty_never_count():
    assert host([1, 2], "Int32", np.int32).finite()
    assert host([True], "Bool", np.bool_).finite()
    assert host(np.zeros((0, 3)), "Float32").finite()
    assert HostTensor("Float32", (2,), None).finite()


def test_float16_norm_above_max_is_not_overflow():
    big = host(np.full(100, 60000.0), "Float16", np.float16)
    assert big.finite()
    stats = statistics(big)
    assert math.isfinite(stats["Norm"]) and stats["Norm"] > 65504
    assert stats["Max"] == 60000.0


def test_statistics_shapes():
    assert statistics(host(np.zeros((0,)))) == {"Max": None, "Min": None, "Mean": None, "Norm": None}
    assert statistics(host([True, False], "Bool", np.bool_)) == {"Max": True, "Min": False, "Mean": None, "Norm": None}
    assert statistics(host([1, 3], "Int64", np.int64))["Max"] == 3
    stats = statistics(host([1.0, np.inf]))
    assert stats["Max"] == math.inf and stats["Min"] == 1.0


def test_judge_origin_and_carried():
    finite = FakeTensor([1.0, 2.0], "Float32")
    bad = FakeTensor([np.inf, 2.0], "Float32")
    ints = FakeTensor([1, 2], "Int32")
    assert judge([finite], [bad]).origin
    carried = judge([bad], [bad])
    assert carried.overflow and not carried.origin
    assert not judge([finite, ints], [(finite, ints)]).overflow
    assert judge([finite], [(finite, bad, ints)]).overflow  # one bad output among several
    assert not judge([3, None, "x"], [finite]).overflow


# -- state -----------------------------------------------------------------------
def test_expand_ids_and_selection():
    assert expand_ids([]) is None
    assert expand_ids([0, "2-4"]) == {0, 2, 3, 4}
    state = RunState(steps=expand_ids([1]), overflow_nums=2)
    assert not state.selected()
    state.next_step()
    assert state.selected()
    assert state.next_index("Functional.exp") == 0 and state.next_index("Functional.exp") == 1
    assert state.count_record() and state.count_record() and not state.count_record()
    assert state.exhausted and not state.selected()
    assert RunState().rank_dir == "rank" and RunState(rank=3).rank_dir == "rank3"
    ranked = RunState(ranks=expand_ids([1]), rank=0)
    assert not ranked.selected()


# -- writer ----------------------------------------------------------------------
def record(name="Functional.exp.0.forward"):
    return Record(name=name, origin=True, where="train.py:3",
                  entry={"input_args": [], "input_kwargs": {}, "output": [{"Max": math.inf, "Mean": math.nan}]},
                  stack=["File train.py, line 3, in <module>, \n y = ops.exp(x)"],
                  arrays={f"{name}.output.0.npy": np.array([np.inf], np.float16)})


def test_writer_layout_modes_and_infinity(tmp_path):
    dump = tmp_path / "dump"
    writer = StepWriter(str(dump), 0, "rank")
    writer.write(record(), kind="forward", step=0, rank=None)
    folder = dump / "step0" / "rank"
    for name in ("dump.json", "stack.json", "construct.json", "overflow.json"):
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o640
    for sub in (dump, dump / "step0", folder, folder / "dump_tensor_data"):
        assert stat.S_IMODE(os.stat(sub).st_mode) == 0o750
    text = (folder / "dump.json").read_text()
    assert "Infinity" in text and "NaN" in text  # msprobe's bare tokens
    data = read_json(str(folder / "dump.json"))
    assert math.isinf(data["data"]["Functional.exp.0.forward"]["output"][0]["Max"])
    assert read_json(str(folder / "overflow.json"))[0]["name"] == "Functional.exp.0.forward"
    assert read_json(str(folder / "construct.json")) == {}
    assert np.load(folder / "dump_tensor_data" / "Functional.exp.0.forward.output.0.npy")[0] == np.inf
    assert not [p for p in os.listdir(folder) if p.endswith(".tmp")]


def test_writer_refuses_soft_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(WriterError):
        StepWriter(str(link / "dump"), 0, "rank").write(record())
    assert not list(real.iterdir())


def test_writer_replaces_link_not_target(tmp_path):
    writer = StepWriter(str(tmp_path / "dump"), 0, "rank")
    writer.write(record("A.0.forward"))
    folder = tmp_path / "dump" / "step0" / "rank"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    os.unlink(folder / "overflow.json")
    os.symlink(victim, folder / "overflow.json")
    writer.write(record("B.0.forward"))
    assert victim.read_text() == "keep"
    assert not os.path.islink(folder / "overflow.json")
    assert json.loads((folder / "overflow.json").read_text())[-1]["name"] == "B.0.forward"


def test_npy_keeps_the_shape_of_scalars_and_makes_views_contiguous(tmp_path):
    """A 0-d tensor (a loss) is saved with shape (), as dump.json says and
    msprobe saves asnumpy(); a transposed view is saved with its values."""
    writer = StepWriter(str(tmp_path / "dump"), 0, "rank")
    matrix = np.arange(6, dtype=np.float32).reshape(2, 3).T
    writer.write(Record(name="Tensor.mean.0.forward", origin=True, where="train.py:3", entry={"output": []},
                        stack=[], arrays={"Tensor.mean.0.forward.output.0.npy": np.array(np.inf, np.float32),
                                          "Tensor.mean.0.forward.input.0.npy": matrix}),
                 kind="forward", step=0, rank=None)
    folder = tmp_path / "dump" / "step0" / "rank" / "dump_tensor_data"
    scalar = np.load(folder / "Tensor.mean.0.forward.output.0.npy")
    assert scalar.shape == () and np.isinf(scalar)
    assert np.array_equal(np.load(folder / "Tensor.mean.0.forward.input.0.npy"), matrix)
