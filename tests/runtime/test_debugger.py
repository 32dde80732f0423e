"""PrecisionDebugger keeps msprobe's public surface (issue 32): the facade
wires parts; it does not grow a public method msprobe users do not know.
Introspection only: no MindSpore needed."""
from __future__ import annotations

import inspect

from probe_runtime import PrecisionDebugger

#: msprobe 8.x ``msprobe.mindspore.PrecisionDebugger`` methods a PyNative
#: overflow check uses, plus ``finish`` (what interpreter exit runs)
MSPROBE_METHODS = {"start", "stop", "step", "set_init_step"}
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
