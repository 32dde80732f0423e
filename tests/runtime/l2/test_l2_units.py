"""Level L2's parts that need no MindSpore run (issue 35): reading
MindSpore's dump (file names, the float16-header trap, in-place kernels,
full names and source lines), the dump configs (the Ascend one field by
field as msprobe 8.1.2 writes it), the private-function door, and the
report's naming of kernel records."""
from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from probe_format.layout import direction_of, entry_kind  # noqa: E402
from probe_runtime.l2 import dump_config  # noqa: E402
from probe_runtime.l2.scan import classify, load_npy, read_kernels, scan, unflatten  # noqa: E402

NET = "Default/network-WithLossCell/_backbone-Net"


def dump_file(folder: Path, op: str, full: str, stamp: int, io: str, slot: int, array: np.ndarray,
              dtype_name: str = "Float32") -> Path:
    """One file as MindSpore's CPU dump names it."""
    name = f"{op}.{full.replace('/', '_')}.0.0.{stamp}.{io}.{slot}.DefaultFormat.{dtype_name}.npy"
    path = folder / name
    np.save(path, array)
    return path


def fake_dump(root: Path, kernels: list, ir: str = "") -> Path:
    """A MindSpore dump under ``root``: ``kernels`` is a list of (op, full
    name, inputs, outputs) in execution order."""
    rank = root / "rank_0"
    data = rank / "Net" / "0" / "1"
    data.mkdir(parents=True)
    (rank / "execution_order").mkdir()
    (rank / "execution_order" / "ms_execution_order_graph_0.csv").write_text(
        "NodeExecutionOrder-FullNameWithScope\n" + "".join(f"{full}\n" for _, full, _, _ in kernels))
    (rank / "graphs").mkdir()
    (rank / "graphs" / "ms_output_trace_code_graph_0.ir").write_text(ir)
    for i, (op, full, inputs, outputs) in enumerate(kernels):
        for slot, array in enumerate(inputs):
            dump_file(data, op, full, 1000 + 10 * i, "input", slot, array)
        for slot, array in enumerate(outputs):
            dump_file(data, op, full, 1000 + 10 * i + 1, "output", slot, array)
    return root


FINITE = np.ones((2, 2), np.float32)
INF = np.full((2, 2), np.inf, np.float32)


def test_the_first_kernel_with_finite_inputs_and_inf_output_is_the_origin(tmp_path):
    ir = (f"  %1 = PrimFunc_Exp(%0)\n      # Fullname with scope: ({NET}/Exp-op0)\n"
          f"      # In file /lib/mindspore/nn/wrap/cell_wrapper.py:122, 14~28/        out = self._backbone(data)/\n"
          f"      # In file /home/u/train.py:20, 24~31/        return self.fc2(ops.exp(self.fc1(x)))/\n"
          f"      # In file /lib/mindspore/ops/auto_generate/gen_ops_def.py:4483, 11~24/    return exp_op(input)/\n"
          f"  %2 = PrimFunc_MatMul(%1)\n")
    root = fake_dump(tmp_path / "d", [
        ("MatMul", f"{NET}/fc1-Dense/MatMul-op0", [FINITE, FINITE], [FINITE]),
        ("Exp", f"{NET}/Exp-op0", [FINITE], [INF]),
        ("MatMul", f"{NET}/fc2-Dense/MatMul-op0", [INF, FINITE], [INF]),
        ("Parameter", "fc1_weight", [], [INF]),  # the Parameters after the step: no kernel
    ], ir)
    found = scan(str(root), library_roots=("/lib/mindspore",))
    assert [(k.name, k.origin) for k in found] == [(f"Exp.{NET}/Exp-op0", True),
                                                    (f"MatMul.{NET}/fc2-Dense/MatMul-op0", False)]
    assert found[0].where == "/home/u/train.py:20"  # the last frame outside MindSpore
    assert found[0].scope == NET and not found[0].backward
    # not in the .ir, and what made its input (Exp) is outside its scope (fc2-Dense): no line, never the
    # line of the kernel that ran before it
    assert found[1].where is None


