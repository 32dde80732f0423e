"""The checker: the pending-check queue every hook hands its entries to.

Reading a tensor's values waits for the device, so entries are not checked
one by one: :class:`Checker` queues each entry (references to its tensors,
never copies) and resolves the queue in one batch (one wait, then numpy on
the host) at the *resolution points*: every 1st, 3rd, 7th ... call of a
window (the batch doubles up to ``batch_cap``), before an in-place write
that a pending entry may see, before an optimizer updates Parameters, and
at ``stop()``, ``step()`` and interpreter exit. Each entry is judged
(``verdict.judge``), its provenance decided (:mod:`.provenance`) and, when
it overflowed, its record written (:mod:`.records`) before the call that
resolved the batch returns. After ``overflow_nums`` records, or when the
tool itself keeps failing, detection stops and ``on_exhausted`` removes the
patches; training goes on. Why these points, and what they cost:
``docs/runtime-design.md``.

Example::

    checker = Checker(RunState(), dump_path="/abs/dump", library_roots=library_roots())
    checker.begin()                 # a start() window
    checker.on_forward(call)        # from an L1 wrapper or an L0 Cell hook
    checker.end()                   # stop(): everything resolved, records on disk
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Optional

from probe_format.layout import SOURCE_OWN_CONSTRUCT
from probe_format.records import entered_object

from ..hooks.guard import tool_section
from ..state import RunState
from .by_design import ByDesign, Decision, decide, decide_cell, only_negative_infinity, settle_model
from .collective import collective_of, collective_tensors, pass_up, through_collective
from .mixed_precision import cast_entered
from .provenance import (all_finite, backward_maker, enclosing_maker, entered, entry_tensors, forward_clean,
                         inner_origin, mark_parent, masked_call, own_backward_message, own_construct_between_message,
                         own_construct_message, own_parameters_finite, stale_parameters, tied_gradient_nonfinite,
                         top_hint, top_input_overflowed, top_made_gradient, top_output_overflowed, top_overflow,
                         written_nonfinite)
from .records import Recorder
from .verdict import HostCache, Verdict, is_parameter, iter_tensors, judge

LOGGER = logging.getLogger("probe_runtime")
#: errors inside the tool after which detection turns itself off
MAX_ERRORS = 50


class _Batch:
    """The batch being resolved: where to resume if it is interrupted."""

    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.keep: list = []       # backward entries still waiting for their input gradients
        self.resume = 0            # the entry being judged (and those after it) go back on an interrupt
        self.counted = False       # that entry's record was counted and not written yet


class Checker:
    """Pending-check queue, verdicts and records for one debugger.

    Args:
        state: step/rank/overflow_nums bookkeeping.
        dump_path: absolute dump folder.
        task, level, framework: for dump.json's header (``"mindspore"``,
            or ``"mindtorch"`` for PyTorch code on MindSpore).
        on_exhausted: called once detection stops for good (limit reached or
            turned off by errors); removes the patches.
        batch_cap: largest number of calls resolved in one batch.
        library_roots: folders whose frames are not the user's (``where``).
        carry_batch: keep the batch size from one window to the next.

    Attributes:
        live: entries are queued (inside a checked window).
        disabled: detection was turned off for good.
        synchronous: the window runs synchronously (set by the debugger): a
            host read does not stall a pipeline.
        flushing: a batch is being resolved.
        deferred: run once the batch in progress is finished (a signal that
            landed inside it).
        records: writes the records (:class:`~.records.Recorder`).
        on_turned_off: called with (reason, step) when detection is turned
            off (the debugger keeps it in its dump_path marker, for ``probe
            report`` and ``probe run``: ``live_writers.Claim.turned_off``).
    """

    def __init__(self, state: RunState, *, dump_path: str, task: str = "overflow_check", level: str = "L1",
                 on_exhausted: Callable[[], None] = lambda: None, batch_cap: int = 64,
                 library_roots: tuple[str, ...] = (), carry_batch: bool = False,
                 framework: str = "mindspore") -> None:
        self.state = state
        self.on_exhausted = on_exhausted
        self.batch_cap = batch_cap
        self.carry_batch = carry_batch
        self.records = Recorder(state, dump_path=dump_path, task=task, level=level, library_roots=library_roots,
                                on_error=self.on_error, turn_off=self.turn_off, framework=framework)
        self._windows = 0
        self.live = False
        self.disabled = False
        self.pending: list[tuple[str, Any]] = []
        self.awaiting: list[Any] = []  # L0 backward entries waiting for input gradients
        self._threshold = 1
        self._since = 0
        self._logged: set[str] = set()
        self._errors = 0
        self.flushing = False
        self._limit_logged = False
        self.synchronous = False
        #: L1: the window's calls whose -inf output is by design, not recorded yet (:mod:`.by_design`)
        self.by_design = ByDesign()
        #: L0: model and Cell calls holding sub-Cell entries back until their own record is written (``stash``)
        self._stashed: list = []
        #: the window's gradient computation returned a non-finite loss no checked Cell made (L0): no
        #: backward entry of the window is an origin (set by ``windows.controller.Windows.on_forward``)
        self.loss_nonfinite = False
        #: steps in which an overflowing entry was already judged (the first one gets ``entered``)
        self._overflow_steps: set[int] = set()
        self.deferred: Optional[Callable[[], None]] = None
        self.on_turned_off: Optional[Callable[[str, int], None]] = None

    # -- window ---------------------------------------------------------------
    def begin(self) -> bool:
        """Open a ``start()`` window; returns True when calls are checked."""
        self.live = not self.disabled and self.state.selected()
        self.loss_nonfinite = False
        self.by_design.clear()
        if not self.carry_batch or not self._windows:
            self._threshold = 1
        self._since = 0  # everything was resolved when the last window closed
        self._windows += 1
        return self.live

    def end(self) -> None:
        """Close the window: stop queueing and resolve everything pending
        (entries held back for a model call that never returned too)."""
        self.live = False
        self.flush(final=True)
        for top in list(self._stashed):
            self._release_stash(top, HostCache(), _Batch([]), record_top=False)

    # -- what the hooks hand on (l1.calls.Sink, and L0's on_param_grad/on_top) -----
    def next_index(self, api: str) -> int:
        """Call index of ``api`` in the current step."""
        return self.state.next_index(api)

    def collective_index(self, call: Any) -> int:
        """The per-group index of a collective call in the current step
        (``call``: a ``hooks.collectives.CollectiveCall``; Send/Receive are
        counted per pair of ranks)."""
        return self.state.next_collective_index(call.key(self.state.rank))

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
        """A parameter gradient of an L0 Cell arrived (``l0.calls.ParamGradCall``);
        queued once per entry, ignored once the window is closed."""
        if not self.live or self.state.exhausted or entry.queued:
            return
        entry.queued = True
        entry.step = self.state.step
        self.pending.append(("parameters_grad", entry))

    def on_top(self, top: Any) -> None:
        """A call of a model given to ``start()`` at L0 finished
        (``l0.calls.TopCall``): queued, not counted towards the batch; only
        its output is read, to say when the overflow is in its own code."""
        if self.live and not self.state.exhausted:
            top.step = self.state.step
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
        if self.synchronous or any(is_parameter(t) for t in tensors):
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
        (``l1.optimizer.OptimizerWatch``): resolve everything pending now,
        so entries holding Parameters or views of them are judged and
        described on the values they saw. Backward entries still waiting
        for input gradients stay queued (gradients are not what an
        optimizer writes)."""
        if self.pending and self.live:
            self.flush()

    def read_on_host(self, tensors: list) -> None:
        """The user's code reads ``tensors`` on the host (``asnumpy``): a
        deferred maker's -inf among them left the checked calls there
        (:meth:`~.by_design.ByDesign.read_on_host`)."""
        if self.by_design:
            self.by_design.read_on_host(tensors)

    def on_error(self, where: str, err: BaseException) -> None:
        """Log an error inside the tool once; too many turn detection off."""
        self._errors += 1
        self._log_once(f"probe_runtime: error {where}: {type(err).__name__}: {err}; training goes on")
        if self._errors >= MAX_ERRORS:
            self.turn_off(f"{self._errors} errors inside the tool")


    # -- resolution -------------------------------------------------------------
    def flush(self, final: bool = False, reads: Optional[HostCache] = None) -> None:
        """Resolve pending entries in queue order; write the overflowing ones.

        Waits for the device once (the first tensor read). Backward entries
        still expecting input gradients wait for a later batch unless
        ``final``. ``reads``: host reads made just before, with nothing run
        since (the gradient watch's judgement of a computation), used by
        the batch instead of reading those tensors again. Never raises,
        except that a ``KeyboardInterrupt`` or ``SystemExit`` inside the
        batch is raised again after the entries not written yet went back
        to the queue.
        """
        if final and self.awaiting:
            self._queue_awaiting()
        if self.flushing or not self.pending:
            return
        self.flushing = True
        section = tool_section()
        section.__enter__()
        batch = _Batch([])
        try:
            batch.entries, self.pending = self.pending, []
            self._resolve(batch, final, reads)
            batch.resume = len(batch.entries)
            self.pending, batch.keep = batch.keep + self.pending, []
            if self.state.exhausted:
                self._stop_at_limit()
        except Exception as err:  # pragma: no cover - a bug in the tool
            self.on_error("while resolving pending checks", err)
        except BaseException:
            self._requeue_on_interrupt(batch)
            raise
        finally:
            section.__exit__()
            self.flushing = False
            deferred, self.deferred = self.deferred, None
            if deferred is not None:
                deferred()

    def _queue_awaiting(self) -> None:
        """At the end of a window: backward entries that never got input
        gradients (an L0 Cell fed only with data) are judged after the rest,
        latest-started Cell first."""
        late = sorted((c for c in self.awaiting if not c.backward_queued), key=lambda c: -c.seq)
        self.awaiting = []
        for call in late:
            call.backward_queued = True
            self.pending.append(("backward", call))

    def _resolve(self, batch: _Batch, final: bool, reads: Optional[HostCache] = None) -> None:
        """Judge the entries of ``batch`` in order (one ``HostCache``, or
        ``reads``: each tensor is read once); stops when the limit is
        reached or detection is turned off."""
        cache = HostCache() if reads is None else reads
        for position, (kind, call) in enumerate(batch.entries):
            batch.resume, batch.counted = position, False
            if self.state.exhausted or self.disabled:
                break
            if kind == "top":
                if not self._check_top(call, cache, batch):
                    break
                continue
            if kind == "backward" and call.expects_input_grads and not call.grad_inputs and not final:
                batch.keep.append((kind, call))
                continue
            if not self._judge_entry(kind, call, cache, batch):
                break

    def _judge_entry(self, kind: str, call: Any, cache: HostCache, batch: _Batch) -> bool:
        """Judge one entry and write its record when it overflowed; False
        when writing failed (detection is then turned off)."""
        if kind == "forward" and getattr(call, "stash", None) is not None and not call.released:
            # an L0 Cell whose own construct made the inf/nan a sub-Cell got: its record first, then theirs
            call.released = True
            call.own_construct = own_construct_between_message(call)
            found = self.state.found
            if not self._judge_entry(kind, call, cache, batch):
                return False
            if self.state.found == found and not self._write_own(call, cache, batch):
                return False  # it hid the inf/nan again (its output is finite): still where it started
            call.forward_finite = False  # its code made inf/nan: its backward entry carries what that gives
            return self._release_stash(call, cache, batch, record_top=False)
        if kind == "backward" and getattr(call, "own_backward_recorded", False):
            return True  # recorded already, as the Cell whose own code made the gradient (_record_backward_maker)
        collective = collective_of(kind, call)
        if collective is not None and kind == "forward":
            inputs, outputs = collective_tensors(call)
        else:
            inputs, outputs = entry_tensors(kind, call)
        sums = getattr(call, "param_sums", None) if kind == "forward" else None
        if sums:
            for message in stale_parameters(call, sums, cache):
                self._log_once(message)
        try:
            verdict = judge(inputs, outputs, cache)
        except Exception as err:
            self.on_error("while checking", err)
            return True
        carried = False
        cell = hasattr(call, "ancestry")
        if collective is None and (verdict.overflow or cell and getattr(call, "by_design_inside", None)):
            try:  # -inf by design? (L1: an API call; L0: a Cell call, :func:`.by_design.decide_cell`)
                handled, carried, own = self._by_design(kind, call, inputs, outputs, verdict, cache, batch)
            except Exception as err:
                self.on_error("while judging -inf made by design", err)
                handled = None
            if handled is not None:
                return handled
            if own or cell and carried:  # its NaN/+inf is its own, or made from a -inf by design: an
                verdict = replace(verdict, origin=True)  # overflow that started inside the checked calls
        origin = self._origin(kind, call, verdict, cache) and not carried
        if verdict.overflow and kind == "forward" and not cell:  # no +inf value given on purpose (by_design)
            self.by_design.computed(list(iter_tensors(outputs)))
        holder = _holder(call) if kind == "forward" else None
        if holder is not None:  # after the record of the Cell (or model) whose own code made it
            holder.stash.append((kind, call))
            return True
        nested = getattr(call, "nested", None) if kind == "forward" else None
        if nested:
            call.nested = None  # read at most once; not held while the call waits for its backward pass
        if not verdict.overflow:
            return self._judge_masked(call, nested, cache, batch) if nested else True
        # a collective whose local inputs were finite: it received the inf/nan (or its reduction made it)
        received = collective is not None and verdict.origin
        where_in = None
        if call.step not in self._overflow_steps and not origin and not received and hasattr(call, "ancestry") \
                and kind in ("backward", "parameters_grad"):
            maker = top_made_gradient(kind, call, cache)
            if maker is not None:  # the model's own construct asked for an inf/nan gradient: its record first
                self._hint_top(maker)
                self._hold(maker).append((kind, call))
                return True
            if not self._record_backward_maker(kind, call, cache, batch):
                return False
        if call.step not in self._overflow_steps:
            self._overflow_steps.add(call.step)
            if not origin and not received:
                try:
                    where_in = entered(kind, call, cache)
                except Exception as err:  # the record is still written, without it
                    self.on_error("while finding where the overflow came in", err)
        if where_in is None and verdict.origin and not origin:
            where_in = through_collective(kind, call)  # L0: came in through a collective inside the Cell
        if where_in is None and origin and kind == "forward":  # a Cell's mixed precision cast made an input inf?
            where_in = self._cast_entered(call, cache)
        if where_in is None and kind == "forward" and getattr(call, "own_construct", None):  # L0: its own code made it
            where_in = entered_object(call.name, input=None, source=SOURCE_OWN_CONSTRUCT, message=call.own_construct)
        written = written_nonfinite(call, cache) if kind == "forward" else []
        if self.state.count_record():
            batch.counted = True
            try:
                self.records.write(kind, call, origin, cache, where_in, written,
                                   collective=None if collective is None else (collective, verdict.origin))
            except Exception as err:
                self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
                return False
            batch.counted = False
        return True

    def _record_backward_maker(self, kind: str, call: Any, cache: HostCache, batch: _Batch) -> bool:
        """L0, the first overflowing entry of a step is a carried backward
        or ``parameters_grad`` entry: when an enclosing Cell's own code
        made the gradient (:func:`.provenance.backward_maker`), record that
        Cell's backward entry first, as the origin (``own-construct``). Its
        ``output`` is the gradient w.r.t. its inputs when that arrived and
        was not finite, else the gradient it handed on (a Cell fed with
        data gets none). False when writing failed."""
        try:
            found = backward_maker(call.owner_calls if kind == "parameters_grad" else (call,), cache)
        except Exception as err:
            self.on_error("while finding the Cell whose own backward code made the overflow", err)
            return True
        if found is None:
            return True
        maker, handed = found
        entry = maker if maker.grad_inputs and not all_finite(maker.grad_inputs, cache) else \
            replace(maker, grad_inputs=list(handed.grad_outputs))
        maker.own_backward_recorded = True
        self._overflow_steps.add(call.step)
        where_in = entered_object(maker.backward_name, input=None, source=SOURCE_OWN_CONSTRUCT,
                                  message=own_backward_message(maker, handed))
        if self.state.count_record():
            batch.counted = True
            try:
                self.records.write("backward", entry, True, cache, where_in, [])
            except Exception as err:
                self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
                return False
            batch.counted = False
        return not self.state.exhausted

    def _by_design(self, kind: str, call: Any, inputs: list, outputs: list, verdict: Verdict, cache: HostCache,
                   batch: _Batch) -> tuple[Optional[bool], bool, bool]:
        """An entry against the -inf made by design (L1: an API call that
        overflowed, :func:`.by_design.decide`; L0: a Cell call,
        :func:`.by_design.decide_cell`). Returns (handled, carried, own):
        ``handled`` True when the entry needs no record (deferred, or it
        consumed a by-design -inf and stayed finite), False when writing
        failed, None to judge it as usual; ``carried``: it is judged carried
        (a maker was recorded before it as the origin); ``own``: its NaN or
        +inf is its own (``s[i] = inf`` into masked scores): judged as if its
        -inf inputs were finite."""
        if hasattr(call, "ancestry"):
            action, makers = decide_cell(kind, call, inputs, outputs, verdict, cache, self.by_design,
                                         lambda: own_parameters_finite(call, cache)[0])
        else:
            action, makers = decide(kind, call, inputs, outputs, verdict.origin, cache, self.by_design)
        if action is Decision.SKIP:
            self._settle_deferred(call)
            return True, False, False
        if action is Decision.AFTER_MAKERS:
            if not self._record_makers(makers, cache, batch):
                return False, False, False
            return None, bool(makers), False
        return None, False, action is Decision.ORIGIN

    @staticmethod
    def _settle_deferred(call: Any) -> None:
        """A forward entry left unrecorded as by design: its backward entry
        counts it as clean, and its nested calls are let go."""
        call.forward_finite = True
        call.nested = None

    def _record_makers(self, makers: list, cache: HostCache, batch: _Batch) -> bool:
        """Record the deferred makers among ``makers`` (their -inf reached a
        judged result) as forward origins; False when writing failed."""
        for maker in makers:
            if not self.by_design.deferred(maker):
                continue
            external = self.by_design.external(maker)
            self.by_design.recorded(maker)
            if getattr(maker, "regions", None) is not None:  # a mindspore.jit region (l2.jit.RegionMaker)
                self._overflow_steps.add(maker.step)
                if not self.state.exhausted:
                    maker.record()  # replayed now: its kernels are its records
                continue
            where_in = None
            if maker.step not in self._overflow_steps:
                self._overflow_steps.add(maker.step)
                if external:  # it passed on a -inf no checked call made: where that came in
                    where_in = entered("forward", maker, cache)
                elif (cast := self._cast_entered(maker, cache)) is not None:  # a mixed precision cast made it
                    where_in = cast
                elif getattr(maker, "own_construct", None):  # L0: the model's own construct made it (_defer_top)
                    where_in = entered_object(maker.name, input=None, source=SOURCE_OWN_CONSTRUCT,
                                              message=maker.own_construct)
                    if getattr(maker, "is_model", False):
                        self._hint_top(maker)
            if self.state.count_record():
                batch.counted = True
                try:
                    self.records.write("forward", maker, not external, cache, where_in, [])
                except Exception as err:
                    self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
                    return False
                batch.counted = False
            if not self._record_passers(maker, cache, batch):
                return False
        return True

    def _record_passers(self, maker: Any, cache: HostCache, batch: _Batch) -> bool:
        """``maker`` was recorded: its -inf was an overflow, not a mask. It
        and the calls that passed that -inf on (deferred for it, judged
        finite until now) are not clean any more: their backward and
        ``parameters_grad`` entries carry it. At L0 those Cells are recorded
        now, carried, as any Cell passing an overflow on is (a fresh user's
        finding: the Dense after a float16 Cell that overflowed to -inf had
        no record, and its ``parameters_grad`` was a second origin). False
        when writing failed."""
        maker.forward_finite = False
        for passer in self.by_design.passers(maker):
            passer.forward_finite = False
            if not hasattr(passer, "ancestry") or not self.state.count_record():
                continue
            batch.counted = True
            try:
                self.records.write("forward", passer, False, cache, None, written_nonfinite(passer, cache))
            except Exception as err:
                self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
                return False
            batch.counted = False
        return True

    def excused_auxiliary(self, aux: list, labels: list) -> list:
        """The labels among ``labels`` (what a gradient computation
        returned holding inf/nan) that are no overflow: auxiliary outputs
        (``aux``, (label, tensor) pairs) holding a -inf made by design
        beside a finite loss and finite gradients
        (:meth:`.by_design.ByDesign.auxiliary`); the calls made so far are
        judged first (the maker may still be pending)."""
        if not aux or not labels or self.disabled:
            return []
        self.flush()
        if not self.by_design:
            return []
        try:
            with tool_section():
                return self.by_design.auxiliary(aux, labels, HostCache())
        except Exception as err:  # pragma: no cover - a bug in the tool
            self.on_error("while judging a gradient computation's auxiliary outputs", err)
            return []

    def release_by_design(self, unconsumed: bool = False, keep: Optional[Callable[[Any], bool]] = None) -> bool:
        """The window closes and the -inf of deferred makers reached a
        result: a gradient computation's, holding inf/nan no record
        explains (every maker), or no checked call ever took it
        (``unconsumed``: only those makers). They are recorded now, as
        origins, in the order they ran; ``keep``: only the makers it says
        True of. True when one was recorded."""
        makers = self.by_design.unconsumed() if unconsumed else list(self.by_design.makers)
        if keep is not None:
            makers = [m for m in makers if keep(m)]
        if not makers or self.disabled:
            return False
        found = self.state.found
        batch = _Batch([])
        section = tool_section()
        section.__enter__()
        try:
            self._record_makers(makers, HostCache(), batch)
        finally:
            section.__exit__()
        return self.state.found > found

    def _judge_masked(self, call: Any, nested: list, cache: HostCache, batch: _Batch) -> bool:
        """An L1 call whose inputs and result were finite: judge the first
        call made inside it (``nested``) whose result held inf/nan (an
        overflow it masked), if any, as an entry of its own (named when
        recorded, with the next index of its API in the step)."""
        try:
            inner = masked_call(nested, cache)
        except Exception as err:
            self.on_error("while checking the calls made inside a call", err)
            return True
        if inner is None:
            return True
        inner.step = call.step
        inner.index = self.state.next_index(inner.api)
        return self._judge_entry("forward", inner, cache, batch)

    def _origin(self, kind: str, call: Any, verdict: Verdict, cache: HostCache) -> bool:
        """Whether the entry started the overflow (:mod:`.provenance`);
        marks its parent Cell when its own verdict says origin. A
        collective call never is one on its own (:mod:`.collective`)."""
        if collective_of(kind, call) is not None:
            if kind == "forward":
                call.forward_finite = not verdict.overflow
            if verdict.origin:
                mark_parent(kind, call)
                pass_up(kind, call, False, True)
            return False
        origin = verdict.origin and not inner_origin(kind, call)
        if origin and kind == "forward" and getattr(call, "recomputed", False) and call.step in self._overflow_steps:
            # MindSpore ran this code again in the backward pass (Cell.recompute()): its first run in the
            # forward pass was judged before; an origin only when nothing overflowed before it in the step
            origin = False
        if kind == "forward":
            call.forward_finite = not verdict.overflow  # its backward entry reuses this (no new read)
            if origin and getattr(call, "parameters", None):
                # a Cell whose own weights held inf/nan when it was called carries the overflow
                origin, message = own_parameters_finite(call, cache)
                if message:
                    self._log_once(message)
            if verdict.overflow and not verdict.origin and hasattr(call, "ancestry"):
                maker = enclosing_maker(call, cache)  # a Cell whose own construct made it: hold back until its record
                if maker is not None and not maker.released:
                    self._hold(maker)
            top = getattr(call, "top", None)
            if top is not None and verdict.overflow and top_overflow(call, top, verdict.origin, cache):
                self._hint_top(top)
                if top.prefix:  # the model's own record comes first: hold this one back
                    self._hold(top)
        elif origin:
            # gradients computed from non-finite forward values carry that overflow, and so do all of them once
            # the loss itself was not finite (L0: made outside the checked Cells, said by an ``outside`` record)
            origin = not self.loss_nonfinite and \
                forward_clean(call.owner_calls if kind == "parameters_grad" else (call,), cache) and \
                not (kind == "parameters_grad" and tied_gradient_nonfinite(call, cache))
        if verdict.origin:
            mark_parent(kind, call)
            pass_up(kind, call, origin, False)
        return origin

    def _stop_at_limit(self) -> None:
        """``overflow_nums`` records were written: stop queueing, say so once
        and remove the patches."""
        self.pending = []
        self.awaiting = []
        self.live = False
        if not self._limit_logged:
            self._limit_logged = True
            LOGGER.info("probe_runtime: overflow_nums=%s reached; detection stops", self.state.overflow_nums)
            self._call_exhausted()

    def defer_region(self, maker: Any, tensors: list) -> bool:
        """L1: a ``mindspore.jit`` region returned ``tensors`` holding -inf
        only from finite inputs (``l2.jit.RegionMaker``): deferred as a
        mask maker (:mod:`.by_design`), judged by what takes its -inf, as
        a ``masked_fill`` outside the region is. False when the window is
        not checked or no more makers are remembered."""
        if not self.live or self.disabled or self.by_design.full():
            return False
        self.by_design.defer(maker, tensors)
        return True

    def overflow_recorded(self, step: int) -> None:
        """A record of ``step`` was written by another part (the kernel of a
        ``mindspore.jit`` region): later overflowing entries of the step
        carry that overflow on; none is told it came in from outside."""
        self._overflow_steps.add(step)

    def _requeue_on_interrupt(self, batch: _Batch) -> None:
        """Ctrl-C (``KeyboardInterrupt``) or ``SystemExit`` inside the batch:
        the entry being written and those not judged yet go back to the
        queue, for ``stop()`` or the flush at interpreter exit."""
        if batch.counted:
            self.state.found -= 1
        if not self.disabled:
            self.pending = batch.keep + batch.entries[batch.resume:] + self.pending

    # -- L0: an overflow in the top Cell's own code ---------------------------------
    def _check_top(self, top: Any, cache: HostCache, batch: _Batch) -> bool:
        """A model given to ``start()`` returned inf/nan from finite inputs
        and no sub-Cell in it overflowed: its own ``construct`` made it. (A
        model with no hooked sub-Cell that got inf/nan and returned them is
        recorded too, carried: where the overflow came in.)
        Said once on the logger and recorded (``Cell.<Class>.forward.<n>``,
        an origin unless its own Parameters held inf/nan), with the hint
        to use L1 in the record's ``entered``. False when writing failed."""
        if top.stash is not None and not top.released:
            return self._release_stash(top, cache, batch, record_top=True)
        try:
            if top.prefix and top_input_overflowed(top, cache):  # a leaf model that got inf/nan: where it came in
                return self._judge_entry("forward", top.as_cell_call(None), cache, batch)
            skip, note = settle_model(top, cache, self.by_design)  # a sub-Cell's -inf by design: consumed?
            if skip:  # it returns that -inf: its maker is recorded when the window closes, nothing consumed it
                self._alias_top(top)
                return True
            if not top_output_overflowed(top, cache):
                return True
            if top.prefix and self._defer_top(top, cache):
                self._alias_top(top)
                return True
            if all_finite(list(top.params.values()), cache):  # else its own Parameter brought it: no L1 hint
                self._hint_top(top)
        except Exception as err:
            self.on_error("while checking the model's own output", err)
            return True
        if not top.prefix:
            return True
        return self._judge_entry("forward", top.as_cell_call(own_construct_message(top) + (note or "")), cache, batch)

    def _defer_top(self, top: Any, cache: HostCache) -> bool:
        """The model returned -inf only from finite inputs and Parameters,
        made by its own ``construct`` (a class mask added before a
        ``log_softmax``): deferred as a maker by design, as any Cell
        returning -inf only is. It is recorded (its own-construct record)
        when the -inf reaches a judged result (the loss) or when the window
        closes with nothing having consumed it (a forward-only loop); a
        loss the code after the model computed finite consumed it
        (``windows.controller``). A hunt's finding: the model's -inf mask,
        picked out finite by the loss, was an origin in every step, and
        with overflow_nums 1 the real overflow of a later step went
        unchecked. False when it is not such an output (or no maker can be
        remembered any more)."""
        nonfinite = [t for t in iter_tensors(top.output) if not cache.finite(t)]
        if not nonfinite or not all(only_negative_infinity(t, cache) for t in nonfinite):
            return False
        if not all_finite((top.args, top.kwargs), cache) or not all_finite(list(top.params.values()), cache):
            return False
        if self.by_design.full():
            return False
        maker = top.as_cell_call(own_construct_message(top))
        self.by_design.defer(maker, nonfinite)
        if top.grad_mode:
            self.by_design.returned([maker])
        return True

    def _alias_top(self, top: Any) -> None:
        """The model returned a -inf by design: its output as the caller
        got it (``top.hooked``, through the gradient hook: new tensor
        objects of the same values) is that maker's too, so an auxiliary
        output of the gradient computation holding it is known
        (:meth:`excused_auxiliary`)."""
        if top.hooked is not None:
            self.by_design.alias(zip(iter_tensors(top.output), iter_tensors(top.hooked)))

    def _release_stash(self, top: Any, cache: HostCache, batch: _Batch, record_top: bool) -> bool:
        """A sub-Cell got inf/nan the model's own ``construct`` made between
        its sub-Cells: the model's record (the origin, ``entered.source``
        ``own-construct``) is written, then the sub-Cells' entries held back
        since (carried). ``record_top`` False: the model's call never
        returned (its output is unknown): the held entries alone. False
        when writing failed."""
        top.released = True
        held, top.stash = top.stash or [], None
        if top in self._stashed:
            self._stashed.remove(top)
        if record_top and not self._write_own(top.as_cell_call(own_construct_between_message(top)), cache, batch):
            return False
        for kind, call in held:
            if self.state.exhausted or self.disabled:
                break
            if not self._judge_entry(kind, call, cache, batch):
                return False
        return True

    def _hold(self, holder: Any) -> list:
        """The list of entries ``holder`` (an L0 Cell or model call) holds
        back until its own record is written (``stash``), started now if
        it holds none yet."""
        if holder.stash is None:
            holder.stash = []
            self._stashed.append(holder)
        return holder.stash

    def _write_own(self, call: Any, cache: HostCache, batch: _Batch) -> bool:
        """Record ``call`` (an L0 Cell entry, or a model's as one) as the
        origin whose own ``construct`` handed a sub-Cell inf/nan
        (``entered.source`` ``own-construct``, ``call.own_construct`` its
        message), whatever its output holds. False when writing failed."""
        if self.state.exhausted:
            return True
        self._overflow_steps.add(call.step)
        where_in = self._cast_entered(call, cache) or entered_object(
            call.name, input=None, source=SOURCE_OWN_CONSTRUCT, message=call.own_construct)
        if self.state.count_record():
            batch.counted = True
            try:
                self.records.write("forward", call, True, cache, where_in, [])
            except Exception as err:
                self.turn_off(f"cannot write the dump ({type(err).__name__}: {err})")
                return False
            batch.counted = False
        return True

    def _cast_entered(self, call: Any, cache: HostCache) -> Optional[dict]:
        """The ``entered`` object of an origin's forward record whose input
        a Cell's mixed precision cast made inf (:mod:`.mixed_precision`),
        or None; a fault is logged and leaves the record without it."""
        try:
            return cast_entered(call, cache)
        except Exception as err:
            self.on_error("while checking for a mixed precision cast", err)
            return None

    def _hint_top(self, top: Any) -> None:
        message = top_hint(top)
        if message not in self._logged:
            self._logged.add(message)
            LOGGER.warning(message)

    # -- turning off -------------------------------------------------------------------
    def turn_off(self, reason: str) -> None:
        """Stop detecting for good (logged once); training goes on."""
        if self.disabled:
            return
        self.disabled = True
        self.live = False
        self.pending = []
        self.awaiting = []
        self._log_once(f"probe_runtime: detection turned off: {reason}")
        if self.on_turned_off is not None:  # a tester's finding: a full disk turned it off, and the report and
            try:  # probe run said all was clear; the marker keeps the reason (room for it reserved at the claim)
                self.on_turned_off(reason, self.state.step)
            except Exception as err:  # pragma: no cover - Claim.turned_off never raises
                self._log_once(f"probe_runtime: error keeping why detection was turned off: {err}")
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


def _holder(call: Any) -> Any:
    """The L0 call holding ``call``'s forward entry back: the nearest
    enclosing Cell call, else the model given to ``start()``, that holds
    entries (``stash``) until its own record is written; None when none
    does (always at L1)."""
    node = getattr(call, "parent", None)
    while node is not None:
        if node.stash is not None and not node.released:
            return node
        node = node.parent
    top = getattr(call, "top", None)
    if top is not None and top.stash is not None and not top.released:
        return top
    return None
