"""PrecisionDebugger keeps msprobe's public surface (issue 32): the facade
wires parts; it does not grow a public method msprobe users do not know.
Introspection, then (MindSpore needed) msprobe's one debugger per process:
built again it is the same one, and its methods work on the class."""
from __future__ import annotations

import inspect
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from probe_runtime import PrecisionDebugger
from runtime_support import isolate, write_runtime_config

#: msprobe 8.x ``msprobe.mindspore.PrecisionDebugger`` methods a PyNative
#: overflow check uses (``forward_backward_dump_end``: msprobe's older name of
#: ``stop``, documented for MindSpore in 8.1.2), plus ``finish`` (what
#: interpreter exit runs)
MSPROBE_METHODS = {"start", "stop", "step", "set_init_step", "forward_backward_dump_end"}
OWN_METHODS = {"finish"}
#: read-only views kept for tests and users: the mode in force, the open window's kind
OWN_PROPERTIES = {"checks", "window"}


def test_the_public_methods_are_msprobes():
    public = {name for name, value in vars(PrecisionDebugger).items()
              if not name.startswith("_") and callable(value)}
    assert public == MSPROBE_METHODS | OWN_METHODS


def test_the_public_properties_are_few():
    properties = {name for name, value in vars(PrecisionDebugger).items() if isinstance(value, property)}
    assert properties == OWN_PROPERTIES


def test_the_constructor_has_msprobes_arguments_then_checks():
    params = list(inspect.signature(PrecisionDebugger.__init__).parameters.values())[1:]
    assert [p.name for p in params] == ["config_path", "task", "dump_path", "level", "step", "checks"]
    assert all(p.default is None for p in params)
    assert params[-1].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_facade_stays_thin():
    lines = inspect.getsource(PrecisionDebugger).count("\n")
    assert lines < 200, f"PrecisionDebugger is {lines} lines: window logic belongs in probe_runtime.windows"


# -- msprobe's classmethods and its one instance (msprobe/core/debugger/precision_debugger.py:
# -- BasePrecisionDebugger.__new__ returns cls._instance, __init__ returns when initialized; start,
# -- stop, step, set_init_step, forward_backward_dump_end are classmethods acting on cls._instance)
def test_every_public_method_is_callable_on_the_class_as_msprobes_classmethods():
    for name in MSPROBE_METHODS | OWN_METHODS:
        params = list(inspect.signature(getattr(PrecisionDebugger, name)).parameters)
        assert params[:1] != ["self"], (name, params)
    assert list(inspect.signature(PrecisionDebugger.start).parameters) == ["model"]