def test_a_float16_header_over_float32_data_is_read_as_float32(tmp_path):
    """The CPU backend runs a float16 MatMul in float32 and writes float32
    data under a float16 header: read by the header, half the bytes of
    70000.0 look like inf (a false origin in a clean step)."""
    data = np.full((2, 2), 70000.0, np.float32)
    path = tmp_path / "MatMul.x.0.0.1.output.0.DefaultFormat.Float16.npy"
    header = np.lib.format.header_data_from_array_1_0(np.zeros((2, 2), np.float16))
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.write(data.tobytes())
    naive = np.load(path)  # what a reader trusting the header sees: half the bytes, as float16
    assert naive.dtype == np.float16 and not np.allclose(naive.astype(np.float32), 70000.0)
    read = load_npy(str(path))
    assert read.dtype == np.float32 and read.shape == (2, 2) and (read == 70000.0).all()
    (tmp_path / "bad.npy").write_bytes(b"not a numpy file")
    assert load_npy(str(tmp_path / "bad.npy")) is None


def test_an_in_place_kernel_is_the_origin_only_when_nothing_before_it_was_inf(tmp_path):
    """In-place kernels are written after they ran: their Parameter input
    already shows the inf they made."""
    update = ("ApplyMomentum", "Default/optimizer-Momentum/ApplyMomentum-op0", [INF, FINITE, FINITE], [INF])
    alone = classify(read_kernels(str(fake_dump(tmp_path / "a", [update]))))
    assert [(k.op, k.origin) for k in alone] == [("ApplyMomentum", True)]
    after = classify(read_kernels(str(fake_dump(tmp_path / "b", [("Exp", f"{NET}/Exp-op0", [FINITE], [INF]),
                                                                  update]))))
    assert [(k.op, k.origin) for k in after] == [("Exp", True), ("ApplyMomentum", False)]


def _sgd(name: str, parameter: np.ndarray, *, gradient: float = 20.0) -> tuple:
    """An SGD kernel as dumped: parameters, gradient, learning_rate, accum,
    momentum, stat; the Parameter (and accum, stat) as the update left it."""
    lr, momentum = np.full((1,), 1e38, np.float32), np.zeros((1,), np.float32)
    return ("SGD", f"Default/optimizer-SGD/{name}",
            [parameter, np.full(parameter.shape, gradient, np.float32), lr, parameter, momentum, parameter],
            [parameter])


def test_an_in_place_kernel_after_another_is_an_origin_when_what_it_read_was_finite(tmp_path):
    """A fresh user's finding: a learning rate of 1e38 overflowed both SGD
    kernels (the bias's, then the weight's) from a finite gradient and
    finite weights; the second was said to carry the first one's overflow.
    Its gradient and learning rate are dumped as read, its Parameter and
    state as left; the first SGD wrote a Parameter of another shape."""
    bias, weight = np.full((1,), -np.inf, np.float32), np.full((1, 4), -np.inf, np.float32)
    both = classify(read_kernels(str(fake_dump(tmp_path / "a", [_sgd("SGD-op0", bias), _sgd("SGD-op1", weight)]))),
                    updates_finite=True)
    assert [(k.full_name.rpartition("/")[2], k.origin) for k in both] == [("SGD-op0", True), ("SGD-op1", True)]
    # what cannot be told stays carried: an inf gradient; a Parameter of the first one's shape (maybe the
    # same one, written twice); Parameters or arguments not finite at the step's start; an input not dumped
    cases = {
        "gradient": [_sgd("SGD-op0", bias), _sgd("SGD-op1", weight, gradient=np.inf)],
        "same shape": [_sgd("SGD-op0", weight), _sgd("SGD-op1", weight)],
        "unknown writer": [("InplaceAddExt", f"{NET}/InplaceAddExt-op0", [FINITE[:1], FINITE[:1]], [weight]),
                           _sgd("SGD-op1", weight)],
    }
    for label, kernels in cases.items():
        found = classify(read_kernels(str(fake_dump(tmp_path / label.replace(" ", "_"), kernels))),
                         updates_finite=True)
        assert [k.origin for k in found] == [True, False], label
    # a Parameter or argument not finite at the step's start (a frozen -inf mask too: a review's finding,
    # AssignAdd of such a prior after a real overflow was an origin); the default, for callers that cannot tell
    for number, settings in enumerate(({"given_finite": False}, {"updates_finite": False}, {})):
        given = classify(read_kernels(str(fake_dump(tmp_path / f"given{number}",
                                                    [_sgd("SGD-op0", bias), _sgd("SGD-op1", weight)]))), **settings)
        assert [k.origin for k in given] == [True, False], settings
    op, full, inputs, outputs = _sgd("SGD-op1", weight)
    short = classify(read_kernels(str(fake_dump(tmp_path / "s", [_sgd("SGD-op0", bias), (op, full, inputs[:5],
                                                                                          outputs)]))),
                     updates_finite=True)
    assert [k.origin for k in short] == [True, False]


