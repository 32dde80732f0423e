"""``Patches`` with a prepared ``Plan``: a module's attributes are written
as one group and put back exactly, next to single attributes of classes."""
from __future__ import annotations

import types

from probe_runtime.hooks.patching import Patches, Plan


def test_a_plan_groups_a_modules_attributes_and_puts_them_back():
    module = types.ModuleType("fake_ops")
    module.exp = "exp"
    module.log = "log"

    class Owner:
        method = "method"

    plan = Plan([(module, "exp", "wrapped exp"), (module, "new", "added"), (Owner, "method", "wrapped method"),
                 (module, "log", "wrapped log")])
    assert len(plan) == 4
    assert [step[1] for step in plan.steps] == [None, "method", None]  # two module groups around the class
    patches = Patches()
    assert patches.apply(plan) == 4 and len(patches) == 4
    assert (module.exp, module.new, module.log, Owner.method) == ("wrapped exp", "added", "wrapped log",
                                                                  "wrapped method")
    patches.remove()
    assert (module.exp, module.log, Owner.method) == ("exp", "log", "method")
    assert not hasattr(module, "new") and not patches and len(patches) == 0
    patches.remove()  # twice is harmless
    assert module.exp == "exp"


def test_a_plan_applied_again_saves_what_is_there_then():
    module = types.ModuleType("fake_ops")
    module.exp = "exp"
    plan = Plan([(module, "exp", "wrapped")])
    patches = Patches()
    patches.apply(plan)
    patches.remove()
    module.exp = "someone else's"
    patches.apply(plan)
    assert module.exp == "wrapped"
    patches.remove()
    assert module.exp == "someone else's"


def test_the_same_attribute_twice_keeps_the_order():
    module = types.ModuleType("fake_ops")
    module.exp = "exp"
    patches = Patches()
    patches.apply(Plan([(module, "exp", "first"), (module, "exp", "second")]))
    assert module.exp == "second"
    patches.remove()
    assert module.exp == "exp"


def test_a_patch_another_tool_made_over_ours_is_left_in_place():
    module = types.ModuleType("fake_ops")
    module.exp = "exp"

    class Owner:
        method = "method"

    class Base:
        pass

    class Swapped(Base):
        pass

    instance = Base()
    patches = Patches()
    patches.apply(Plan([(module, "exp", "ours"), (Owner, "method", "ours"), (instance, "__class__", Swapped)]))
    module.exp, Owner.method = "theirs", "theirs"  # another tool wraps what it finds: ours
    instance.__class__ = Base  # and someone put the class back already
    patches.remove()
    assert (module.exp, Owner.method, type(instance)) == ("theirs", "theirs", Base)
    patches.apply(Plan([(module, "exp", "ours again")]))
    patches.remove()
    assert module.exp == "theirs"  # what was there when the group was applied


def test_cell_calls_does_not_undo_a_patch_made_while_armed():
    nn = __import__("pytest").importorskip("mindspore").nn
    from probe_runtime.windows.activity import CellCalls

    mindspores = nn.Cell.__dict__["__call__"]
    seen = []

    calls = CellCalls()
    calls.arm()
    ours = nn.Cell.__dict__["__call__"]
    assert ours is not mindspores

    def theirs(cell, *args, **kwargs):  # another tool's wrapper over whatever it found
        seen.append(type(cell).__name__)
        return ours(cell, *args, **kwargs)

    nn.Cell.__call__ = theirs
    try:
        nn.ReLU()(__import__("mindspore").Tensor([1.0]))
        assert calls.seen and seen == ["ReLU"]
        assert nn.Cell.__dict__["__call__"] is theirs  # the first call put nothing back over it
        calls.disarm()
        assert nn.Cell.__dict__["__call__"] is theirs
    finally:
        nn.Cell.__call__ = mindspores
