"""Turning a judged entry into a record and handing it to the step writers.

:class:`Recorder` describes an entry's tensors as dump.json does (dtype,
shape, Max/Min/Mean/Norm, the ``.npy`` file of each), adds its stack lines,
``where`` and, at L0, its construct.json links, and has the record written
(``dump.writer.StepWriter``) before returning; it also writes the records
that name no call (sentinel findings, an overflow outside the checked
calls, an optimizer update: :meth:`Recorder.note`). It judges nothing.

Example::

    recorder = Recorder(state, dump_path="/abs/dump", task="overflow_check", level="L1",
                        library_roots=library_roots(), on_error=log, turn_off=stop)
    recorder.write("forward", call, origin=True, cache=cache)
    # step0/rank/dump.json, stack.json, construct.json, overflow.json and the .npy files
"""
from __future__ import annotations

import logging
import re
from typing import Any, Callable, Optional

import numpy as np

from probe_format.collectives import received_message
from probe_format.layout import (COMMUNICATION, FORWARD, INPUT, INPUT_ARGS, INPUT_KWARGS, OUTPUT, PARAMETERS,
                                 PARAMETERS_GRAD, SENTINEL, STATS, WRITTEN_ENTRY)
from probe_format.records import call_record, note_record

from ..dump.writer import Record, StepWriter
from ..hooks.frames import stack_lines, user_where
from ..state import RunState
from .provenance import parameters_seen
from .verdict import HostCache, dtype_label, is_dtype, is_tensor, statistics

LOGGER = logging.getLogger("probe_runtime")

#: the ``message`` of the record of a forward call made while MindSpore ran a recomputed Cell's forward
#: pass again in the backward pass
RECOMPUTED_MESSAGE = ("recomputed in the backward pass (Cell.recompute()): MindSpore ran this code again for "
                      "values it did not keep; the forward pass's run of it is recorded before this one")


