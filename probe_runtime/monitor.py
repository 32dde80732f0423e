"""Turns intercepted calls into overflow records: the pending-check queue.

The interception hands every call on at once, but reading a tensor's values
waits for the device (about 2 ms here against about 50 us per op), so calls
are not checked one by one. Each call (and, later, its backward) goes into
a pending queue holding references to its tensors; the queue is resolved in
one batch (one wait for the device, then numpy on the host):

* after the 1st, 3rd, 7th, 15th ... call of a ``start()`` window: the
  batch doubles from 1 up to ``batch_cap`` (64) calls, so an overflow early
  in a step is on disk at once and a long step pays about
  ``log2(batch_cap) + calls / batch_cap`` waits. With ``carry_batch``
  (what ``PrecisionDebugger`` uses, both levels) the batch size is not
  reset by ``start()`` but keeps growing over the run: a wait inside the
  forward pass stalls the device (a reset per step cost L1 about 1.3-1.8x
  in step time on the benchmark models), so from the first few steps on a
  step is resolved every ``batch_cap`` calls and at ``stop()``. The queue
  holds references to the tensors of at most ``batch_cap`` calls (inputs,
  outputs, and the gradients of those that ran backward), plus what waits
  for a backward pass;
* before an intercepted call that changes a tensor in place (``add_``,
  ``Assign`` and other side-effect primitives, ``set_data``,
  ``assign_value``, ``__setitem__``) when a pending entry refers to that
  tensor, so every entry is judged on the values it really saw (the
  in-place call's own inputs are copied on the device before it runs);
* at ``stop()``, ``step()`` and interpreter exit.

Backward entries are queued when their first gradient arrives and judged at
the next resolution point after their input gradients arrived (never inside
MindSpore's backward pass itself); a backward pass therefore lands on disk
at the next forward call, ``stop()`` or ``step()``.

L0 (Cell level, ``cells.py``) uses the same queue: a Cell's forward entry is
queued when its forward hook fires (inner Cells before their parents), its
backward entry when the gradients w.r.t. its inputs arrive (inner Cells
first again); backward entries that never get input gradients (a Cell fed
only with data) and have output gradients are judged at ``stop()``/
``step()``, after the rest, latest-started Cell first. Parameter gradients
(``<Cell>.parameters_grad``) are queued when the first one of the Cell
arrives. A Cell entry is an origin only when no Cell called inside it was
an origin in the same pass (forward or backward): the innermost Cell that
produced the overflow is the origin, its parents carry it. A
``parameters_grad`` entry is an origin when the gradients w.r.t. the Cell's
outputs were finite. A Cell forward entry whose output overflowed from
finite inputs is not an origin either when the Cell's own Parameters held
inf/nan at ``start()`` (a float32 sum per Parameter launched then, read only
in that case). Cell forward records also describe those Parameters
(``parameters``) with the values they hold when the entry is resolved
(after the optimizer step if that came first).

Backward entries (both levels) and ``parameters_grad`` entries are origins
only when, besides the rules above, the forward call they are computed from
had finite inputs and outputs (and, for a Cell, finite own Parameters at
``start()``): NaN weights give NaN gradients from a finite incoming
gradient, and that overflow is carried, not started. The forward entry's
verdict is kept on the call (``forward_finite``) when it is judged, so
this costs no extra read. At L0 the models given to ``start()`` are not
recorded but their calls are queued too (``on_top``): when an overflow
starts in their own ``construct`` and in no hooked Cell, the logger says so
once (see ``_top_overflow``).

Each record found is written (see ``writer.py``) before the call that
resolved the batch returns to the training script. After ``overflow_nums``
records nothing more is queued and ``on_exhausted`` removes the patches.
Errors inside the tool are logged once each on the ``probe_runtime`` logger;
a write failure, or too many errors, turns detection off; training goes on.
"""
from __future__ import annotations

import linecache
import logging
import os
from typing import Any, Callable, Optional

import numpy as np

from .interception import tool_section
from .detection import HostCache, is_tensor, iter_tensors, judge, statistics
from .state import RunState
from .writer import Record, StepWriter

