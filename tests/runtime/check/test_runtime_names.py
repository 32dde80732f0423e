"""Names of MSAdapter-layer tensors (probe_runtime.check.names), without
MindSpore: a stand-in ``torch`` whose Modules the garbage collector holds."""
from __future__ import annotations

import sys
import types

import pytest

from probe_runtime.check import names


class Tensor:
    """A tensor of no framework: weakly referable, with a UUID-like name."""

    def __init__(self, name: str) -> None:
        self.name = name


class Module:
    def __init__(self, **params: Tensor) -> None:
        self.params = params

    def modules(self):
        return [self]

    def named_parameters(self):
        return list(self.params.items())

    def named_buffers(self):
        return []


@pytest.fixture
def layer(monkeypatch):
    """A stand-in ``torch`` in ``sys.modules`` and a count of the walks."""
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(nn=types.SimpleNamespace(Module=Module)))
    monkeypatch.setattr(names, "_NAMES", {})
    monkeypatch.setattr(names, "_last_walk", None)
    walks = []
    real = names.gc.get_objects

    def counted():
        walks.append(1)
        return real()

    monkeypatch.setattr(names.gc, "get_objects", counted)
    return walks


def test_a_tensor_of_a_live_module_gets_its_dotted_name(layer):
    weight = Tensor("7f7630af-uuid")
    model = Module(**{"0.weight": weight})
    assert names.parameter_name(weight, search=True) == "0.weight"
    assert model.params  # alive until here


def test_tensors_no_module_holds_cost_one_walk_per_interval(layer, monkeypatch):
    """A reviewer's finding: each standalone tensor a record named walked
    every object again (60 of them: 9 s in a process of a million objects)."""
    loose = [Tensor(f"uuid-{i}") for i in range(20)]
    assert [names.parameter_name(t, search=True) for t in loose] == [t.name for t in loose]
    assert len(layer) == 1
    monkeypatch.setattr(names, "_last_walk", names.time.monotonic() - names.WALK_INTERVAL - 1)
    late = Tensor("uuid-late")
    model = Module(**{"fc.weight": late})
    assert names.parameter_name(late, search=True) == "fc.weight"
    assert len(layer) == 2 and model.params


def test_a_dead_weak_proxy_among_the_objects_does_not_stop_the_walk(layer):
    """Found by the suite: isinstance() on a weakref.proxy whose object is
    gone raises ReferenceError; the walk then named nothing."""
    import weakref

    class Gone:
        pass

    holder = [weakref.proxy(Gone())]  # dead at once; the list keeps the proxy where gc.get_objects() finds it
    weight = Tensor("uuid-w")
    model = Module(**{"0.weight": weight})
    assert names.parameter_name(weight, search=True) == "0.weight"
    assert holder and model.params