class Recorder:
    """Writes the records of one debugger, one :class:`StepWriter` per step.

    Args:
        state: the current step and this process's rank.
        dump_path: absolute dump folder.
        task, level, framework: for dump.json's header (``framework``:
            ``"mindspore"`` or ``"mindtorch"``, see ``dump.writer.StepWriter``).
        library_roots: folders whose frames are not the user's (``where``).
        on_error: called with (where, exception) for a fault in the
            statistics code (statistics are then left out for good).
        turn_off: called with a reason when a sentinel finding cannot be
            written.
    """

    def __init__(self, state: RunState, *, dump_path: str, task: str, level: str, library_roots: tuple[str, ...],
                 on_error: Callable[[str, BaseException], None], turn_off: Callable[[str], None],
                 framework: str = "mindspore") -> None:
        self.state = state
        self.framework = framework
        self.dump_path = dump_path
        self.task = task
        self.level = level
        self.library_roots = library_roots
        self.on_error = on_error
        self.turn_off = turn_off
        self._writers: dict[int, StepWriter] = {}
        self._stats_off = False
        #: keys added to every record written while set (auto checks: ``{"replay": "train.py:52"}``;
        #: keyword arguments of ``probe_format.records.call_record``)
        self.marks: dict = {}

    def writer(self, step: int) -> StepWriter:
        """The writer of ``step`` for this rank."""
        writer = self._writers.get(step)
        if writer is None:
            writer = StepWriter(self.dump_path, step, self.state.rank_dir, task=self.task, level=self.level,
                                framework=self.framework)
            self._writers[step] = writer
        return writer

    def write(self, kind: str, call: Any, origin: bool, cache: HostCache, entered: Optional[dict] = None,
              written: Optional[list] = None, *, collective: Optional[tuple[Any, bool]] = None) -> None:
        """Describe the ``kind`` entry (``forward``, ``backward``,
        ``parameters_grad``) of ``call`` and write its record (``entered``:
        where the step's first overflow came in, see
        :func:`~.provenance.entered`; ``written``: the names of the
        Parameters it wrote inf/nan into, see
        :func:`~.provenance.written_nonfinite`); on disk when it returns.
        A nested call (``call.inside``) gets ``inside`` in overflow.json; a
        call that may write Parameters (``call.written``) gets their values
        after the call under ``written`` in its dump.json entry.

        ``collective``: (its ``hooks.collectives.CollectiveCall``, whether
        this rank's local inputs were finite) for a collective call: the
        record gets the ``collective`` object and, when the inputs were
        finite, kind ``communication`` and a ``message``
        (``probe_format``).

        Raises:
            WriterError, OSError: the dump cannot be written.
        """
        arrays: dict = {}
        if kind == FORWARD:
            name = call.name
            outputs = call.output if isinstance(call.output, (tuple, list)) else (call.output,)
            entry = {
                INPUT_ARGS: [self._describe(a, f"{name}.input.{i}", cache, arrays) for i, a in enumerate(call.args)],
                INPUT_KWARGS: {k: self._describe(v, f"{name}.input.{k}", cache, arrays)
                               for k, v in call.kwargs.items()},
                OUTPUT: [self._describe(o, f"{name}.output.{i}", cache, arrays) for i, o in enumerate(outputs)],
            }
            parameters = parameters_seen(call)
            if parameters or hasattr(call, "ancestry"):  # an L0 Cell: msprobe writes "parameters": {} too
                entry[PARAMETERS] = {p: self._describe(v, f"{name}.parameters.{p}", cache, arrays)
                                       for p, v in parameters.items()}
            if getattr(call, "written", None):
                entry[WRITTEN_ENTRY] = {key: self._describe(after, f"{name}.written.{_file_part(key)}", cache, arrays)
                                        for key, _, after, _ in call.written}
            stack = stack_lines(call.frames)
        elif kind == PARAMETERS_GRAD:
            name = call.name
            entry = {p: [self._describe(g, f"{name}.{p}", cache, arrays)] for p, g in call.grads.items()}
            stack = None
        else:
            name = call.backward_name
            entry = {
                INPUT: [self._describe(g, f"{name}.input.{i}", cache, arrays) for i, g in enumerate(call.grad_outputs)],
                OUTPUT: [self._describe(g, f"{name}.output.{i}", cache, arrays)
                         for i, g in enumerate(call.grad_inputs)],
            }
            stack = None
        where = user_where(call.frames, self.library_roots)
        record = Record(name=name, origin=origin, where=where, entry=entry, stack=stack, arrays=arrays)
        if hasattr(call, "ancestry"):  # an L0 Cell entry: construct.json links up to the top Cell
            record.parent = call.parent_name(kind)
            record.construct = call.ancestry(kind)
        elif getattr(call, "parent", None) is not None:  # a call inside an L0 Cell (a collective)
            cell = call.parent
            record.parent = cell.name if kind == FORWARD else cell.backward_name
            record.construct = cell.ancestry(kind)
        mark = "origin" if origin else "carried"
        written_kind, described_call, message = kind, None, None
        if collective is not None:
            described, inputs_finite = collective
            described_call = described.as_record(kind, inputs_finite)
            if inputs_finite:
                mark = "received"
                written_kind = COMMUNICATION
                message = received_message(described.api, described.group,
                                           None if described.ranks is None else list(described.ranks))
        recomputed = kind == FORWARD and getattr(call, "recomputed", False)
        if recomputed and message is None:
            message = RECOMPUTED_MESSAGE
        inside = getattr(call, "inside", None)
        self.writer(call.step).write(record, **call_record(
            name, origin=origin, where=where, kind=written_kind, step=call.step, rank=self.state.rank,
            collective=described_call, message=message, entered=entered, inside=inside, written=written,
            **self.marks))
        notes = "".join([f" inside {inside}" if inside is not None else "",
                         f"; it wrote inf/nan into Parameter {', '.join(written)}" if written else "",
                         " (recomputed in the backward pass)" if recomputed else "",
                         " (found by a replay)" if self.marks else ""])
        LOGGER.warning("probe_runtime: step %s: overflow in %s (%s) at %s%s", call.step, name, mark, where, notes)

    def note_sentinel(self, found: dict) -> bool:
        """Write a sentinel finding (``grad_watch.GradWatch.resolve``) of the
        current step (see :meth:`note`); its message says that exact checks
        run from the next ``start()`` on."""
        labels = found["nonfinite"]
        where = user_where(found["frames"], self.library_roots)
        message = (f"inf/nan in {shown_labels(labels)}, returned by the gradient computation at {where}; sentinel "
                   f"checks name no call: exact {self.level} checks run from the next start() on")
        return self.note(SENTINEL, labels, where, message)

    def note(self, kind: str, labels: list, where: Optional[str], message: str) -> bool:
        """Write a record that names no call to the current step's
        ``overflow.json`` (``kind`` one of ``probe_format.layout.NOTE_KINDS``, also its
        ``name``; ``origin`` false; ``where``; ``nonfinite``: the labels of
        what held inf/nan; ``message``) and log it; False when it could not
        be written (detection is then turned off, as for a record). It has
        no dump.json entry and does not count towards ``overflow_nums``."""
        try:
            self.writer(self.state.step).note(note_record(kind, step=self.state.step, rank=self.state.rank,
                                                          where=where, nonfinite=labels, message=message))
        except Exception as err:
            self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
            return False
        LOGGER.warning("probe_runtime: %s: step %s: %s", kind, self.state.step, message)
        return True

    def where(self, frames: tuple) -> Optional[str]:
        """The user's ``file:line`` among ``frames``."""
        return user_where(frames, self.library_roots)

    def _describe(self, obj: Any, prefix: str, cache: HostCache, arrays: dict, depth: int = 0) -> Any:
        if is_tensor(obj):
            host = cache.get(obj)
            item: dict = {"type": "mindspore.Tensor", "dtype": host.dtype, "shape": list(host.shape)}
            item.update(self._statistics(host))
            if host.array is not None:
                data_name = f"{prefix}.npy"
                arrays[data_name] = host.array
                item["data_name"] = data_name
            return item
        if obj is None or depth > 4:
            return None
        if isinstance(obj, (bool, int, float, str)):
            return {"type": type(obj).__name__, "value": obj}
        if isinstance(obj, slice):
            parts = [p if isinstance(p, (int, type(None))) else None for p in (obj.start, obj.stop, obj.step)]
            return {"type": "slice", "value": parts}
        if isinstance(obj, np.generic):
            return {"type": type(obj).__name__, "value": obj.item()}
        if is_dtype(obj):  # as msprobe writes a dtype argument (a cast's target)
            return {"type": "mindspore.dtype", "value": dtype_label(obj)}
        if isinstance(obj, (list, tuple)):
            return [self._describe(v, f"{prefix}.{i}", cache, arrays, depth + 1) for i, v in enumerate(obj)]
        if isinstance(obj, dict):
            return {str(k): self._describe(v, f"{prefix}.{k}", cache, arrays, depth + 1) for k, v in obj.items()}
        return None

    def _statistics(self, host: Any) -> dict:
        """Max/Min/Mean/Norm; after a fault in the statistics code (logged
        once) every record gets None for them and detection goes on."""
        if not self._stats_off:
            try:
                return statistics(host)
            except Exception as err:
                self._stats_off = True
                self.on_error("in the statistics code (statistics are no longer computed; records are still "
                              "written)", err)
        return dict.fromkeys(STATS)


def shown_labels(labels: list, limit: int = 4) -> str:
    """``labels`` joined for a message, the first ``limit`` of them:
    ``"forward output 0, gradient of fc.weight and 3 more"``."""
    return ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def _file_part(key: str) -> str:
    """A ``written`` key as part of an ``.npy`` file name: ``input_args[4]`` -> ``input_args.4``."""
    return ".".join(part for part in re.split(r"[^\w]+", key) if part) or "value"
