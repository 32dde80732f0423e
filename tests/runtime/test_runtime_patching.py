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
