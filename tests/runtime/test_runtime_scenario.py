"""The MSAdapter scenario is detected as msprobe detects it, and a
torch-on-MindSpore layer probe_runtime cannot check is refused at
construction, never checked as plain MindSpore (issue #36).

These tests stand a fake layer in for ``torch`` (a module whose
``tensor()`` makes ``mindspore.Tensor``), so they run on a plain clone;
the real layer (mindnlp's mindtorch) is tested in its own environment by
tests/msadapter/.
"""
from __future__ import annotations

import sys
import types

import pytest

ms = pytest.importorskip("mindspore")

from probe_runtime import scenario  # noqa: E402
from probe_runtime.errors import ConfigLintError  # noqa: E402
from probe_runtime.gate import live_facts  # noqa: E402


def fake_torch(tmp_path, package: str, make):
    """A module named torch, living in ``<tmp>/<package>/__init__.py``,
    whose ``tensor(value)`` is ``make(value)``."""
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    module = types.ModuleType("torch")
    module.__file__ = str(folder / "__init__.py")
    module.tensor = make
    return module


@pytest.fixture
def as_torch(monkeypatch):
    """Put a module in sys.modules as torch; detection is decided again
    around the test."""
    def put(module):
        monkeypatch.setitem(sys.modules, "torch", module)
        return scenario.detect(refresh=True)

    yield put
    monkeypatch.undo()
    scenario.detect(refresh=True)


def test_plain_mindspore(as_torch, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    found = scenario.detect(refresh=True)
    assert found.framework == "mindspore" and found.problem("L1") is None and found.layer is None


def test_real_pytorch_beside_mindspore_leaves_the_scenario_mindspore(as_torch, tmp_path):
    found = as_torch(fake_torch(tmp_path, "torch", lambda v: [v]))
    assert found.framework == "mindspore"
    assert "PyTorch itself" in found.how


def test_torch_making_mindspore_tensors_is_msadapter(as_torch, tmp_path):
    found = as_torch(fake_torch(tmp_path, "otherlayer", lambda v: ms.Tensor(v)))
    assert found.framework == "msadapter"
    assert found.package == "otherlayer" and found.distribution is None
    assert "otherlayer" in found.layer and "torch.tensor(0.0) is a mindspore.Tensor" in found.how
    assert live_facts()["framework"].value == "msadapter"


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_an_unknown_layer_is_refused_at_construction(as_torch, tmp_path, level):
    from probe_runtime import PrecisionDebugger

    as_torch(fake_torch(tmp_path, "otherlayer", lambda v: ms.Tensor(v)))
    dump = tmp_path / "dump"
    with pytest.raises(ConfigLintError) as caught:
        PrecisionDebugger(task="overflow_check", dump_path=str(dump), level=level)
    message = str(caught.value)
    assert "PL205" in message and "PyTorch code runs on MindSpore" in message
    assert "otherlayer" in message and "no overflow found" in message
    assert not dump.exists()  # refused before anything was written


def test_the_refusal_stands_even_with_pl205_turned_off(as_torch, tmp_path, monkeypatch):
    from probe_runtime import PrecisionDebugger

    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nignore = ["PL205"]\n')
    monkeypatch.chdir(tmp_path)
    as_torch(fake_torch(tmp_path, "otherlayer", lambda v: ms.Tensor(v)))
    with pytest.raises(ConfigLintError, match="PyTorch code runs on MindSpore"):
        PrecisionDebugger(task="overflow_check", dump_path=str(tmp_path / "dump"), level="L1")


def test_a_known_layer_at_an_unchecked_level_says_which_levels():
    found = scenario.Scenario("msadapter", "mindtorch", "mindnlp", "0.5.1", "2.7.0", "how", ("L1",))
    assert found.problem("L1") is None
    assert "level L1 only, not L0" in found.problem("L0")
    assert found.layer == "mindtorch 0.5.1 (mindnlp) on MindSpore 2.7.0"


def test_a_layer_whose_tensor_fails_is_not_taken_for_pytorch(as_torch, tmp_path):
    def boom(value):
        raise RuntimeError("no")

    assert as_torch(fake_torch(tmp_path, "torch", boom)).framework == "mindspore"
    assert as_torch(fake_torch(tmp_path, "layer2", boom)).framework == "msadapter"


def test_a_layer_imported_after_the_debugger_is_refused_at_start(as_torch, tmp_path, monkeypatch):
    from probe_runtime import PrecisionDebugger
    from probe_runtime.errors import UsageError

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    scenario.detect(refresh=True)
    debugger = PrecisionDebugger(task="overflow_check", dump_path=str(tmp_path / "dump"), level="L1")
    try:
        as_torch(fake_torch(tmp_path, "otherlayer", lambda v: ms.Tensor(v)))
        with pytest.raises(UsageError, match="torch was imported after PrecisionDebugger was built"):
            debugger.start()
        assert debugger.window is None  # nothing was patched
    finally:
        debugger.finish()


def test_real_pytorch_imported_after_the_debugger_is_fine(as_torch, tmp_path, monkeypatch):
    from probe_runtime import PrecisionDebugger

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    scenario.detect(refresh=True)
    debugger = PrecisionDebugger(task="overflow_check", dump_path=str(tmp_path / "dump"), level="L1")
    try:
        as_torch(fake_torch(tmp_path, "torch", lambda v: [v]))
        debugger.start()
        debugger.stop()
    finally:
        debugger.finish()
