"""L0: in-place writes to tensors resolve the pending checks first.

Level L0 checks what each Cell takes and returns, but reads those tensors
later, at the checker's resolution points (``check.queue``). A write into
one of them in between, made by code between the Cells (a parent's
``construct`` doing ``h[h > 1e30] = 0``, a loop cleaning the gradients with
``g[~isfinite(g)] = 0`` before the optimizer, or numpy writing through
``asnumpy()``), changed what the check then read: a fresh user's hunt got
an all-clear for a Cell whose output was +inf, a sub-Cell blamed for the
inf its parent wrote into its output, and a gradient that overflowed
called "outside the checked Cells".

L1 intercepts these methods with the rest of the API. L0 wraps only them,
while a window is open: every Tensor method that writes the tensor in
place (``__setitem__``, ``copy_``, ``add_`` ..., ``__iadd__`` ...,
``set_data``, ``assign_value``) and ``asnumpy``, whose array shares the
tensor's memory. Each resolves what may see that memory before it runs
(:func:`~probe_runtime.hooks.guard.mutation_wrapper`); nothing is recorded
for the write itself. Writes by functions (``ops.assign``) and by kernels
inside a Cell are not seen here; the latter happen inside the Cell's call,
before its output is queued.

Example::

    guard = MutationGuard(checker)
    guard.install()      # at the window's start, with the Cell hooks
    ...
    guard.uninstall()    # at its end
"""
from __future__ import annotations

from typing import Any

from ..hooks.guard import mutation_wrapper
from ..hooks.patching import Patches, Plan
from ..hooks.tensor_names import in_place_methods


class MutationGuard:
    """The L0 wrappers of :func:`in_place_methods` on ``mindspore.Tensor``.

    Args:
        sink: the checker (``live``, ``before_mutation(tensors)``,
            ``on_error(where, err)``).
    """

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self._plan: Any = None
        self._patches = Patches()

    @property
    def installed(self) -> bool:
        """True while the wrappers are in place."""
        return bool(self._patches)

    def install(self) -> int:
        """Wrap the methods (built once, applied at every window); returns
        how many are wrapped. Safe to call twice."""
        if self.installed:
            return len(self._patches)
        if self._plan is None:
            import mindspore

            tensor_cls = mindspore.Tensor
            self._plan = Plan((tensor_cls, attr, mutation_wrapper(self.sink, getattr(tensor_cls, attr)))
                              for attr in in_place_methods(tensor_cls))
        return self._patches.apply(self._plan, skip_refused=True)

    def uninstall(self) -> None:
        """Put the original methods back; safe to call twice."""
        self._patches.remove()