def test_a_kernel_the_backend_inserted_gets_its_scope_back():
    names = {"Default_net-Net": "Default/net-Net", "Default": "Default",
             "Default_net-Net_fc1-Dense_MatMul-op0": "Default/net-Net/fc1-Dense/MatMul-op0",
             "Default_net-Net_fc1-Dense": "Default/net-Net/fc1-Dense", "Gradients": "Gradients",
             "Gradients_Default_net-Net_fc1-Dense": "Gradients/Default/net-Net/fc1-Dense"}
    assert unflatten("Default_net-Net_fc1-Dense_MatMul-op0", names) == "Default/net-Net/fc1-Dense/MatMul-op0"
    assert unflatten("Default_net-Net_Cast-op0", names) == "Default/net-Net/Cast-op0"
    assert unflatten("Gradients_Default_net-Net_fc1-Dense_Grad_Cast_Cast-op1", names) \
        == "Gradients/Default/net-Net/fc1-Dense/Grad_Cast/Cast-op1"
    assert unflatten("Other_Cast-op0", names) == "Other_Cast-op0"


def test_the_report_names_kernel_records_kernels():
    assert entry_kind(f"Exp.{NET}/Exp-op0") == "kernel"
    assert direction_of(f"Exp.{NET}/Exp-op0") == "forward"
    assert direction_of(f"Mul.Gradients/{NET}/Grad_Exp/Mul-op0.1") == "backward"
    assert entry_kind("Functional.exp.0.forward") == "API" and entry_kind("Cell.fc.Dense.forward.0") == "Cell"
    assert direction_of("Functional.exp.0.forward") == "forward"


# -- the dump configs ---------------------------------------------------------------------
#: what msprobe 8.1.2's KernelGraphOverflowCheck writes (its __init__), for dump_path /d
MSPROBE_812 = {"dump_mode": 0, "path": "/d", "net_name": "Net", "iteration": "all", "saved_data": "full",
               "input_output": 0, "kernels": [], "support_device": [0, 1, 2, 3, 4, 5, 6, 7], "op_debug_mode": 3,
               "file_format": "npy"}


@pytest.mark.parametrize("check_mode, rank, changes", [
    ("all", None, {}),
    ("aicore", [], {"op_debug_mode": 1}),
    ("atomic", [2, 5], {"op_debug_mode": 2, "support_device": [2, 5]}),
])
def test_the_ascend_config_is_msprobe_812s_field_by_field(check_mode, rank, changes):
    ours = dump_config.ascend_config("/d", rank=rank, check_mode=check_mode)
    assert list(ours) == ["common_dump_settings"]
    expected = dict(MSPROBE_812, **changes)
    for key, value in expected.items():
        assert ours["common_dump_settings"][key] == value, key
    assert set(ours["common_dump_settings"]) == set(expected)


MSPROBE_CHILD = """
import json, sys, types
from msprobe.mindspore.overflow_check.kernel_graph_overflow_check import KernelGraphOverflowCheck
out = {}
for mode, rank in (("all", []), ("aicore", []), ("atomic", [2, 5])):
    config = types.SimpleNamespace(dump_path="/d", step=[], rank=rank, check_mode=mode)
    out[mode] = KernelGraphOverflowCheck(config).dump_json
print(json.dumps(out))
"""


def test_the_ascend_config_matches_msprobe_812_itself():
    """Against msprobe 8.1.2's own class, when its environment exists
    (tools/make-msprobe-env.sh; as tests/runtime/test_msprobe_interop.py)."""
    import subprocess

    given = os.environ.get("MSPROBE_PYTHON")
    root = Path(__file__).resolve().parents[3]
    python = Path(given) if given else root / ".msprobe-env" / "bin" / "python"
    if not python.exists():
        pytest.skip("no msprobe 8.1.2 environment: build it with tools/make-msprobe-env.sh (or set MSPROBE_PYTHON)")
    proc = subprocess.run([str(python), "-c", MSPROBE_CHILD], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"msprobe's class cannot be run here: {proc.stderr.strip().splitlines()[-1:]}")
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    for mode, rank in (("all", None), ("aicore", None), ("atomic", [2, 5])):
        assert dump_config.ascend_config("/d", rank=rank, check_mode=mode) == theirs[mode], mode