LOGGER = logging.getLogger("probe_runtime")
MAX_ERRORS = 50


def _user_where(frames: tuple, library_roots: tuple[str, ...]) -> Optional[str]:
    for filename, line, _ in frames:
        if not filename.startswith(library_roots) and not filename.startswith("<frozen"):
            return f"{filename}:{line}"
    return f"{frames[0][0]}:{frames[0][1]}" if frames else None


def _stack_lines(frames: tuple) -> list[str]:
    lines = []
    for filename, line, function in frames:
        code = linecache.getline(filename, line).strip()
        lines.append(f"File {filename}, line {line}, in {function}, \n {code}")
    return lines


class Monitor:
    """Pending-check queue, detection and writing for one debugger.

    Args:
        state: step/rank/overflow_nums bookkeeping.
        dump_path: absolute dump folder.
        task, level: for dump.json's header.
        on_exhausted: called once detection stops for good (limit reached or
            turned off by errors); removes the patches.
        batch_cap: largest number of calls resolved in one batch.
        library_roots: folders whose frames are not the user's (``where``).
        carry_batch: keep the batch size from one window to the next.
    """

    def __init__(self, state: RunState, *, dump_path: str, task: str = "overflow_check", level: str = "L1",
                 on_exhausted: Callable[[], None] = lambda: None, batch_cap: int = 64,
                 library_roots: tuple[str, ...] = (), carry_batch: bool = False) -> None:
        self.state = state
        self.dump_path = dump_path
        self.task = task
        self.level = level
        self.on_exhausted = on_exhausted
        self.batch_cap = batch_cap
        self.library_roots = library_roots
        self.carry_batch = carry_batch
        self._windows = 0
        self.live = False
        self.disabled = False
        self.pending: list[tuple[str, Any]] = []
        self.awaiting: list[Any] = []  # L0 backward entries waiting for input gradients
        self._threshold = 1
        self._since = 0
        self._writers: dict[int, StepWriter] = {}
        self._logged: set[str] = set()
        self._errors = 0
        self._flushing = False
        self._limit_logged = False
        self._stats_off = False
        #: run once the batch in progress is finished (a signal that landed inside it)
        self.deferred: Optional[Callable[[], None]] = None

    # -- window ---------------------------------------------------------------
    def begin(self) -> bool:
        """Open a ``start()`` window; returns True when calls are checked."""
        self.live = not self.disabled and self.state.selected()
        if not self.carry_batch or not self._windows:
            self._threshold = 1
        self._since = 0  # everything was resolved when the last window closed
        self._windows += 1
        return self.live

    def end(self) -> None:
        """Close the window: stop queueing and resolve everything pending."""
        self.live = False
        self.flush(final=True)

    # -- sink interface (interception.Sink) ------------------------------------
    def next_index(self, api: str) -> int:
        """Call index of ``api`` in the current step."""
        return self.state.next_index(api)

    def on_forward(self, call: Any) -> None:
        """Queue a finished call; resolve the batch when it is due."""
        if not self.live:
            return
        call.step = self.state.step
        self.pending.append(("forward", call))
        self._since += 1
        if self._since >= self._threshold:
            self._threshold = min(self._threshold * 2, self.batch_cap)
            self._since = 0
            self.flush()

    def on_grad_outputs(self, call: Any, grads: list) -> None:
        """Gradients w.r.t. a call's outputs arrived (backward hook); ignored
        once the ``start()`` window is closed."""
        if not self.live or self.state.exhausted:
            return
        call.grad_outputs.extend(grads)
        if getattr(call, "queue_on_inputs", False):
            if not call.backward_queued and not getattr(call, "awaiting", False):
                call.awaiting = True
                self.awaiting.append(call)
            return
        self._queue_backward(call)

    def on_grad_inputs(self, call: Any, grads: list) -> None:
        """Gradients w.r.t. a call's inputs arrived (backward hook); ignored
        once the ``start()`` window is closed."""
        if not self.live or self.state.exhausted:
            return
        call.grad_inputs.extend(grads)
        self._queue_backward(call)

    def _queue_backward(self, call: Any) -> None:
        if not call.backward_queued:
            call.backward_queued = True
            self.pending.append(("backward", call))

    def on_param_grad(self, entry: Any) -> None:
        """A parameter gradient of an L0 Cell arrived (``cells.ParamGradCall``);
        queued once per entry, ignored once the window is closed."""
        if not self.live or self.state.exhausted or entry.queued:
            return
        entry.queued = True
        entry.step = self.state.step
        self.pending.append(("parameters_grad", entry))

    def on_top(self, top: Any) -> None:
        """A call of a model given to ``start()`` at L0 finished
        (``cells.TopCall``): queued, not counted towards the batch; only
        its output is read, to say when the overflow is in its own code."""
        if self.live and not self.state.exhausted:
            self.pending.append(("top", top))

    def before_mutation(self, tensors: list) -> None:
        """A call is about to change ``tensors`` in place: resolve the queue
        first if an entry refers to one of them."""
        if not self.pending or not tensors:
            return
        wanted = {id(t) for t in tensors}
        for kind, call in self.pending:
            parts: tuple
            if kind == "forward" or kind == "top":
                parts = (call.args, call.kwargs, call.output)
            elif kind == "backward":
                parts = (call.grad_outputs, call.grad_inputs)
            else:
                parts = (list(call.grads.values()),)
            if any(id(t) in wanted for t in iter_tensors(list(parts))):
                self.flush()
                return

    def on_error(self, where: str, err: BaseException) -> None:
        """Log an error inside the tool once; too many turn detection off."""
        self._errors += 1
        self._log_once(f"probe_runtime: error {where}: {type(err).__name__}: {err}; training goes on")
        if self._errors >= MAX_ERRORS:
            self.turn_off(f"{self._errors} errors inside the tool")

    # -- resolution -------------------------------------------------------------
    def flush(self, final: bool = False) -> None:
        """Resolve pending entries in queue order; write the overflowing ones.

        Waits for the device once (the first tensor read). Backward entries
        still expecting input gradients wait for a later batch unless
        ``final``. Never raises.
        """
        if final and self.awaiting:
            late = sorted((c for c in self.awaiting if not c.backward_queued), key=lambda c: -c.seq)
            self.awaiting = []
            for call in late:
                call.backward_queued = True
                self.pending.append(("backward", call))
        if self._flushing or not self.pending:
            return
        self._flushing = True
        section = tool_section()
        section.__enter__()
        entries: list = []
        keep: list = []
        resume, counted = 0, False
        try:
            entries, self.pending = self.pending, []
            cache = HostCache()
            for position, (kind, call) in enumerate(entries):
                resume, counted = position, False
                if self.state.exhausted or self.disabled:
                    break
                if kind == "top":
                    self._check_top(call, cache)
                    continue
                if kind == "backward" and call.expects_input_grads and not call.grad_inputs and not final:
                    keep.append((kind, call))
                    continue
                if kind == "forward":
                    inputs: list = [call.args, call.kwargs]
                    sums = getattr(call, "param_sums", None)
                    if sums:  # Parameters: judged on their values when the call was made
                        inputs = [[sums.get(id(a), a) for a in call.args], call.kwargs]
                    outputs: list = [call.output]
                elif kind == "backward":
                    inputs, outputs = list(call.grad_outputs), list(call.grad_inputs)
                else:  # parameters_grad: against the gradients w.r.t. the Cell's outputs
                    inputs = [c.grad_outputs for c in call.owner_calls]
                    outputs = list(call.grads.values())
                try:
                    verdict = judge(inputs, outputs, cache)
                except Exception as err:
                    self.on_error("while checking", err)
                    continue
                origin = verdict.origin and not _inner_origin(kind, call)
                if kind == "forward":
                    call.forward_finite = not verdict.overflow  # its backward entry reuses this (no new read)
                    if origin and getattr(call, "param_probe", None):
                        # a Cell whose own weights held inf/nan at start() carries the overflow
                        origin = all(cache.finite(t) for t in call.param_probe)
                    top = getattr(call, "top", None)
                    if top is not None and verdict.overflow:
                        self._top_overflow(call, top, verdict.origin, cache)
                elif origin:
                    # gradients computed from non-finite forward values carry that overflow
                    origin = _forward_clean(call.owner_calls if kind == "parameters_grad" else (call,), cache)
                if verdict.origin:
                    _mark_parent(kind, call)
                if verdict.overflow and self.state.count_record():
                    counted = True
                    try:
                        self._write(kind, call, origin, cache)
                    except Exception as err:
                        self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
                        break
                    counted = False
            resume = len(entries)
            self.pending, keep = keep + self.pending, []
            if self.state.exhausted:
                self.pending = []
                self.awaiting = []
                self.live = False
                if not self._limit_logged:
                    self._limit_logged = True
                    LOGGER.info("probe_runtime: overflow_nums=%s reached; detection stops", self.state.overflow_nums)
                    self._call_exhausted()
        except Exception as err:  # pragma: no cover - a bug in the tool
            self.on_error("while resolving pending checks", err)
        except BaseException:
            # Ctrl-C (KeyboardInterrupt) or SystemExit inside the batch: the
            # entry being written and those not judged yet go back to the
            # queue, for stop() or the flush at interpreter exit
            if counted:
                self.state.found -= 1
            if not self.disabled:
                self.pending = keep + entries[resume:] + self.pending
            raise
        finally:
            section.__exit__()
            self._flushing = False
            deferred, self.deferred = self.deferred, None
            if deferred is not None:
                deferred()

    # -- L0: overflow in the top Cell's own code ------------------------------------
    def _top_overflow(self, call: Any, top: Any, raw_origin: bool, cache: HostCache) -> None:
        """An L0 forward entry inside a call of the top Cell overflowed. A
        carried one (its inputs were not finite) with no origin before it in
        that call got them from the top Cell's own code when no enclosing
        hooked Cell got finite inputs (else that Cell made them itself) and
        the top Cell's own inputs were finite. Reads only on an overflow."""
        if raw_origin:
            top.child_origin = True
            return
        top.child_overflow = True
        if top.child_origin or top.hinted:
            return
        node = call.parent
        while node is not None:
            if _all_finite((node.args, node.kwargs), cache):
                return  # that Cell's own code made them (it is the origin)
            node = node.parent
        top.hinted = True
        if _all_finite((top.args, top.kwargs), cache):
            self._hint_top(top)

    def _check_top(self, top: Any, cache: HostCache) -> None:
        """After every entry inside the top Cell's call: its output is not
        finite although no hooked Cell in it overflowed."""
        if top.child_overflow or top.child_origin or top.hinted:
            return
        try:
            if not _all_finite(top.output, cache) and _all_finite((top.args, top.kwargs), cache):
                top.hinted = True
                self._hint_top(top)
        except Exception as err:
            self.on_error("while checking the model's own output", err)

    def _hint_top(self, top: Any) -> None:
        message = (f"probe_runtime: overflow inside {top.class_name}.construct itself (not in a sub-Cell): "
                   "use level L1 to see the API")
        if message not in self._logged:
            self._logged.add(message)
            LOGGER.warning(message)

    def turn_off(self, reason: str) -> None:
        """Stop detecting for good (logged once); training goes on."""
        if self.disabled:
            return
        self.disabled = True
        self.live = False
        self.pending = []
        self.awaiting = []
        self._log_once(f"probe_runtime: detection turned off: {reason}")
        self._call_exhausted()

    def _call_exhausted(self) -> None:
        try:
            self.on_exhausted()
        except Exception as err:  # pragma: no cover
            self._log_once(f"probe_runtime: error removing patches: {err}")

    def _log_once(self, message: str) -> None:
        if message not in self._logged:
            self._logged.add(message)
            LOGGER.error(message)

    # -- records -----------------------------------------------------------------
    def writer(self, step: int) -> StepWriter:
        """The writer of ``step`` for this rank."""
        writer = self._writers.get(step)
        if writer is None:
            writer = StepWriter(self.dump_path, step, self.state.rank_dir, task=self.task, level=self.level)
            self._writers[step] = writer
        return writer

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
        return {"Max": None, "Min": None, "Mean": None, "Norm": None}

    def _write(self, kind: str, call: Any, origin: bool, cache: HostCache) -> None:
        arrays: dict = {}
        if kind == "forward":
            name = call.name
            outputs = call.output if isinstance(call.output, (tuple, list)) else (call.output,)
            entry = {
                "input_args": [self._describe(a, f"{name}.input.{i}", cache, arrays) for i, a in enumerate(call.args)],
                "input_kwargs": {k: self._describe(v, f"{name}.input.{k}", cache, arrays) for k, v in call.kwargs.items()},
                "output": [self._describe(o, f"{name}.output.{i}", cache, arrays) for i, o in enumerate(outputs)],
            }
            parameters = getattr(call, "parameters", None)
            if parameters or hasattr(call, "ancestry"):  # an L0 Cell: msprobe writes "parameters": {} too
                entry["parameters"] = {p: self._describe(v, f"{name}.parameters.{p}", cache, arrays)
                                       for p, v in (parameters or {}).items()}
            stack = _stack_lines(call.frames)
        elif kind == "parameters_grad":
            name = call.name
            entry = {p: [self._describe(g, f"{name}.{p}", cache, arrays)] for p, g in call.grads.items()}
            stack = None
        else:
            name = call.backward_name
            entry = {
                "input": [self._describe(g, f"{name}.input.{i}", cache, arrays) for i, g in enumerate(call.grad_outputs)],
                "output": [self._describe(g, f"{name}.output.{i}", cache, arrays) for i, g in enumerate(call.grad_inputs)],
            }
            stack = None
        where = _user_where(call.frames, self.library_roots)
        record = Record(name=name, origin=origin, where=where, entry=entry, stack=stack, arrays=arrays)
        if hasattr(call, "ancestry"):  # an L0 Cell entry: construct.json links up to the top Cell
            record.parent = call.parent_name(kind)
            record.construct = call.ancestry(kind)
        self.writer(call.step).write(record, kind=kind, step=call.step,
                                     rank=self.state.rank)
        LOGGER.warning("probe_runtime: overflow in %s (%s) at %s", name, "origin" if origin else "carried", where)


