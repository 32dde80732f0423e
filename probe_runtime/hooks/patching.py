"""Attribute patches applied together and put back together.

:class:`Patches` is the handle of one group of patches (the L1 wrappers,
the optimizer watch, the sentinel's two wrappers): :meth:`Patches.apply`
sets ``(owner, attr, value)`` triples and remembers what each attribute
was, :meth:`Patches.remove` puts everything back in reverse order, deleting
what was inherited (:data:`MISSING`) instead of leaving a copy on the owner.
A module namespace is patched by swapping its class
(:func:`patched_module_class`) instead of writing every attribute.

Example::

    patches = Patches()
    patches.apply([(mindspore.ops, "exp", wrapper)])
    ...
    patches.remove()          # ops.exp is the original again; safe to call twice
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

#: what :class:`Patches` saves for an attribute that was inherited, not the owner's own
MISSING: Any = object()


class Patches:
    """One group of attribute patches, removable as a whole (a handle, also
    a context manager that removes them on exit)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []  # (owner, attr, original or MISSING)

    def __len__(self) -> int:
        return len(self._saved)

    def __bool__(self) -> bool:
        return bool(self._saved)

    def apply(self, plan: Iterable[tuple[Any, str, Any]], *, skip_refused: bool = False) -> int:
        """Set each ``(owner, attr, value)`` of ``plan``, in order; returns
        how many patches the group now holds. ``attr == "__class__"``
        swaps the owner's class (its original is ``type(owner)``).

        Raises:
            AttributeError, TypeError: an owner refuses the attribute (the
                patches set before it stay in the group); with
                ``skip_refused`` that attribute is left alone instead.
        """
        # L1 sets about 1,100 attributes at every start(): plain lookups
        # only (what a vars() per attribute cost: docs/runtime-design.md)
        append = self._saved.append
        missing = MISSING
        for owner, attr, value in plan:
            original = type(owner) if attr == "__class__" else owner.__dict__.get(attr, missing)
            try:
                setattr(owner, attr, value)
            except (AttributeError, TypeError):
                if skip_refused:
                    continue
                raise
            append((owner, attr, original))
        return len(self._saved)

    def remove(self) -> None:
        """Put every patched attribute back in reverse order; one that was
        inherited is deleted. Never raises (an owner may be gone at
        interpreter exit); safe to call twice."""
        saved, self._saved = self._saved, []
        for owner, attr, original in reversed(saved):
            try:
                if original is MISSING:
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