def test_a_class_level_call_before_any_debugger_says_so():
    """msprobe raises Exception("PrecisionDebugger instance is not created.")
    (its forward_backward_dump_end an AttributeError on None): a clear
    UsageError here, in a fresh process (this one has debuggers)."""
    code = ("from probe_runtime import PrecisionDebugger, UsageError\n"
            "for name, args in (('start', ()), ('stop', ()), ('step', ()), ('set_init_step', (1,)),\n"
            "                   ('forward_backward_dump_end', ()), ('finish', ())):\n"
            "    try:\n"
            "        getattr(PrecisionDebugger, name)(*args)\n"
            "    except UsageError as err:\n"
            "        print(name, err)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=str(Path(__file__).resolve().parents[2]))
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 6, (proc.stdout, proc.stderr)
    for line in lines:
        name = line.split()[0]
        assert f"PrecisionDebugger.{name}() acts on the debugger of this process, and none was built" in line
        assert "PrecisionDebugger instance is not created" in line and "PrecisionDebugger(config_path=" in line


@pytest.fixture
def built(tmp_path, monkeypatch):
    """(tmp_path, build): ``build(**kwargs)`` is ``PrecisionDebugger(**kwargs)``; each is stopped afterwards."""
    ms = pytest.importorskip("mindspore")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    isolate(monkeypatch, tmp_path)
    made = []

    def build(*args, **kwargs):
        debugger = PrecisionDebugger(*args, **kwargs)
        made.append(debugger)
        return debugger

    yield tmp_path, build
    for debugger in made:
        debugger.stop()
        debugger.windows.summary.said = True  # no "no overflow found" line at interpreter exit


def exp_of(value):
    import numpy as np
    from mindspore import Tensor, ops

    return ops.exp(Tensor(np.array([value], np.float32)))  # exp(100) = inf in float32


def names(dump: Path, step: int) -> list:
    from probe_runtime.dump.writer import read_json

    index = dump / f"step{step}" / "rank" / "overflow.json"
    return [r["name"] for r in read_json(str(index))] if index.exists() else []


@pytest.mark.mindspore
def test_start_stop_step_on_the_class_act_on_the_debugger(built):
    """msprobe's docs: "debugger.start() or PrecisionDebugger.start()"."""
    tmp_path, build = built
    debugger = build(config_path=str(write_runtime_config(tmp_path)))
    for value in (1.0, 100.0):
        PrecisionDebugger.start()
        assert debugger.window == "exact"
        exp_of(value)
        PrecisionDebugger.stop()
        assert debugger.window is None
        PrecisionDebugger.step()
    assert debugger.state.step == 2
    assert names(tmp_path / "dump", 0) == [] and names(tmp_path / "dump", 1) == ["Functional.exp.0.forward"]
    PrecisionDebugger.set_init_step(7)
    assert debugger.state.step == 7
    PrecisionDebugger.start()
    PrecisionDebugger.forward_backward_dump_end()  # msprobe: instance.stop()
    assert debugger.window is None
    debugger.start()
    debugger.forward_backward_dump_end()
    assert debugger.window is None
    # on a debugger, the methods are its plain bound methods, as before
    assert inspect.ismethod(debugger.start) and debugger.start.__self__ is debugger
    with pytest.raises(ValueError):
        PrecisionDebugger.set_init_step(-1)  # the method's own checks, as on the debugger


@pytest.mark.mindspore
def test_built_again_with_the_same_arguments_it_is_the_same_debugger(built, monkeypatch):
    """A get_debugger() helper calling PrecisionDebugger(config_path=...)
    again: msprobe returns its instance, not initialised again. Before, a
    second debugger was built (its stop()/step() missed the first's window,
    the first's record landed in the wrong step) and, once the first had
    written, refused with PL407, ending the job."""
    tmp_path, build = built
    config = str(write_runtime_config(tmp_path, nums=3))
    debugger = build(config_path=config)

    def get_debugger():
        return build(config_path=config)

    for value in (1.0, 10.0, 100.0):
        debugger.start()
        exp_of(value)
        get_debugger().stop()
        get_debugger().step()
    assert debugger.state.step == 3 and debugger.window is None
    assert [names(tmp_path / "dump", step) for step in range(3)] == [[], [], ["Functional.exp.0.forward"]]
    debugger.set_init_step(5)
    assert get_debugger() is debugger and debugger.state.step == 5  # not initialised again
    assert build(config) is debugger  # positional: the same call
    monkeypatch.setenv("PROBE_CONFIG", config)
    assert build() is debugger  # PROBE_CONFIG is what no config_path means
    # the same config in effect, spelled otherwise (a reviewer's finding: refused as PL407 once it had written)
    assert build(config_path=config, level="L1", dump_path=str(tmp_path / "dump")) is debugger


@pytest.mark.mindspore
def test_other_arguments_build_another_debugger_and_say_so(built, caplog):
    """msprobe ignores the arguments of a later call; here (a process may run
    debuggers of different configs: the tests do) it builds another, which
    the class-level calls then act on, and a warning says so when both
    write one dump_path. A finished debugger (finish(): what exit runs) is
    never returned again."""
    tmp_path, build = built
    first = build(config_path=str(write_runtime_config(tmp_path)))
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        second = build(config_path=str(write_runtime_config(tmp_path, nums=5)))  # the file changed
    assert second is not first and second.state.overflow_nums == 5
    (warning,) = [r.getMessage() for r in caplog.records if "called again" in r.getMessage()]
    assert "msprobe would return the first and ignore them" in warning and str(tmp_path / "dump") in warning
    PrecisionDebugger.set_init_step(3)
    assert (second.state.step, first.state.step) == (3, 0)
    assert build(config_path=str(tmp_path / "config.json")) is second
    assert build(config_path=str(tmp_path / "config.json"), checks="sentinel") is not second
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="probe_runtime"):
        other = build(config_path=str(write_runtime_config(tmp_path, dump=tmp_path / "other")))
    assert other.dump_path == str(tmp_path / "other") and PrecisionDebugger.stop.__name__ == "stop"
    assert not [r for r in caplog.records if "called again" in r.getMessage()]  # its own dump_path: said nothing
    PrecisionDebugger.set_init_step(4)
    assert (other.state.step, second.state.step) == (4, 3)
    other.finish()
    assert build(config_path=str(tmp_path / "config.json")) is not other
