"""Cheap signs that training code ran in a window no hook watches, and what
a gradient computation was asked for, read from MindSpore's own frames.

* :class:`CellCalls`: whether any ``mindspore.nn.Cell`` was called since it
  was armed. A watched or sentinel window installs no API wrapper and no
  Cell hook, so a forward-only step (an evaluation pass) leaves no count in
  it; :class:`~.controller.Windows` arms this in the windows ``step()``
  opens, to tell one that saw no training call before ``stop()`` or exit
  (dropped) from one that ran a forward pass (closed as any other). The
  first Cell call puts ``Cell.__call__`` back: one wrapper call per armed
  window, none after.
* :func:`asked_has_aux`: ``has_aux`` of the gradient computation whose
  forward pass is returning (the gradient watch learns it only with the
  gradients).

Example::

    calls = CellCalls()
    calls.arm()
    net(x)                  # calls.seen is True, Cell.__call__ is MindSpore's again
    calls.disarm()          # safe when already put back
"""
from __future__ import annotations

import sys
from typing import Any, Optional

from ..hooks.patching import Patches


class CellCalls:
    """Whether a Cell was called while armed (:attr:`seen`).

    Attributes:
        seen: a Cell was called since the last :meth:`arm` (kept after
            :meth:`disarm`, until the next :meth:`arm`).
    """

    def __init__(self) -> None:
        self.seen = False
        self._patches = Patches()

    def arm(self) -> None:
        """Forget what was seen and wrap ``nn.Cell.__call__`` until its first
        call (or :meth:`disarm`). Never raises: without the wrapper a Cell
        call is taken as seen (nothing is dropped that may have run)."""
        self.disarm()
        self.seen = False
        try:
            from mindspore import nn

            original = nn.Cell.__dict__["__call__"]
            patches = self._patches

            def noting_call(cell: Any, *args: Any, **kwargs: Any) -> Any:
                self.seen = True
                patches.remove()
                return original(cell, *args, **kwargs)

            patches.apply([(nn.Cell, "__call__", noting_call)])
        except Exception:  # pragma: no cover - another MindSpore layout
            self._patches.remove()
            self.seen = True

    def disarm(self) -> None:
        """Put ``nn.Cell.__call__`` back (a no-op once a call did); :attr:`seen` stays."""
        self._patches.remove()


#: the MindSpore classes whose instance runs a gradient computation's forward pass: ``GradOperation`` (its
#: ``has_aux`` is always False in PyNative) and ``_Grad`` (``grad``, ``value_and_grad``; its ``has_aux``)
_GRAD_CLASSES = ("_Grad", "GradOperation")


def asked_has_aux(frame: Any = None, depth: int = 12) -> Optional[bool]:
    """``has_aux`` of the gradient computation whose forward pass just
    returned, read from the MindSpore frames on the stack above ``frame``
    (default: the caller's): the ``_Grad`` or ``GradOperation`` object that
    runs it (2.10's ``grad_`` closure, 2.7's ``self``), or ``vjp``'s
    ``has_aux`` argument. None when no frame within ``depth`` says (the
    code path is not one of those)."""
    frame = frame if frame is not None else sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return None
        if str(frame.f_globals.get("__name__", "")).startswith("mindspore."):
            local = frame.f_locals
            value = local.get("has_aux")
            if isinstance(value, bool):
                return value
            for name in ("grad_", "self", "grad"):
                obj = local.get(name)
                if obj is not None and type(obj).__name__ in _GRAD_CLASSES:
                    aux = getattr(obj, "has_aux", False)
                    return aux if isinstance(aux, bool) else None
        frame = frame.f_back
    return None