def test_the_cpu_config_and_its_install(tmp_path, monkeypatch):
    # set, then removed: monkeypatch records the variable and takes install()'s value away afterwards (a bare
    # delenv of an unset variable records nothing, and the path leaked into later tests' L2 debuggers)
    monkeypatch.setenv(dump_config.ENV, "unset")
    monkeypatch.delenv(dump_config.ENV)
    config = dump_config.cpu_config(str(tmp_path), "1")
    common = config["common_dump_settings"]
    assert common["saved_data"] == "tensor" and common["iteration"] == "1" and common["file_format"] == "npy"
    assert config["e2e_dump_settings"]["enable"] is True
    path = dump_config.install(config, str(tmp_path), "c.json")
    assert os.environ[dump_config.ENV] == path and json.loads(Path(path).read_text()) == config
    with pytest.raises(ValueError, match="check_mode must be one of"):
        dump_config.ascend_config("/d", check_mode="ai_core")


def test_a_temporary_folder_with_a_dot_is_refused(tmp_path, monkeypatch):
    dotted = tmp_path / "a.b"
    dotted.mkdir()
    monkeypatch.setattr(dump_config.tempfile, "gettempdir", lambda: str(dotted))
    with pytest.raises(ValueError, match="without '.' in its path"):
        dump_config.scratch_folder()


# -- the private door ---------------------------------------------------------------------
def test_a_release_without_the_private_function_is_refused_clearly(monkeypatch):
    from probe_runtime.l2 import private

    fake = types.ModuleType("mindspore")
    fake.__version__ = "9.9.0"
    fake._c_expression = types.ModuleType("mindspore._c_expression")
    monkeypatch.setitem(sys.modules, "mindspore", fake)
    monkeypatch.setitem(sys.modules, "mindspore._c_expression", fake._c_expression)
    with pytest.raises(private.L2Unavailable) as info:
        private.dump_switch()
    assert "_set_init_iter" in str(info.value) and "9.9.0" in str(info.value) and "2.7.0" in str(info.value)
    calls = []
    fake._c_expression._set_init_iter = calls.append
    switch = private.dump_switch()  # an untested release: a warning, not a refusal
    switch.on()
    switch.off()
    assert calls == [1, 0]


def test_a_kernel_numbered_anew_by_another_compile_gets_its_line(tmp_path):
    """A @jit region compiled with and without gradients numbers its
    kernels anew: the .ir may list Log-op0 while the dump has Log-op1."""
    ir = ("      # Fullname with scope: (Default/Log-op0)\n"
          "      # In file /home/u/train.py:110, 15~40/        return -ops.log(x).mean()/\n"
          "      # In file /lib/mindspore/ops/function/math_func.py:99/    return log_(x)/\n")
    root = fake_dump(tmp_path / "d", [("Log", "Default/Log-op1", [np.zeros(2, np.float32)],
                                       [np.full(2, -np.inf, np.float32)])], ir)
    (found,) = scan(str(root), library_roots=("/lib/mindspore",))
    assert found.name == "Log.Default/Log-op1" and found.origin and found.where == "/home/u/train.py:110"


def test_l2_on_cpu_refuses_a_distributed_process_and_jit_checks_stay_off():
    """MindSpore's CPU AllReduce fails while its dump config is set (msrun,
    2.7.0 and 2.10.0): L2 on CPU refuses a rank of a distributed job, and
    the check inside mindspore.jit regions is off there by default."""
    pytest.importorskip("mindspore")
    from probe_runtime.l2.parts import compiled_parts
    from probe_runtime.l2.private import L2Unavailable
    from probe_runtime.state import RunState

    checker = types.SimpleNamespace(on_error=lambda *a: None, records=types.SimpleNamespace(writer=None))
    with pytest.raises(L2Unavailable, match="does not run in a distributed job"):
        compiled_parts("L2", {}, RunState(rank=1), "/d", checker, on_exhausted=lambda: None, summary=None)
    parts = compiled_parts("L1", {}, RunState(rank=1), "/d", checker, on_exhausted=lambda: None, summary=None)
    assert parts.jit is None and parts.graph is None


def test_scratch_folders_of_processes_that_ended_are_removed(tmp_path, monkeypatch):
    """A process killed before exit leaves its scratch dump folder; the
    next one removes it, never one whose process still runs."""
    import subprocess

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{dump_config.SCRATCH_PREFIX}{ended.stdout.strip()}_abc"
    alive = tmp_path / f"{dump_config.SCRATCH_PREFIX}{os.getpid()}_def"
    other = tmp_path / "probe_l2_notapid"
    for folder in (dead, alive, other):
        folder.mkdir()
    monkeypatch.setattr(dump_config.tempfile, "gettempdir", lambda: str(tmp_path))
    made = Path(dump_config.scratch_folder())
    assert not dead.exists() and alive.exists() and other.exists()
    assert made.name.startswith(f"{dump_config.SCRATCH_PREFIX}{os.getpid()}_")