def _all_finite(obj: Any, cache: HostCache) -> bool:
    """Every floating tensor in ``obj`` is finite (host copies shared through ``cache``)."""
    return all(cache.finite(t) for t in iter_tensors(obj))


def _forward_clean(calls: Any, cache: HostCache) -> bool:
    """The forward calls a backward or ``parameters_grad`` entry is computed
    from had finite inputs and outputs (``forward_finite``, set when their
    forward entry was judged) and, for L0 Cells, finite own Parameters at
    ``start()`` (read only here, on an overflow)."""
    for call in calls:
        if not getattr(call, "forward_finite", True):
            return False
        probe = getattr(call, "param_probe", None)
        if probe and not all(cache.finite(t) for t in probe):
            return False
    return True


def _inner_origin(kind: str, call: Any) -> bool:
    """An L0 Cell entry whose inner Cell already was the origin (same pass)."""
    if kind == "forward":
        return getattr(call, "child_overflow", False)
    if kind == "backward":
        return getattr(call, "child_backward_overflow", False)
    return False


def _mark_parent(kind: str, call: Any) -> None:
    """Tell an L0 Cell entry's parent that the overflow started inside it."""
    parent = getattr(call, "parent", None)
    if parent is None:
        return
    if kind == "forward":
        parent.child_overflow = True
    elif kind == "backward":
        parent.child_backward_overflow = True


def default_library_roots() -> tuple[str, ...]:
    """Folders whose frames are not the user's: this package and MindSpore."""
    roots = [os.path.dirname(os.path.abspath(__file__))]
    try:
        import mindspore

        roots.append(os.path.dirname(os.path.abspath(mindspore.__file__)))
    except Exception:  # pragma: no cover
        pass
    return tuple(roots)
