"""Kernel records: what :mod:`.scan` found in a replayed step, written in
msprobe's layout (``step{N}/rank{R}/dump.json``, ``overflow.json``,
``dump_tensor_data/*.npy``).

Each kernel that held inf/nan gets a dump.json entry named as msprobe's
kernel dumps name kernels, ``<Op>.<full name with scope>``
(``Exp.Default/network-WithLossCell/_backbone-Net/Exp-op0``), with the
statistics of its inputs and outputs and a ``kernel`` object (``type``,
``scope``: the Cell scope, ``graph``: the graph id), and an
``overflow.json`` record (``origin`` as at L1, ``where`` the user's
``file:line`` or null, kind ``backward`` for a kernel of the gradient
computation (:attr:`~.scan.Kernel.backward`), else ``forward``). Only the origin's tensors are saved as ``.npy``; at
most :data:`MAX_CARRIED` carried kernels are recorded per replay (the
rest are counted in the log).

Example::

    writer = KernelRecords(state, dump_path="/abs/dump", level="L2")
    writer.write(kernels, inside=None)    # the records of the current step, on disk
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np

from probe_format.layout import (BACKWARD, FORWARD, INPUT, INPUT_ARGS, INPUT_KWARGS, MESSAGE, OUTPUT,
                                 SOURCE_OUTSIDE)
from probe_format.records import call_record, entered_object, note_record

from ..check.verdict import HostTensor, statistics
from ..dump.writer import Record, StepWriter
from ..state import RunState
from .scan import WRITTEN_SLOTS, Kernel, all_finite

LOGGER = logging.getLogger("probe_runtime")
#: carried kernels recorded per replay, after the origin
MAX_CARRIED = 16
_DTYPE_NAMES = {"float16": "Float16", "float32": "Float32", "float64": "Float64", "int8": "Int8", "int16": "Int16",
                "int32": "Int32", "int64": "Int64", "uint8": "UInt8", "bool": "Bool"}


def _describe(array: np.ndarray, data_name: Optional[str]) -> dict:
    dtype = _DTYPE_NAMES.get(array.dtype.name, array.dtype.name)
    item: dict = {"type": "mindspore.Tensor", "dtype": dtype, "shape": list(array.shape)}
    item.update(statistics(HostTensor(dtype, tuple(array.shape), array)))
    if data_name is not None:
        item["data_name"] = data_name
    return item


def file_part(name: str) -> str:
    """A kernel's name as part of a file name: ``/`` as ``_``."""
    return name.replace("/", "_")


def kernel_record(kernel: Kernel, *, with_data: bool) -> Record:
    """The :class:`~probe_runtime.dump.writer.Record` of one kernel (its
    ``.npy`` files when ``with_data``)."""
    arrays: dict[str, np.ndarray] = {}

    def side(values: dict[int, np.ndarray], label: str) -> list:
        described = []
        for slot in sorted(values):
            data_name = f"{file_part(kernel.name)}.{label}.{slot}.npy" if with_data else None
            if data_name is not None:
                arrays[data_name] = values[slot]
            described.append(_describe(values[slot], data_name))
        return described

    entry: dict
    if kernel.backward:
        entry = {INPUT: side(kernel.inputs, "input"), OUTPUT: side(kernel.outputs, "output")}
    else:
        entry = {INPUT_ARGS: side(kernel.inputs, "input"), INPUT_KWARGS: {}, OUTPUT: side(kernel.outputs, "output")}
    entry["kernel"] = {"type": kernel.op, "scope": kernel.scope, "graph": kernel.graph}
    if kernel.runs > 1:  # a kernel in a graph loop: the run recorded, of how many, how many held inf/nan
        entry["kernel"].update(run=kernel.run, runs=kernel.runs, nonfinite_runs=kernel.nonfinite_runs)
    if not kernel.inputs_known:
        entry["kernel"]["inputs_not_dumped"] = "all" if kernel.unread is None else list(kernel.unread)
    return Record(name=kernel.name, origin=kernel.origin, where=kernel.where, entry=entry, arrays=arrays)


def kernel_message(kernel: Kernel, origin: Optional[Kernel] = None) -> Optional[str]:
    """What a kernel's record says beyond its name, or None: which run of
    a kernel in a graph loop it is, and the inputs MindSpore did not write
    (then whether it started the overflow may not be known). ``origin``:
    the step's origin, when one is named (a carried kernel after it then
    says its inputs not dumped may have brought that overflow, not that
    where it started is not known)."""
    said = []
    if kernel.float16_overflow:
        said.append("its float16 output was dumped as the float32 values the CPU computed it in; float16 cannot hold "
                    "those above 65504: inf in the step's result")
    if kernel.inplace:
        known = WRITTEN_SLOTS.get(kernel.op)
        updated = "the inputs it updates" if known is None else \
            "input" + ("s " if len(known[1]) > 1 else " ") + ", ".join(map(str, known[1]))
        said.append(f"it updates {updated} in place, and MindSpore dumps such a kernel after it ran: their "
                    "statistics are the values it left")
    if kernel.runs > 1:
        said.append(f"run {kernel.run + 1} of {kernel.runs} of this kernel (a graph loop); "
                    f"{kernel.nonfinite_runs} of them held inf/nan")
    if not kernel.inputs_known:
        unread = f"MindSpore did not dump {kernel.unread_text()} (a value carried around a graph loop, or not a tensor)"
        if kernel.origin:
            said.append(f"{unread}: taken as finite, nothing before this kernel held inf/nan")
        elif all(all_finite(a) for a in kernel.inputs.values()) and not kernel.inplace:
            if origin is None:
                said.append(f"{unread}: whether they held inf/nan is not known, so where the overflow started is not "
                            "known")
            elif origin.stamp < kernel.stamp:
                said.append(f"{unread}: it may have taken the inf/nan from the kernels before it")
            else:
                said.append(f"{unread}: whether they held inf/nan is not known")
    return "; ".join(said) or None


