"""Attribute patches applied together and put back together.

:class:`Patches` is the handle of one group of patches (the L1 wrappers,
the optimizer watch, the sentinel's two wrappers): :meth:`Patches.apply`
sets ``(owner, attr, value)`` triples and remembers what each attribute
was, :meth:`Patches.remove` puts everything back in reverse order, deleting
what was inherited (:data:`MISSING`) instead of leaving a copy on the owner;
an attribute another tool set over ours in the meantime is left as that
tool set it (its patch is not undone by ours).
A module namespace is patched by swapping its class
(:func:`patched_module_class`) instead of writing every attribute.

Example::

    patches = Patches()
    patches.apply([(mindspore.ops, "exp", wrapper)])
    ...
    patches.remove()          # ops.exp is the original again; safe to call twice
"""
from __future__ import annotations

import types
from typing import Any, Callable, Iterable

#: what :class:`Patches` saves for an attribute that was inherited, not the owner's own
MISSING: Any = object()


class Plan:
    """A list of ``(owner, attr, value)`` patches prepared once for
    :meth:`Patches.apply`: runs of attributes of one module (a
    ``types.ModuleType`` instance, not ``__class__``) are grouped into one
    dictionary each, written with one ``dict.update`` of the module's
    namespace instead of one ``setattr`` apiece.

    Why: L1 writes about 600 ``pyboost_<op>`` globals of one MindSpore
    module at every ``start()`` and puts them back at ``stop()``; after a
    training step has evicted the CPU caches the Python loop over them cost
    about 1 ms a step, the C-level update a few microseconds
    (``docs/runtime-design.md``). A module's ``__setattr__`` is the plain
    dictionary write, so the result is the same.
    """

    def __init__(self, items: Iterable[tuple[Any, str, Any]]) -> None:
        self.items = list(items)
        steps: list[tuple[Any, Any, Any]] = []  # (owner, attr or None, value or {attr: value})
        for owner, attr, value in self.items:
            if attr != "__class__" and type(owner) is types.ModuleType:
                last = steps[-1] if steps else None
                if last is not None and last[0] is owner and last[1] is None and attr not in last[2]:
                    last[2][attr] = value
                else:
                    steps.append((owner, None, {attr: value}))
            else:
                steps.append((owner, attr, value))
        self.steps = steps

    def __len__(self) -> int:
        return len(self.items)


class Patches:
    """One group of attribute patches, removable as a whole (a handle, also
    a context manager that removes them on exit)."""

    def __init__(self) -> None:
        # (owner, attr, original or MISSING, ours), or (module, None, {attr: original or MISSING}, {attr: ours})
        # for a Plan's group
        self._saved: list[tuple[Any, Any, Any, Any]] = []
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return bool(self._saved)

    def apply(self, plan: "Iterable[tuple[Any, str, Any]] | Plan", *, skip_refused: bool = False) -> int:
        """Set each ``(owner, attr, value)`` of ``plan`` (a list, or a
        :class:`Plan` made once and applied at every ``start()``), in order;
        returns how many patches the group now holds. ``attr ==
        "__class__"`` swaps the owner's class (its original is
        ``type(owner)``).

        Raises:
            AttributeError, TypeError: an owner refuses the attribute (the
                patches set before it stay in the group); with
                ``skip_refused`` that attribute is left alone instead.
        """
        # L1 sets about 1,100 attributes at every start(): plain lookups
        # only (what a vars() per attribute cost: docs/runtime-design.md)
        steps = plan.steps if isinstance(plan, Plan) else [(o, a, v) for o, a, v in plan]
        append = self._saved.append
        missing = MISSING
        for owner, attr, value in steps:
            if attr is None:  # a Plan's group of one module's attributes
                namespace = owner.__dict__
                get = namespace.get
                append((owner, None, {name: get(name, missing) for name in value}, value))
                namespace.update(value)
                self._count += len(value)
                continue
            original = type(owner) if attr == "__class__" else owner.__dict__.get(attr, missing)
            try:
                setattr(owner, attr, value)
            except (AttributeError, TypeError):
                if skip_refused:
                    continue
                raise
            append((owner, attr, original, value))
            self._count += 1
        return self._count

    def remove(self) -> None:
        """Put every patched attribute back in reverse order; one that was
        inherited is deleted. An attribute that no longer holds what this
        group set (another tool patched it over ours since) is left alone:
        putting ours back would undo that tool's patch. Never raises (an
        owner may be gone at interpreter exit); safe to call twice."""
        saved, self._saved, self._count = self._saved, [], 0
        missing = MISSING
        for owner, attr, original, ours in reversed(saved):
            try:
                if attr is None:
                    namespace = owner.__dict__
                    get = namespace.get
                    for name, value in original.items():
                        if get(name, missing) is not ours[name]:
                            continue
                        if value is missing:
                            del namespace[name]
                        else:
                            namespace[name] = value
                elif attr == "__class__":
                    if type(owner) is ours:
                        owner.__class__ = original
                elif owner.__dict__.get(attr, missing) is not ours:
                    continue
                elif original is missing:
                    delattr(owner, attr)
                else:
                    setattr(owner, attr, original)
            except Exception:  # pragma: no cover - owner gone at exit
                pass

    def __enter__(self) -> "Patches":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def patched_module_class(base: type, table: dict[str, Callable]) -> type:
    """A subclass of the module type ``base`` whose attribute lookup returns
    ``table[name]`` (a wrapper) for the names in ``table``.

    Assigned to a module's ``__class__`` (and ``base`` assigned back to
    remove it), it patches a whole namespace such as ``mindspore.ops`` with
    two assignments. Everything that reads the attribute (``ops.exp``,
    ``from mindspore.ops import exp`` made while patched, ``getattr``) gets
    the wrapper, as with a patched ``__dict__``; the module's ``__dict__``
    itself is never changed. Module-level ``__getattr__`` fallbacks still
    work (the base lookup runs them).
    """
    base_lookup: Any = base.__getattribute__  # unbound: (module, name)
    get = table.get

    def __getattribute__(self: Any, name: str) -> Any:
        wrapper = get(name)
        if wrapper is not None:
            return wrapper
        return base_lookup(self, name)

    return type(f"Probe{base.__name__.capitalize()}", (base,), {"__getattribute__": __getattribute__})


def subclasses(root: type) -> list[type]:
    """``root`` and every class derived from it, each once, in depth-first
    order (``mindspore.ops.primitive.Primitive``: every Primitive class
    loaded so far)."""
    out: list[type] = []
    seen: set[type] = set()
    stack = [root]
    while stack:
        klass = stack.pop()
        if klass in seen:
            continue
        seen.add(klass)
        out.append(klass)
        stack.extend(klass.__subclasses__())
    return out
