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
  tensor, the tensor is a Parameter (pending entries may hold views of
  it), or the window is synchronous (a view cannot be told apart cheaply;
  resolving there costs no extra wait), so every entry is judged on the
  values it really saw (the in-place call's own inputs are copied on the
  device before it runs). In an asynchronous window (not CPU) a Parameter
  target costs one wait per such call: at L1 that includes every training
  ``BatchNorm`` (it updates its moving statistics in place). Not covered:
  at L0 the Tensor methods are not wrapped, so an in-place write by the
  model's own code to a tensor a pending Cell entry holds (other than the
  Parameter updates below) is not seen;
* before every optimizer call (``nn.Optimizer``, ``mindspore.mint.optim``)
  and ``Parameter.set_data`` (``interception.OptimizerWatch``): an
  optimizer writes Parameters in place inside compiled code no wrapper sees,
  and pending entries may hold Parameters or views of them (``Tensor.view``
  of an LSTM's weights): resolved first, they are judged and described on
  the values of the call, not on the updated memory;
* at ``stop()``, ``step()`` and interpreter exit.

What is held: references to the tensors of at most ``batch_cap`` calls (and
the gradients of those waiting for a backward pass) until the next of these
points, never copies; host copies live only while one batch is resolved.
Verdicts and statistics therefore describe the values at the call as long
as nothing the tool does not see writes that memory before the next
resolution point (a Parameter found changed so is logged once, and the
entry is judged carried).

Where it came in: the first overflowing entry of a step that is not an
origin gets ``entered`` in overflow.json (:meth:`Monitor._entered`): the
non-finite input no checked call made (the data batch, a tensor made before
``start()``, code not checked; at L0 also a gradient w.r.t. a Cell's
outputs that the loss or other code outside every Cell made) or the
Parameter that already held inf/nan at ``start()``.

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
inf/nan when it was called (probed at ``start()`` and again at each Cell's
next call after an optimizer step or ``Parameter.set_data`` in the window,
read only in that case) or hold it when the entry is checked. Cell forward records also describe those Parameters
(``parameters``) with the values they hold when the entry is resolved,
which is before any ``nn.Optimizer`` step or ``Parameter.set_data`` (see
the resolution points above).

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

from msprobe_lint.report.dumpformat import (ENTERED, KIND, MESSAGE, NAME, NONFINITE, ORIGIN, RANK, SENTINEL,
                                            SENTINEL_NAME, STEP, WHERE)

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
        #: the window runs synchronously (set by the debugger): a host read does not stall a pipeline
        self.synchronous = False
        #: steps in which an overflowing entry was already judged (the first one gets ``entered``)
        self._overflow_steps: set[int] = set()
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
        first when an entry may see that memory: an entry refers to one of
        them, or one is a Parameter (pending entries may hold views of it),
        or the window is synchronous (any pending tensor may be a view of
        one; resolving early costs no extra wait there, only the host reads
        that were due anyway)."""
        if not self.pending or not tensors:
            return
        if self.synchronous or any(_is_parameter(t) for t in tensors):
            self.flush()
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

    def before_update(self) -> None:
        """An optimizer is about to change Parameters in place
        (``interception.OptimizerWatch``): resolve everything pending now,
        so entries holding Parameters or views of them are judged and
        described on the values they saw. Backward entries still waiting
        for input gradients stay queued (gradients are not what an
        optimizer writes)."""
        if self.pending and self.live:
            self.flush()

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
                    if sums:  # Parameters: judged on their values when the call was made and now
                        inputs.append(list(sums.values()))
                        self._check_stale(call, sums, cache)
                    outputs: list = [_judged_outputs(call)]
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
                    if origin and getattr(call, "parameters", None):
                        # a Cell whose own weights held inf/nan when it was called carries the overflow
                        origin = self._own_parameters_finite(call, cache)
                    top = getattr(call, "top", None)
                    if top is not None and verdict.overflow:
                        self._top_overflow(call, top, verdict.origin, cache)
                elif origin:
                    # gradients computed from non-finite forward values carry that overflow
                    origin = _forward_clean(call.owner_calls if kind == "parameters_grad" else (call,), cache)
                if verdict.origin:
                    _mark_parent(kind, call)
                entered = None
                if verdict.overflow and call.step not in self._overflow_steps:
                    self._overflow_steps.add(call.step)
                    if not origin:
                        try:
                            entered = self._entered(kind, call, cache)
                        except Exception as err:  # the record is still written, without it
                            self.on_error("while finding where the overflow came in", err)
                if verdict.overflow and self.state.count_record():
                    counted = True
                    try:
                        self._write(kind, call, origin, cache, entered)
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

    def _check_stale(self, call: Any, sums: dict, cache: HostCache) -> None:
        """Say once when a Parameter was finite when ``call`` used it and is
        not any more before the call was checked: an update the tool did
        not see (not an ``nn.Optimizer``, not an intercepted in-place call,
        e.g. code compiled with ``mindspore.jit``). The entry is then judged
        carried (its dumped input is not finite), never an origin."""
        params = {id(a): a for a in iter_tensors([call.args]) if id(a) in sums}
        for key, probe in sums.items():
            param = params.get(key)
            if param is not None and cache.finite(probe) and not cache.finite(param):
                self._log_once(f"probe_runtime: Parameter {getattr(param, 'name', '?')} was changed by code the "
                               f"tool does not see between {call.name} and its check; that entry's statistics "
                               "describe the changed values (update Parameters through an optimizer or "
                               "Parameter.set_data, which resolve the checks first, or call stop() before)")

    def _own_parameters_finite(self, call: Any, cache: HostCache) -> bool:
        """L0, read only when a Cell's output overflowed from finite inputs:
        its own Parameters were finite when it was called (the probes taken
        at ``start()`` or, after an update in the window, at the call) and
        still are (what its record dumps under ``parameters``). A Parameter
        found finite at the call and not now was changed by code the tool
        does not see (logged once); the entry is then carried, never an
        origin."""
        probes = getattr(call, "param_probe", None) or ()
        if not all(cache.finite(t) for t in probes):
            return False
        for name, param in call.parameters.items():
            if not cache.finite(param):
                if probes:
                    self._log_once(f"probe_runtime: Parameter {getattr(param, 'name', name)} was changed by code "
                                   f"the tool does not see, after its last probe and before {call.name} was "
                                   "checked; that entry's statistics describe the changed values and it is not "
                                   "taken as an origin (update Parameters through an optimizer or "
                                   "Parameter.set_data, which the tool sees, or call stop() before)")
                return False
        return True

    def _entered(self, kind: str, call: Any, cache: HostCache) -> Optional[dict]:
        """Where the first overflow of a step came in, when its first
        overflowing entry is not an origin: the first non-finite input of
        that entry (at L0 of the outermost enclosing Cell that also got it
        on entry) and what it was: a tensor no checked call produced (the
        data batch, a tensor made before ``start()``, code not checked) or
        a Parameter (non-finite at ``start()`` when no backward pass,
        update or in-place write came before its probe). At L0 a Cell whose
        inputs were finite names its own Parameter that held inf/nan at
        ``start()``. Runs once per step, on its first overflow only: the
        reads (the enclosing Cells' inputs, the Parameter probes) share the
        batch's host copies. At L0 a backward or ``parameters_grad`` entry
        names the gradient w.r.t. the outputs that came in from outside
        (:func:`_gradient_entered`). None for L1 ``parameters_grad``
        entries or when nothing is found."""
        cell = hasattr(call, "ancestry")
        unit, outside = ("Cell", "the checked Cells") if cell else ("call", "the checked window")
        node, maker = call, None
        if kind == "forward":
            if cell and not _all_finite((call.args, call.kwargs), cache):
                while node.parent is not None and not _all_finite((node.parent.args, node.parent.kwargs), cache):
                    node = node.parent
                maker = node.parent  # its inputs were finite: its own code made what ``node`` got
            name = node.name
            labelled = _labelled("input_args", node.args) + _labelled("input_kwargs", node.kwargs)
        elif kind == "backward" and not cell:
            name = call.backward_name
            labelled = _labelled("input", call.grad_outputs)
        elif cell and kind in ("backward", "parameters_grad"):
            return _gradient_entered(call.owner_calls if kind == "parameters_grad" else (call,), cache)
        else:
            return None
        sums = getattr(node, "param_sums", None) or {}
        for label, tensor in labelled:
            probe = sums.get(id(tensor))
            if probe is not None:
                bad_then = not cache.finite(probe)
                if not bad_then and cache.finite(tensor):
                    continue
            elif cache.finite(tensor):
                continue
            else:
                bad_then = True
            if _is_parameter(tensor):
                return _parameter_entry(name, label, getattr(tensor, "name", "?"),
                                        bool(getattr(node, "params_at_start", False)) and bad_then)
            if maker is not None:  # L0: made inside an enclosing Cell from finite inputs
                return _own_parameter(maker, cache, f"{label} of {name}")
            return {"entry": name, "input": label, "source": "outside", "parameter": None, "at_start": False,
                    "message": f"non-finite input entered at the first checked {unit}: {label} of {name}, made "
                               f"outside {outside}"}
        if kind == "forward" and cell:  # inputs finite: the Cell's own Parameters, probed at start()
            return _own_parameter(node, cache, None, ancestors=False)
        return None

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

    def note_sentinel(self, found: dict) -> None:
        """Write a sentinel finding (``sentinel.GradSentinel.resolve``) of
        the current step to its ``overflow.json`` as an item of kind
        ``sentinel`` (``name`` ``"sentinel"``, ``origin`` false, ``where``,
        ``nonfinite``: the labels of what held inf/nan, ``message``) and
        log it. It has no dump.json entry and does not count towards
        ``overflow_nums``. A write failure turns detection off (as for a
        record)."""
        labels = found["nonfinite"]
        where = _user_where(found["frames"], self.library_roots)
        shown = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
        message = (f"inf/nan in {shown}, returned by the gradient computation at {where}; sentinel checks name "
                   f"no call: exact {self.level} checks run from the next start() on")
        item = {NAME: SENTINEL_NAME, ORIGIN: False, WHERE: where, KIND: SENTINEL, STEP: self.state.step,
                RANK: self.state.rank, NONFINITE: labels, MESSAGE: message}
        try:
            self.writer(self.state.step).note(item)
        except Exception as err:
            self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
            return
        LOGGER.warning("probe_runtime: sentinel: step %s: %s", self.state.step, message)

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

    def _write(self, kind: str, call: Any, origin: bool, cache: HostCache, entered: Optional[dict] = None) -> None:
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
        extra: dict = {KIND: kind, STEP: call.step, RANK: self.state.rank}
        if entered is not None:
            extra[ENTERED] = entered
        self.writer(call.step).write(record, **extra)
        LOGGER.warning("probe_runtime: overflow in %s (%s) at %s", name, "origin" if origin else "carried", where)


#: API -> how many leading outputs its verdict reads. Some MindSpore CPU
#: kernels return workspace for their backward as extra outputs that they
#: do not (always) write, so those hold whatever memory the pool handed out,
#: inf and nan included (seen with MindSpore 2.10 on CPU, differing from run
#: to run): ``BatchNorm`` in training (``batch_mean``, ``batch_variance``,
#: ``reserve_space_1/2`` after ``y``) and ``LSTM`` (``reserve`` and ``state``
#: after ``output``, ``h_n``, ``c_n``). Only the leading outputs decide the
#: verdict; every output is still dumped, as msprobe does.
JUDGED_OUTPUTS = {"Primitive.BatchNorm": 1, "Primitive.BatchNormExt": 1, "Primitive.SyncBatchNorm": 1,
                  "Primitive.LSTM": 3}


def _judged_outputs(call: Any) -> Any:
    """The outputs a forward entry's verdict reads (see :data:`JUDGED_OUTPUTS`)."""
    count = JUDGED_OUTPUTS.get(getattr(call, "api", ""))
    output = call.output
    if count is not None and isinstance(output, (tuple, list)):
        return list(output[:count])
    return output


_PARAMETER_TYPES: dict[type, bool] = {}


def _is_parameter(obj: Any) -> bool:
    """``obj`` is a ``mindspore.Parameter`` (by class, decided once per type;
    no MindSpore import here)."""
    klass = type(obj)
    known = _PARAMETER_TYPES.get(klass)
    if known is None:
        known = any(k.__name__ == "Parameter" and k.__module__.startswith("mindspore") for k in klass.__mro__)
        _PARAMETER_TYPES[klass] = known
    return known


def _labelled(label: str, obj: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """(dump.json position, tensor) of every tensor in ``obj``, in order:
    ``input_args[0]``, ``input_args[1][0]``, ``input_kwargs.mask``."""
    if is_tensor(obj):
        return [(label, obj)]
    out: list[tuple[str, Any]] = []
    if depth > 4:
        return out
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            out.extend(_labelled(f"{label}[{i}]", item, depth + 1))
    elif isinstance(obj, dict):
        for key, item in obj.items():
            out.extend(_labelled(f"{label}.{key}", item, depth + 1))
    return out


def _own_parameter(cell_call: Any, cache: HostCache, reached: Optional[str], ancestors: bool = True) -> Optional[dict]:
    """L0: the first Parameter of ``cell_call``'s Cell (then of its enclosing
    Cells, with ``ancestors``) that held inf/nan at ``start()`` or, when an
    update in the window came before the call, at the call (its probe was
    taken again then: ``params_at_start`` false), as an ``entered``
    description (``reached``: the input it became, e.g. the
    flattened weights an ``nn.LSTM`` hands its inner Cell); None when they
    were all finite (the Cell's own code then made the value: it is judged
    an origin)."""
    node = cell_call
    while node is not None:
        for param, value in zip(node.parameters.values(), node.param_probe or ()):
            if not cache.finite(value):
                entry = _parameter_entry(node.name, None, getattr(param, "name", "?"),
                                         bool(getattr(node, "params_at_start", True)))
                if reached:
                    entry["message"] += f" (it reached {reached})"
                return entry
        node = node.parent if ancestors else None
    return None


def _gradient_entered(calls: Any, cache: HostCache) -> Optional[dict]:
    """L0: where a non-finite gradient w.r.t. a Cell's outputs came in, for
    a step whose first overflowing entry is a backward or
    ``parameters_grad`` entry fed with it (``calls``: the Cell calls it is
    computed from). The outermost enclosing Cell whose output gradient was
    not finite either is named (its ``input`` in dump.json's backward
    entry): the gradient came from code outside every checked Cell, the
    loss when that Cell's output is the model's output. None when the
    gradients w.r.t. the outputs were finite, or when an enclosing Cell got
    finite ones (its own backward code made the value: it is the origin)."""
    node = next((c for c in calls if not _all_finite(c.grad_outputs, cache)), None)
    if node is None:
        return None
    while node.parent is not None and not _all_finite(node.parent.grad_outputs, cache):
        node = node.parent
    if node.parent is not None:
        return None
    label = next((lab for lab, t in _labelled("input", node.grad_outputs) if not cache.finite(t)), "input")
    name = node.backward_name
    top = getattr(node, "top", None)
    produced = [] if top is None else list(iter_tensors(top.output))
    if top is not None and any(t is o for t in iter_tensors(node.output) for o in produced):
        what = (f"(the gradient w.r.t. the model's output, {top.class_name}), made outside the checked Cells: by "
                "the loss or other code that used the model's output")
    else:
        what = ("(the gradient w.r.t. that Cell's output), made outside the checked Cells: by the loss or other "
                "code after the model, or by the model's own code between its sub-Cells")
    return {"entry": name, "input": label, "source": "outside", "parameter": None, "at_start": False,
            "message": f"non-finite gradient entered at the first checked Cell: {label} of {name} {what}"}


def _parameter_entry(name: str, label: Optional[str], parameter: str, at_start: bool) -> dict:
    """The ``entered`` description of a Parameter that held inf/nan."""
    used = f"{label} of {name}" if label else name
    if at_start:
        message = f"Parameter {parameter} already held inf/nan at start(); first used by {used}"
    else:
        message = (f"Parameter {parameter} held inf/nan when first used after an update in the window, by {used} "
                   "(a backward pass, an optimizer step or an in-place write came before, so it may have been "
                   "finite at start())")
    return {"entry": name, "input": label, "source": "parameter", "parameter": parameter, "at_start": at_start,
            "message": message}


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