class KernelRecords:
    """Writes the kernel records of a debugger, one
    :class:`~probe_runtime.dump.writer.StepWriter` per step.

    Args:
        state: the current step, this rank, ``overflow_nums``.
        dump_path: absolute dump folder.
        level: for dump.json's header (``L2``).
        writers: the step writers to write with (a ``@jit`` region's
            kernels at L1/L0 go into that level's folder); None: its own.
    """

    def __init__(self, state: RunState, *, dump_path: str, level: str = "L2",
                 writers: Optional[Callable[[int], StepWriter]] = None) -> None:
        self.state = state
        self.dump_path = dump_path
        self.level = level
        self._writers: dict[int, StepWriter] = {}
        self._shared = writers

    def writer(self, step: int) -> StepWriter:
        """The writer of ``step`` for this rank (``writers``' when given:
        at L1/L0 the level's own, so one dump.json holds both)."""
        if self._shared is not None:
            return self._shared(step)
        writer = self._writers.get(step)
        if writer is None:
            writer = StepWriter(self.dump_path, step, self.state.rank_dir, task="overflow_check", level=self.level)
            self._writers[step] = writer
        return writer

    def write(self, kernels: list[Kernel], *, inside: Optional[str] = None,
              entered: Optional[tuple[str, str]] = None, entered_at: Optional[Kernel] = None) -> int:
        """Write the records of ``kernels`` (as :func:`~.scan.scan` returns
        them) into the current step: the first origin (with its ``.npy``), then
        in the order they ran at most :data:`MAX_CARRIED` other origins and as
        many carried ones, no more than ``overflow_nums``
        leaves room for (the caller has counted the first); ``inside``: the enclosing
        region's entry name (a ``@jit`` region at L1/L0); ``entered``:
        (which input, what it says) when the step's arguments held inf/nan
        on entry: the first carried kernel's record (``entered_at``'s,
        when given: the kernel that took a -inf mask given to the step)
        gets an ``entered`` object (source ``outside``) saying so, which
        ``probe report`` names. Returns how many were written.

        Raises:
            WriterError, OSError: the dump cannot be written.
        """
        step, writer = self.state.step, self.writer(self.state.step)
        origins = [k for k in kernels if k.origin]
        # the first origin first; then, in the order they ran, the other origins (an independent overflow later
        # in the step: a hunt found it dropped without a trace) and the carried kernels, at most MAX_CARRIED each
        carried = [k for k in kernels if not k.origin]
        later = set(map(id, origins[1:MAX_CARRIED + 1])) | set(map(id, carried[:MAX_CARRIED]))
        chosen = origins[:1] + [k for k in kernels if id(k) in later]
        state = self.state
        if state.overflow_nums != -1:  # overflow_nums counts records, as at L1 (the caller counted this one)
            chosen = chosen[:max(1, state.overflow_nums - state.found + 1)]
            state.found += len(chosen) - 1
        for kernel in chosen:
            record = kernel_record(kernel, with_data=kernel.origin)
            if kernel.name in writer.data:  # the same kernel in another replay of this step
                record.name = f"{kernel.name}.{sum(1 for n in writer.data if n.startswith(kernel.name))}"
            message = kernel_message(kernel, origins[0] if origins else None)
            came_in = None
            if entered is not None and carried and kernel is (entered_at or carried[0]):
                came_in = entered_object(record.name, input=entered[0], source=SOURCE_OUTSIDE, message=entered[1])
            writer.write(record, **call_record(record.name, origin=kernel.origin, where=kernel.where,
                                               kind=BACKWARD if kernel.backward else FORWARD, step=step,
                                               rank=self.state.rank, inside=inside, message=message,
                                               entered=came_in))
            LOGGER.warning("probe_runtime: step %s: overflow in kernel %s (%s) %s%s%s", step, record.name,
                           "origin" if kernel.origin else "carried",
                           f"at {kernel.where}" if kernel.where else "(file:line unknown)",
                           f" inside {inside}" if inside else "",
                           f": {'; '.join(m for m in (message, came_in and came_in[MESSAGE]) if m)}"
                           if message or came_in else "")
        if len(carried) > MAX_CARRIED:
            LOGGER.warning("probe_runtime: step %s: %d more kernels carried the inf/nan on (not recorded)", step,
                           len(carried) - MAX_CARRIED)
        return len(chosen)

    def note(self, kind: str, labels: list, where: Optional[str], message: str) -> None:
        """Write a record that names no kernel (``probe_format.records.note_record``).

        Raises:
            WriterError, OSError: the dump cannot be written.
        """
        step = self.state.step
        self.writer(step).note(note_record(kind, step=step, rank=self.state.rank, where=where, nonfinite=labels,
                                           message=message))
        LOGGER.warning("probe_runtime: %s: step %s: %s", kind, step, message)
