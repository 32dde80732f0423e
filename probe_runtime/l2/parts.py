"""The compiled-code parts a debugger gets, built for its level: L2's
checks of compiled steps (:mod:`.graph`) on the CPU backend, or on
Ascend the dump config msprobe 8.1.2 writes; at L1/L0 on the CPU backend
the check inside ``mindspore.jit`` regions (:mod:`.jit`). The facade
calls :class:`CompiledParts` at ``start()``, ``stop()``, ``step()`` and
when it removes its patches.

Example::

    parts = compiled_parts("L2", config, state, "/abs/dump", checker, on_exhausted=unpatch, summary=summary)
    parts.open()      # start(): True when the L2 window opened
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Optional

from ..state import RunState

LOGGER = logging.getLogger("probe_runtime")
#: ``0`` turns off the check inside ``mindspore.jit`` regions at L1/L0, ``1`` turns it on in a distributed
#: process too (by default: on in a single process on the CPU backend)
JIT_VARIABLE = "PROBE_JIT_KERNELS"
#: why neither runs in a distributed process by default (measured on MindSpore 2.7.0 and 2.10.0, msrun, CPU)
DISTRIBUTED = ("MindSpore's CPU AllReduce fails while its dump config is set (\"RunRingAllReduce Memcpy error\", "
               "msrun on MindSpore 2.7.0 and 2.10.0)")


class CompiledParts:
    """What the debugger drives: ``graph`` (L2 on CPU, a ``GraphChecks``)
    or ``jit`` (L1/L0 on CPU, a ``JitRegions``), either or both None.

    Args:
        state: the current step (``graph``: opened only in a selected step).
        summary: the all-clear's counter (``windows.summary.Summary``), told of each L2 window.
    """

    def __init__(self, state: RunState, summary: Any, graph: Any = None, jit: Any = None) -> None:
        self.state, self.summary, self.graph, self.jit = state, summary, graph, jit

    def open(self) -> bool:
        """``start()``: open what there is; True when an L2 window opened
        (the step is selected and ``overflow_nums`` not reached)."""
        if self.jit is not None:
            self.jit.open()
        if self.graph is None or not self.state.selected():
            return False
        self.graph.open()
        self.summary.checked(self.state.step, exact=True)
        return True

    def close(self) -> None:
        """``stop()``; the all-clear is told how many ``mindspore.jit``
        region calls were checked."""
        for part in (self.graph, self.jit):
            if part is not None:
                part.close()
        if self.jit is not None:
            self.summary.jit_calls = self.jit.calls

    def new_step(self) -> None:
        """``step()``: region indices start again at 0."""
        if self.jit is not None:
            self.jit.new_step()

    def uninstall(self) -> None:
        """Remove the patches (at exit, once ``overflow_nums`` is reached)."""
        for part in (self.graph, self.jit):
            if part is not None:
                part.uninstall()


def compiled_parts(level: str, config: dict, state: RunState, dump_path: str, checker: Any, *,
                   on_exhausted: Callable[[], None], summary: Any) -> CompiledParts:
    """The parts for ``level`` in this process (see the module).

    Level L2 writes MindSpore's dump config here, so the debugger must be
    built before the first graph compiles.

    Neither L2 on CPU nor the check inside ``mindspore.jit`` regions
    runs in a distributed process (``state.rank`` set) by default:
    MindSpore's CPU AllReduce fails while its dump config is set.

    Raises:
        L2Unavailable: level L2 on CPU and this MindSpore lacks the private
            dump switch (a ``ValueError`` naming it and the release), the
            temporary folder's path holds a ``.`` (set ``TMPDIR``), or the
            process is one rank of a distributed job.
    """
    from ..hooks.frames import library_roots
    from . import dump_config
    from .private import L2Unavailable, dump_switch, jit_executor
    from .records import KernelRecords

    device = _device_target()
    parts = CompiledParts(state, summary)
    if level == "L2" and device == "ASCEND":
        ranks = sorted(state.ranks) if state.ranks is not None else None
        dump_config.install(dump_config.ascend_config(dump_path, rank=ranks,
                                                      check_mode=dump_config.check_mode_of(config)),
                            dump_path, dump_config.ASCEND_FILE)
    elif level == "L2":
        from .graph import GraphChecks

        if state.rank is not None:
            raise L2Unavailable(f"probe_runtime refuses to start: level L2 on the CPU backend does not run in a "
                                f"distributed job (this process is rank {state.rank}): {DISTRIBUTED}; check the step "
                                f"in one process (python train.py, no launcher), or use level L1 or L0 in PyNative "
                                f"mode, which run in every rank")
        switch = dump_switch()
        scratch = dump_config.process_scratch()
        switch.off()
        parts.graph = GraphChecks(state, KernelRecords(state, dump_path=dump_path), switch, scratch=scratch,
                                  library_roots=library_roots(), on_exhausted=on_exhausted,
                                  on_error=checker.on_error, on_note=summary.noted,
                                  on_unchecked=summary.not_seen, on_mask=summary.took_for_mask)
    elif os.environ.get(JIT_VARIABLE, "1" if state.rank is None else "0") != "0" and device == "CPU":
        from .jit import JitRegions

        try:
            jit_executor()
            switch = dump_switch()
            scratch = dump_config.process_scratch()
        except L2Unavailable as err:
            LOGGER.debug("probe_runtime: mindspore.jit regions are checked at their boundary only: %s", err)
            return parts
        switch.off()
        records = KernelRecords(state, dump_path=dump_path, level=level, writers=checker.records.writer)
        parts.jit = JitRegions(state, records, switch, scratch=scratch, library_roots=library_roots(),
                               on_error=checker.on_error, on_record=checker.overflow_recorded,
                               on_mask=checker.defer_region if level == "L1" else None)
    return parts


def _device_target() -> Optional[str]:
    """``mindspore.get_context("device_target")`` in capitals, or None when unknown."""
    try:
        import mindspore

        return str(mindspore.get_context("device_target")).upper()
    except Exception:  # pragma: no cover
        return None
