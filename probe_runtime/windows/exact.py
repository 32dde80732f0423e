"""The exact-checks switch: the level's interception on, synchronous on CPU.

Exact checks run in exact windows and in the replays of auto checks. On
switches the execution to synchronous (``probe_runtime.execution``; on CPU
the hooks drain the asynchronous pipeline anyway) and installs level L1's
wrappers or level L0's Cell hooks on the model (plus, in a job of several
ranks, L0's collective interceptor); off removes what on put there.

Example::

    exact = ExactChecks("L1", interceptor=api, cells=cells, collectives=comm, sync=sync,
                        checker=checker, distributed=lambda: False)
    exact.open(model=None)
    ...                      # every API call checked
    exact.close()
"""
from __future__ import annotations

from typing import Any, Callable

from ..check.probes import launch_sum, probe_now
from ..check.verdict import HostCache
from ..hooks.guard import keep_training


class ExactChecks:
    """Turns exact checks on and off at one level.

    Args:
        level: ``"L0"`` or ``"L1"``.
        interceptor: L1's ``ApiInterceptor``.
        cells: L0's ``CellHooks``.
        collectives: the ``ApiInterceptor`` of collective calls L0 installs
            in a job of several ranks.
        sync: the ``SyncWindows`` that make a window synchronous.
        checker: the ``Checker`` (told whether the window is synchronous).
        distributed: returns True once MindSpore's communication is
            initialised (a job of several ranks).
    """

    def __init__(self, level: str, *, interceptor: Any, cells: Any, collectives: Any, sync: Any, checker: Any,
                 distributed: Callable[[], bool]) -> None:
        self.level = level
        self.interceptor, self.cells, self.collectives = interceptor, cells, collectives
        self.sync, self.checker, self.distributed = sync, checker, distributed

    @property
    def parts(self) -> tuple:
        """What :meth:`open` may install, in removal order."""
        return (self.interceptor, self.cells, self.collectives)

    def open(self, model: Any) -> None:
        """Exact checks on: synchronous on CPU, then the L1 wrappers, or
        the L0 hooks on ``model`` (and the collectives when distributed).

        Raises:
            Exception: what installing raises (the caller logs it and
                turns everything off again: the tool never breaks training).
        """
        self.sync.enter()
        active = self.sync.active
        self.interceptor.synchronous = self.cells.synchronous = active
        self.collectives.synchronous = self.checker.synchronous = active
        if self.level == "L0":
            self.cells.install(model)
            if self.distributed():
                self.collectives.install()
        else:
            self.interceptor.install()

    def close(self, park: bool = False) -> None:
        """Exact checks off: every part removed, the execution mode put
        back; a fault in one is logged and the others are still removed.
        ``park``: another exact window is expected (``stop()``, ``step()``):
        L1's patches stay in place, inert (``ApiInterceptor.park``), until
        :meth:`unpark` or the next :meth:`open`."""
        for part in self.parts:
            with keep_training(f"removing {type(part).__name__}"):
                if park and part is self.interceptor:
                    part.park()
                else:
                    part.uninstall()
        with keep_training("restoring the execution mode"):
            self.sync.leave()

    def unpark(self) -> None:
        """Remove L1's patches left in place by ``close(park=True)``: no
        exact window follows (a step outside the filter, a watched or
        sentinel window, an execution mode the level does not see)."""
        if self.interceptor.parked:
            with keep_training("removing ApiInterceptor"):
                self.interceptor.uninstall()

    def begin_sweep(self, model: Any) -> None:
        """L0, a window without the Cell hooks (auto checks' watched one):
        probe the state :meth:`written_state` reads when it closes (the
        exact window's ``install`` does so itself)."""
        if self.level == "L0" and model is not None:  # on the host on CPU: cheaper than a device sum there
            probe = probe_now if self.sync.enabled or self.sync.active else launch_sum
            self.cells.sweep.begin(model, self.cells.modules, probe)

    def written_state(self) -> list:
        """L0: ``(name, owner)`` of the state of the models given to
        ``start()`` that no Cell check reads and that went from finite to
        inf/nan in the window (``l0.state_sweep``); read once per window."""
        if self.level != "L0":
            return []
        return self.cells.sweep.changed(HostCache())

    def trainables_written(self) -> list:
        """L0: ``(name, owner)`` of the Cells' trainable Parameters that went
        from finite at ``start()`` to inf/nan in the window
        (``CellHooks.trainables_written``); [] at L1."""
        if self.level != "L0":
            return []
        return self.cells.trainables_written(HostCache())

    def forget_probes(self) -> None:
        """Parameters may change (an optimizer step, ``Parameter.set_data``):
        each part probes them again at their next use."""
        for part in self.parts:
            part.forget_probes()
